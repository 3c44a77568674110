// Inside the policy library: the pieces of policy/json_schema.cpp that are not its interface.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "policy/json_schema.hpp"

namespace airlock::policy::detail {

// Deeper schemas are refused: everything that reads a schema recurses once per level.
inline constexpr std::size_t kMaxSchemaDepth = 64;

// Calls `fn(node, pointer)` for `schema` and every schema inside it, children first: only
// values in schema positions (properties, items, allOf, not, ...; never enum, const, default,
// examples). `fn` may change the node it is given but not its children.
void for_each_schema(nlohmann::json& schema, const std::string& pointer,
                     const std::function<void(nlohmann::json&, const std::string&)>& fn);

// A token of an RFC 6901 pointer, escaped ('~' -> "~0", '/' -> "~1").
std::string escape_pointer_token(const std::string& token);

// valijson's context ("<root>", "[name]", "[0]") as an RFC 6901 pointer ("" for the root).
std::string context_pointer(const std::vector<std::string>& context);

// What compile() checks before valijson sees the schema, every problem in the list.
std::vector<SchemaProblem> check_against_meta_schema(const nlohmann::json& schema);
std::vector<SchemaProblem> check_refs(const nlohmann::json& schema);
std::vector<SchemaProblem> check_ref_cycles(const nlohmann::json& schema);
std::vector<SchemaProblem> check_patterns(const nlohmann::json& schema);

// The YAML node that `pointer` names inside `schema` (the node the JSON was read from), or
// the deepest node on the way that exists: where to point the user at.
YAML::Mark mark_at(const YAML::Node& schema, const std::string& pointer);

}  // namespace airlock::policy::detail
