// The MCP server's resources and prompts: those of the gateway's MCP servers, in Airlock's
// namespace (mcp/content_tools.hpp).
// - resources/list, resources/templates/list, prompts/list: of each configured server whose
//   content tool the caller may invoke (RBAC as for a tool: the `tools` globs, the server's
//   risk), what the server's listing instance lists now; in pages, as tools/list.
// - resources/read, prompts/get: an invocation of the server's content tool, as tools/call is of
//   a tool (RBAC, DLP on the params and on the result, quotas, approvals, the audit record);
//   answered with the server's result once DLP has scanned it, or a JSON-RPC error whose data
//   names the invocation and why ({kind, message, invocationId}).
#include "mcp/content_tools.hpp"
#include "mcp/gateway.hpp"
#include "pipeline/stages/access.hpp"
#include "server/core/first_listings.hpp"
#include "server/invocations/invocation_runner.hpp"
#include "server/mcp_server/mcp_call.hpp"
#include "server/mcp_server/mcp_server.hpp"
#include "server/mcp_server/mcp_tools.hpp"

namespace airlock::server {

namespace rpc = mcp::rpc_error;

namespace {

// The listing's items of every server the caller may read from, in config order. A server
// whose listing fails is left out (the gateway's log says why).
nlohmann::json content_items(const ApiServices& s, const Generation& generation, const pipeline::Caller& caller,
                             const mcp::ContentListing& listing) {
  const auto& config = *generation.config;
  const auto* actor = caller.actor ? &*caller.actor : nullptr;
  const auto* subject = caller.subject ? &*caller.subject : nullptr;
  auto items = nlohmann::json::array();
  for (const auto& server : config.mcp_servers) {
    const std::string tool = server.name + "." + std::string(listing.tool);
    // The content tools come with a server's first listing; not yet listed: nothing to show.
    if (!config.find_tool(tool) || pipeline::may_invoke(config, actor, subject, tool, caller.scope).refusal) continue;
    auto listed = s.gateway->list_content(server.name, listing);
    if (!listed) continue;
    for (auto& item : mcp::namespaced_items(server.name, listing, *listed)) items.push_back(std::move(item));
  }
  return items;
}

// The JSON-RPC error of a read that did not give a result.
struct ContentRefusal {
  int code;
  std::string kind, message;
};

ContentRefusal refusal_of(const pipeline::Invocation& inv, bool resource) {
  if (inv.suspended)
    return {rpc::internal_error, inv.suspended->stage == "approval" ? "pending_approval" : "suspended",
            "invocation " + inv.id + " is waiting: " + inv.suspended->reason + " (poll GET /v1/invocations/" + inv.id +
                "?wait=30s for its outcome)"};
  const std::string kind = inv.error ? std::string(inv.error->kind_name()) : "internal";
  std::string message = inv.error ? inv.error->message : "the invocation gave no result";
  if (kind == "tool_error" && inv.output && inv.output->is_object()) {  // the server refused (an unknown resource or prompt)
    const auto content = inv.output->value("content", nlohmann::json::array());
    if (content.is_array() && !content.empty() && content[0].is_object()) message = content[0].value("text", message);
    return {resource ? rpc::resource_not_found : rpc::invalid_params, kind, message};
  }
  if (kind == "invalid_input" || kind == "unknown_tool") return {rpc::invalid_params, kind, message};
  return {rpc::internal_error, kind, message};
}

}  // namespace

void McpServer::list_content(Call& call) const {
  const auto* listing = mcp::content_listing(call.message.method);
  const auto cursor = cursor_offset(call);
  if (!cursor) return;
  if (!s_.gateway) return call.answer({{std::string(listing->items), nlohmann::json::array()}});
  // Listing may start a server: on a worker, in the caller's lane, after the first listings.
  auto list = [s = s_, slot = s_.generation, pages = pages_, copy = Call(call), listing, offset = *cursor] {
    const auto generation = slot->load();
    copy.answer(pages.page(content_items(s, *generation, copy.caller, *listing), std::string(listing->items), offset,
                           generation->config->server.mcp.tools_page_size));
  };
  auto queue = [executor = s_.executor, lane = call.principal, list = std::move(list)]() mutable {
    executor->submit_to_lane(lane, 1, std::move(list));
  };
  if (!s_.first_listings) return queue();
  s_.first_listings->when_done(call.generation->config->server.mcp.first_listing_wait, std::move(queue));
}

void McpServer::read_content(Call& call) const {
  const bool resource = call.message.method == "resources/read";
  const auto& params = call.message.params;
  const char* key = resource ? "uri" : "name";
  if (!params.is_object() || !params.contains(key) || !params[key].is_string())
    return call.fail(200, rpc::invalid_params, call.message.method + " needs params." + key + ", a string");
  const std::string& named = params[key].get_ref<const std::string&>();
  auto split = resource ? mcp::split_namespaced_uri(named) : mcp::split_prompt_name(named);
  if (!split)
    return call.fail(200, resource ? rpc::resource_not_found : rpc::invalid_params,
                     resource ? "no resource " + named + ": Airlock's resources are airlock-mcp://<server>/<uri>"
                              : "no prompt " + named + ": Airlock's prompts are <server>.<name>");
  const std::string server = split->first, own = split->second;  // named: a lambda captures `server`
  // The content tool's arguments are the method's params, with the server's own uri or name.
  nlohmann::json arguments = {{key, own}};
  if (!resource && params.contains("arguments")) arguments["arguments"] = params["arguments"];
  const std::string tool = server + "." + std::string(resource ? mcp::kReadResourceTool : mcp::kGetPromptTool);
  InvocationRequest request{tool, call.ctx.headers, call.ctx.client_certificate,
                            nlohmann::json{{"arguments", std::move(arguments)}}.dump(), call.ctx.peer,
                            std::make_shared<pipeline::InvocationControl>()};
  auto answer = [copy = Call(call), server, resource](const Generation&, const pipeline::Invocation& inv) {
    if (!inv.error && !inv.suspended && inv.output && inv.output->is_object()) {
      auto result = resource ? mcp::namespaced_read_result(server, *inv.output) : *inv.output;
      result["_meta"] = {{kInvocationIdMeta, inv.id}};  // the server's own _meta (any type) is not passed on
      return copy.answer(std::move(result));
    }
    const auto refusal = refusal_of(inv, resource);
    copy.fail(refusal.code, refusal.message,
              {{"kind", refusal.kind}, {"message", refusal.message}, {"invocationId", inv.id}});
  };
  auto queue_full = [copy = Call(call)] {
    copy.fail(rpc::internal_error, "too many invocations are queued; retry later",
              {{"kind", "queue_full"}, {"message", "too many invocations are queued; retry later"}});
  };
  const auto rejected = run_invocation(s_, std::move(request), std::move(answer), queue_full);
  if (rejected == Rejection::draining)
    return call.fail(rpc::internal_error, "the server is shutting down",
                     {{"kind", "draining"}, {"message", "the server is shutting down"}});
  if (rejected == Rejection::queue_full) queue_full();
}

}  // namespace airlock::server
