#include "mcp/listed_tool.hpp"

#include "common/digest.hpp"

namespace airlock::mcp {

Result<std::vector<ListedTool>> parse_tools_list(const nlohmann::json& result) {
  auto bad = [](const std::string& why) { return Error::make("tool_server_failed", "tools/list: " + why); };
  if (!result.is_object()) return bad("the result is not an object");
  auto tools = result.find("tools");
  if (tools == result.end() || !tools->is_array()) return bad("the result has no \"tools\" array");
  std::vector<ListedTool> listed;
  for (std::size_t i = 0; i < tools->size(); ++i) {
    const auto& t = (*tools)[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) return bad(at + " is not an object");
    if (!t.contains("name") || !t["name"].is_string()) return bad(at + " has no string \"name\"");
    if (!t.contains("inputSchema") || !t["inputSchema"].is_object())
      return bad(at + " (" + t["name"].get<std::string>() + ") has no object \"inputSchema\"");
    ListedTool tool;
    tool.name = t["name"].get<std::string>();
    if (auto title = t.find("title"); title != t.end() && title->is_string()) tool.title = *title;
    if (auto d = t.find("description"); d != t.end() && d->is_string()) tool.description = *d;
    tool.input_schema = t["inputSchema"];
    if (auto o = t.find("outputSchema"); o != t.end()) {
      if (!o->is_object()) return bad(at + " (" + tool.name + "): \"outputSchema\" is not an object");
      tool.output_schema = *o;
    }
    if (auto a = t.find("annotations"); a != t.end() && a->is_object()) tool.annotations = *a;
    listed.push_back(std::move(tool));
  }
  return listed;
}

nlohmann::json pinned_json(const ListedTool& tool) {
  return {{"name", tool.name},
          {"description", tool.description},
          {"inputSchema", tool.input_schema},
          {"outputSchema", tool.output_schema ? *tool.output_schema : nlohmann::json()}};
}

std::string pin_sha256(const ListedTool& tool) {
  return sha256_hex(pinned_json(tool).dump());  // nlohmann's objects are key-sorted: dump() is canonical
}

}  // namespace airlock::mcp
