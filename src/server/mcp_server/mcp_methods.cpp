// The MCP server's requests: ping, server/discover, tools/list, tools/call, logging/setLevel,
// subscriptions/listen (tasks/*: mcp_task_methods.cpp; resources and
// prompts: mcp_content.cpp).
#include "mcp/content_tools.hpp"
#include "pipeline/stages/access.hpp"
#include "server/core/first_listings.hpp"
#include "server/invocations/invocation_runner.hpp"
#include "server/core/invocation_response.hpp"
#include "server/mcp_server/mcp_approval_wait.hpp"
#include "server/mcp_server/mcp_call.hpp"
#include "server/mcp_server/mcp_protocol.hpp"
#include "server/mcp_server/mcp_server.hpp"
#include "server/mcp_server/mcp_session_tools.hpp"
#include "server/sessions/session_service.hpp"
#include "server/mcp_server/mcp_tools.hpp"

namespace airlock::server {

namespace rpc = mcp::rpc_error;
namespace protocol = mcp_protocol;

namespace {

// tools/list and server/discover answers depend on who asks: cached by the client alone.
void cache_privately(nlohmann::json& result) {
  result["ttlMs"] = 0;
  result["cacheScope"] = "private";
}

// The configured tools the caller may invoke under `generation`, then the session tools when
// this daemon runs sessions (mcp_session_tools.hpp).
nlohmann::json all_tools(const Generation& generation, const pipeline::Caller& caller, bool sessions) {
  const auto& config = *generation.config;
  const auto* actor = caller.actor ? &*caller.actor : nullptr;
  const auto* subject = caller.subject ? &*caller.subject : nullptr;
  auto tools = nlohmann::json::array();
  for (const auto& t : config.tools)
    if (!(t.mcp && t.mcp->is_content()) &&  // resources/list and prompts/list show what they read
        !pipeline::may_invoke(config, actor, subject, t.name, caller.scope).refusal)
      tools.push_back(mcp_tool_entry(t));
  if (sessions)
    for (auto& entry : session_tool_entries(config, caller)) tools.push_back(std::move(entry));
  return tools;
}

// Where a tools/list answer names the MCP servers whose tools it lacks: those still pending
// after the first-listing wait, and those whose first listing failed (and why).
constexpr const char* kMcpServersMeta = "airlock.dev/mcpServers";

void name_missing_servers(nlohmann::json& result, const FirstListings* listings) {
  if (!listings) return;
  const auto report = listings->report();
  if (report.pending.empty() && report.failed.empty()) return;
  result["_meta"][kMcpServersMeta] = {{"pending", report.pending}, {"failed", failed_servers(report)}};
}

nlohmann::json discover() {
  // 2026-07-28 has tasks as an extension, not a capability of the core protocol.
  auto capabilities = mcp_capabilities();
  capabilities.erase("tasks");
  capabilities["extensions"][kTasksExtension] = nlohmann::json::object();
  nlohmann::json result = {{"supportedVersions", protocol::supported_revisions()},
                           {"capabilities", std::move(capabilities)},
                           {"serverInfo", mcp_server_info()}};
  cache_privately(result);
  return result;
}

// Whether a call of tool `name` may be a task (2026-07-28: the server decides).
bool may_be_task(const Generation& generation, const std::string& name) {
  const auto* tool = generation.config->find_tool(name);
  return tool && supports_tasks(*tool);
}

// Progress of the call's pipeline, as notifications/progress with the client's token.
std::function<void(const pipeline::Progress&)> progress_to(McpNotify notify, nlohmann::json token) {
  return [notify = std::move(notify), token = std::move(token)](const pipeline::Progress& p) {
    nlohmann::json params = {{"progressToken", token}, {"progress", p.progress}};
    if (p.total) params["total"] = *p.total;
    if (!p.message.empty()) params["message"] = p.message;
    notify(mcp::make_notification("notifications/progress", std::move(params)));
  };
}

}  // namespace

void McpServer::dispatch(Call& call) const {
  const std::string& method = call.message.method;
  if (method == "ping" || method == "logging/setLevel") return call.answer(nlohmann::json::object());
  if (method == "tools/list") return list_tools(call);
  if (method == "tools/call") return call_tool(call);
  if (mcp::content_listing(method)) return list_content(call);
  if (method == "resources/read" || method == "prompts/get") return read_content(call);
  if (method == "tasks/get") return task_get(call);
  if (method == "tasks/cancel") return task_cancel(call);
  // 2026-07-28's extension has tasks/update instead of tasks/result and tasks/list.
  if (method == "tasks/update" && call.stateless) return task_update(call);
  if (method == "tasks/result" && !call.stateless) return task_result(call);
  if (method == "tasks/list" && !call.stateless) return task_list(call);
  if (method == "server/discover" && call.stateless) return call.answer(discover());
  if (method == "subscriptions/listen" && call.stateless) return listen(call);
  call.fail(200, rpc::method_not_found, "Method not found: " + method);
}

// A page of what the caller may call, once every MCP server configured at start has been
// listed or has failed (at most server.mcp.firstListingWait): a client connected at start
// gets the gateway's tools in its first listing. Answered under the generation current then.
void McpServer::list_tools(Call& call) const {
  const auto offset = cursor_offset(call);
  if (!offset) return;
  // Copies only: the wait may outlast this server's caller, not the daemon's services.
  auto answer = [slot = s_.generation, listings = s_.first_listings, with_sessions = s_.sessions != nullptr, pages = pages_,
                 copy = Call(call), offset = *offset] {
    const auto generation = slot->load();
    auto result = pages.page(all_tools(*generation, copy.caller, with_sessions), "tools", offset,
                             generation->config->server.mcp.tools_page_size);
    name_missing_servers(result, listings);
    if (copy.stateless) cache_privately(result);
    copy.answer(std::move(result));
  };
  if (!s_.first_listings) return answer();
  s_.first_listings->when_done(call.generation->config->server.mcp.first_listing_wait, std::move(answer));
}

std::optional<std::size_t> McpServer::cursor_offset(Call& call) const {
  const auto& params = call.message.params;
  if (!params.is_object() || !params.contains("cursor") || params["cursor"].is_null()) return 0;
  const auto& cursor = params["cursor"];
  auto read = cursor.is_string() ? pages_.offset_of(cursor.get<std::string>()) : std::nullopt;
  if (!read) call.fail(200, rpc::invalid_params, call.message.method + ": the cursor is not one this server gave (nextCursor)");
  return read;
}

// subscriptions/listen: the request's stream stays open; it is acknowledged with the filter
// honoured (toolsListChanged: resources and prompts send no list_changed; taskIds: the tasks
// extension's, those of the caller's tasks still under way), then carries each
// notifications/tools/list_changed, and each notifications/tasks of a task it named, stamped
// with the subscription's id (the request's), and ends with an empty result when the daemon
// stops, or when the client leaves or cancels it.
void McpServer::listen(Call& call) const {
  if (call.channel.empty()) return call.fail(400, rpc::invalid_request, "subscriptions/listen needs a stream to answer on");
  const auto& params = call.message.params;
  const auto filter = params.find("notifications");
  if (filter == params.end() || !filter->is_object())
    return call.fail(200, rpc::invalid_params, "subscriptions/listen needs params.notifications, an object");
  nlohmann::json honored = nlohmann::json::object();
  const bool tools = filter->contains("toolsListChanged") && (*filter)["toolsListChanged"] == true;
  if (tools) honored["toolsListChanged"] = true;
  const nlohmann::json id = call.message.id;
  const std::string key = McpCallsInFlight::key(call.channel, id.dump());
  const nlohmann::json stamp = {{protocol::kSubscriptionIdMeta, id}};
  auto send = [notify = call.notify, stamp, tools](const nlohmann::json& m) {
    if (m.is_null()) return notify(m);  // keep-alive
    // list_changed goes to every channel; a task's notification only to those that named it.
    if (!tools && m.value("method", "") == "notifications/tools/list_changed") return;
    auto stamped = m;
    stamped["params"]["_meta"] = stamp;
    notify(stamped);
  };
  auto end = [copy = Call(call), stamp] { copy.answer({{"_meta", stamp}}); };
  if (!listeners_->add(key, {"", std::move(send), std::move(end)}))
    return call.fail(503, rpc::invalid_request, "too many notification streams are open; retry later");
  if (const auto ids = filter->find("taskIds"); ids != filter->end() && ids->is_array())
    honored["taskIds"] = listen_for_tasks(call, *ids, key);
  call.notify(mcp::make_notification("notifications/subscriptions/acknowledged",
                                     {{"notifications", honored}, {"_meta", stamp}}));
}

namespace {

// The body POST /v1/tools/{name}/invoke would get: the arguments, and the agent's reason for
// the call when params._meta carries one as "airlock/reason" (MCP has no field of its own for
// it; check_input refuses one that is not a string).
std::string invoke_body(const nlohmann::json& params) {
  nlohmann::json body{{"arguments", params.value("arguments", nlohmann::json::object())}};
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object())
    if (const auto reason = meta->find(kReasonMetaKey); reason != meta->end()) body["reason"] = *reason;
  return body.dump();
}

}  // namespace

// A session tool, on a task of the session service's (it blocks on the session's sandbox).
void McpServer::call_session_tool(Call& call) const {
  const auto& params = call.message.params;
  SessionToolCall tool{s_, call.generation, call.caller, &sessions_, call.stateless ? "" : session_id(call),
                       params["name"].get<std::string>(), params.value("arguments", nlohmann::json::object())};
  s_.sessions->spawn([tool = std::move(tool), copy = Call(call)] { copy.answer(server::call_session_tool(tool)); });
}

void McpServer::call_tool(Call& call) const {
  const auto& params = call.message.params;
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
    return call.fail(200, rpc::invalid_params, "tools/call needs params.name, a string");
  const std::string& name = params["name"].get_ref<const std::string&>();
  if (s_.sessions && is_session_tool(name) && !call.generation->config->find_tool(name)) return call_session_tool(call);
  if (call.stateless && params.contains("requestState")) return resume_waiting_call(call);
  InvocationRequest request{params["name"].get<std::string>(), call.ctx.headers, call.ctx.client_certificate,
                            invoke_body(params), call.ctx.peer, std::make_shared<pipeline::InvocationControl>()};
  if (call.stateless ? declares_tasks_extension(params) && may_be_task(*call.generation, name) : params.contains("task"))
    return call_tool_as_task(call, std::move(request));
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object() && meta->contains("progressToken"))
    request.control->progress = progress_to(call.notify, (*meta)["progressToken"]);
  const std::string key = McpCallsInFlight::key(call.channel, call.message.id.dump());
  if (!call.channel.empty()) calls_->add(key, request.control);
  // The worker answers after this returns: it holds copies, never `call` itself.
  auto answer = [calls = calls_, key, urls = call.stateless && call.elicits_urls, copy = Call(call)](
                    const Generation& generation, const pipeline::Invocation& inv) {
    calls->remove(key);
    if (copy.stateless && inv.suspended && inv.suspended->stage == "approval") {
      // 2026-07-28 has no tasks: the client retries with the requestState (mcp_approval_wait.hpp).
      const auto stored = to_response(inv);
      const std::string approval = stored.value("approval", nlohmann::json::object()).value("id", "");
      const auto url = urls && !approval.empty() ? approval_page_url(*generation.config, copy.ctx.headers, approval) : "";
      return copy.answer(approval_input_required(stored, url));
    }
    copy.answer(mcp_call_result(generation.config->find_tool(inv.tool_name), inv));
  };
  auto queue_full = [calls = calls_, key, copy = Call(call)] {
    calls->remove(key);
    copy.answer(mcp_error_result("queue_full", "too many invocations are queued; retry later"));
  };
  auto rejected = run_invocation(s_, std::move(request), std::move(answer), queue_full);
  if (rejected == Rejection::none) return;
  if (rejected == Rejection::draining) {
    calls_->remove(key);
    return call.answer(mcp_error_result("draining", "the server is shutting down"));
  }
  queue_full();
}

}  // namespace airlock::server
