#include "mcp/content_tools.hpp"

#include <array>
#include <stdexcept>

#include "mcp/listed_schema.hpp"

namespace airlock::mcp {
namespace {

constexpr std::array<ContentListing, 3> kListings = {{
    {"resources/list", "resources", "resources", kReadResourceTool},
    {"resources/templates/list", "resourceTemplates", "resources", kReadResourceTool},
    {"prompts/list", "prompts", "prompts", kGetPromptTool},
}};

// The schemas bound what a caller may send through to the server: a uri of at most 8 KiB; a
// prompt's name and its arguments, strings (prompts/get's own rule).
const nlohmann::json& read_resource_schema() {
  static const nlohmann::json schema = nlohmann::json::parse(R"({
    "type": "object",
    "properties": {"uri": {"type": "string", "minLength": 1, "maxLength": 8192}},
    "required": ["uri"],
    "additionalProperties": false})");
  return schema;
}

const nlohmann::json& get_prompt_schema() {
  static const nlohmann::json schema = nlohmann::json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 256},
      "arguments": {"type": "object", "additionalProperties": {"type": "string"}}},
    "required": ["name"],
    "additionalProperties": false})");
  return schema;
}

policy::ToolConfig content_tool(const policy::McpServerConfig& server, std::string_view suffix,
                                const char* method, const nlohmann::json& schema, std::string description) {
  policy::ToolConfig t;
  t.name = server.name + "." + std::string(suffix);
  t.description = std::move(description);
  t.risk = server.risk;
  t.input_schema = schema;
  auto compiled = compile_listed_schema(schema);
  if (!compiled) throw std::logic_error("content tool schema: " + compiled.error().message);
  t.input_check = *compiled;
  t.mcp = policy::McpToolSource{server.name, "", "", method};
  t.where = server.where;
  return t;
}

// "<server>.<name>" for a listed item's name, when it has one.
void prefix_name(const std::string& server, nlohmann::json& item) {
  if (auto n = item.find("name"); n != item.end() && n->is_string()) *n = server + "." + n->get<std::string>();
}

}  // namespace

std::vector<policy::ToolConfig> content_tools(const policy::McpServerConfig& server) {
  return {content_tool(server, kReadResourceTool, "resources/read", read_resource_schema(),
                       "Reads a resource of MCP server " + server.name + " (resources/read)"),
          content_tool(server, kGetPromptTool, "prompts/get", get_prompt_schema(),
                       "Gets a prompt of MCP server " + server.name + " (prompts/get)")};
}

bool reserved_tool_name(std::string_view remote_name) {
  return remote_name == kReadResourceTool || remote_name == kGetPromptTool;
}

std::string namespaced_uri(const std::string& server, const std::string& uri) {
  return std::string(kResourceUriScheme) + server + "/" + uri;
}

std::optional<std::pair<std::string, std::string>> split_namespaced_uri(std::string_view uri) {
  if (!uri.starts_with(kResourceUriScheme)) return std::nullopt;
  uri.remove_prefix(kResourceUriScheme.size());
  const auto slash = uri.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == uri.size()) return std::nullopt;
  return std::pair{std::string(uri.substr(0, slash)), std::string(uri.substr(slash + 1))};
}

std::optional<std::pair<std::string, std::string>> split_prompt_name(std::string_view name) {
  const auto dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return std::nullopt;
  return std::pair{std::string(name.substr(0, dot)), std::string(name.substr(dot + 1))};
}

const ContentListing* content_listing(std::string_view method) {
  for (const auto& l : kListings)
    if (l.method == method) return &l;
  return nullptr;
}

nlohmann::json namespaced_items(const std::string& server, const ContentListing& listing,
                                const nlohmann::json& items) {
  auto out = nlohmann::json::array();
  if (!items.is_array()) return out;
  // The field that routes a read back to this server must be there, a string.
  const char* key = listing.items == "resources" ? "uri" : listing.items == "resourceTemplates" ? "uriTemplate" : "name";
  for (const auto& item : items) {
    if (!item.is_object()) continue;
    auto routed = item.find(key);
    if (routed == item.end() || !routed->is_string()) continue;
    nlohmann::json copy = item;
    if (listing.items != "prompts") copy[key] = namespaced_uri(server, routed->get<std::string>());
    prefix_name(server, copy);
    out.push_back(std::move(copy));
  }
  return out;
}

nlohmann::json namespaced_read_result(const std::string& server, nlohmann::json result) {
  if (auto contents = result.find("contents"); contents != result.end() && contents->is_array())
    for (auto& c : *contents)
      if (c.is_object())
        if (auto uri = c.find("uri"); uri != c.end() && uri->is_string())
          *uri = namespaced_uri(server, uri->get<std::string>());
  return result;
}

}  // namespace airlock::mcp
