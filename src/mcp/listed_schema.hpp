// A schema an MCP server lists for one of its tools, bounded and compiled. The server is not
// trusted: its schema is measured (depth, nodes, bytes) without recursion before anything
// walks it recursively (hashing, the meta-schema check, valijson), then compiled with the
// configuration's JSON Schema compiler, whose every refusal disables the tool.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.hpp"
#include "policy/json_schema.hpp"

namespace airlock::mcp {

inline constexpr std::size_t kMaxListedSchemaDepth = 32;  // arrays and objects inside each other
inline constexpr std::size_t kMaxListedSchemaNodes = 10'000;     // values in all
inline constexpr std::size_t kMaxListedSchemaBytes = 64 * 1024;  // as compact JSON

// Whether `schema` is within the bounds; the error says which bound it passes. Iterative.
Status check_schema_bounds(const nlohmann::json& schema);

// The compiled schema, or an error naming the first problem (and how many more there are).
Result<std::shared_ptr<const policy::JsonSchema>> compile_listed_schema(
    const nlohmann::json& schema);

}  // namespace airlock::mcp
