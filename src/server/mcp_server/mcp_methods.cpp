// The MCP server's requests: ping, server/discover, tools/list, tools/call, logging/setLevel
// (tasks/get and tasks/result: mcp_task_methods.cpp).
#include "pipeline/stages/access.hpp"
#include "server/invocations/invocation_runner.hpp"
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

// The configured tools the caller may invoke, then the session tools when this daemon runs
// sessions (mcp_session_tools.hpp).
nlohmann::json tools_list(const McpServer::Call& call, bool sessions) {
  const auto& config = *call.generation->config;
  const auto* actor = call.caller.actor ? &*call.caller.actor : nullptr;
  const auto* subject = call.caller.subject ? &*call.caller.subject : nullptr;
  auto tools = nlohmann::json::array();
  for (const auto& t : config.tools)
    if (!pipeline::may_invoke(config, actor, subject, t.name, call.caller.scope).refusal)
      tools.push_back(mcp_tool_entry(t));
  if (sessions)
    for (auto& entry : session_tool_entries(config, call.caller)) tools.push_back(std::move(entry));
  nlohmann::json result = {{"tools", std::move(tools)}};
  if (call.stateless) cache_privately(result);
  return result;
}

nlohmann::json discover() {
  nlohmann::json result = {{"supportedVersions", protocol::supported_revisions()},
                           {"capabilities", mcp_capabilities()},
                           {"serverInfo", mcp_server_info()}};
  cache_privately(result);
  return result;
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
  if (method == "tools/list") return call.answer(tools_list(call, s_.sessions != nullptr));
  if (method == "tools/call") return call_tool(call);
  if (method == "tasks/get") return task_get(call);
  if (method == "tasks/result") return task_result(call);
  if (method == "server/discover" && call.stateless) return call.answer(discover());
  call.fail(200, rpc::method_not_found, "Method not found: " + method);
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
  InvocationRequest request{params["name"].get<std::string>(), call.ctx.headers, call.ctx.client_certificate,
                            invoke_body(params), call.ctx.peer, std::make_shared<pipeline::InvocationControl>()};
  if (params.contains("task")) return call_tool_as_task(call, std::move(request));
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object() && meta->contains("progressToken"))
    request.control->progress = progress_to(call.notify, (*meta)["progressToken"]);
  const std::string key = McpCallsInFlight::key(call.channel, call.message.id.dump());
  if (!call.channel.empty()) calls_->add(key, request.control);
  // The worker answers after this returns: it holds copies, never `call` itself.
  auto answer = [calls = calls_, key, copy = Call(call)](const Generation& generation, const pipeline::Invocation& inv) {
    calls->remove(key);
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
