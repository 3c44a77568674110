// A tool as an MCP server lists it (tools/list), and the hash it is pinned by.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace airlock::mcp {

struct ListedTool {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema = nlohmann::json::object();
  std::optional<nlohmann::json> output_schema;
  nlohmann::json annotations = nlohmann::json::object();  // as the server gave them (hints only)
};

// The tools of one tools/list result page ({"tools": [...], "nextCursor"?}). A tool without a
// string name or an object inputSchema makes the whole page an error (the server is broken
// or hostile; nothing of it is trusted).
Result<std::vector<ListedTool>> parse_tools_list(const nlohmann::json& result);

// What is pinned: {name, description, inputSchema, outputSchema} (outputSchema null when
// none). Title and annotations are not pinned.
nlohmann::json pinned_json(const ListedTool& tool);

// The pin: SHA-256 (hex) of pinned_json's canonical JSON (keys sorted, no spaces).
std::string pin_sha256(const ListedTool& tool);

}  // namespace airlock::mcp
