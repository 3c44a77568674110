// A gateway server's resources and prompts as Airlock passes them through (docs/mcp-gateway.md,
// "Resources and prompts"). Each server gets two content tools beside the tools it lists:
//   <server>._read_resource  arguments: resources/read's params  {uri}
//   <server>._get_prompt     arguments: prompts/get's params     {name, arguments?}
// Reading a resource or getting a prompt is an invocation of one of them, so RBAC (the `tools`
// globs, the server's risk), DLP, quotas, approvals and the audit log hold for it as for any
// tool call, and the HTTP API reaches them as POST /v1/tools/<server>._read_resource/invoke.
// Listings name each item in Airlock's namespace, as tools are: a resource's uri becomes
// "airlock-mcp://<server>/<uri as the server gave it>", a prompt's name "<server>.<name>".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/config.hpp"

namespace airlock::mcp {

inline constexpr std::string_view kReadResourceTool = "_read_resource";
inline constexpr std::string_view kGetPromptTool = "_get_prompt";
inline constexpr std::string_view kResourceUriScheme = "airlock-mcp://";

// The two content tools of `server` (at its risk; not pinned: Airlock defines them).
std::vector<policy::ToolConfig> content_tools(const policy::McpServerConfig& server);
// A name a server's own tool may not have (it would shadow a content tool).
bool reserved_tool_name(std::string_view remote_name);

std::string namespaced_uri(const std::string& server, const std::string& uri);
// (server, the server's own uri) of "airlock-mcp://<server>/<uri>"; nullopt for another uri.
std::optional<std::pair<std::string, std::string>> split_namespaced_uri(std::string_view uri);
// (server, the server's own name) of "<server>.<name>"; nullopt without a '.'.
std::optional<std::pair<std::string, std::string>> split_prompt_name(std::string_view name);

// What each listing method returns: its result's array ("resources", "resourceTemplates",
// "prompts"), and the content tool that reads what it lists.
struct ContentListing {
  std::string_view method;
  std::string_view items;
  std::string_view capability;  // the server's initialize capability that offers it
  std::string_view tool;        // kReadResourceTool or kGetPromptTool
};
// resources/list, resources/templates/list, prompts/list; nullptr for another method.
const ContentListing* content_listing(std::string_view method);

// A server's listed items in Airlock's namespace (uri, uriTemplate, name rewritten); an item
// without the string its kind needs is left out (the server is not trusted).
nlohmann::json namespaced_items(const std::string& server, const ContentListing& listing,
                                const nlohmann::json& items);
// A resources/read result with each content's uri in Airlock's namespace.
nlohmann::json namespaced_read_result(const std::string& server, nlohmann::json result);

}  // namespace airlock::mcp
