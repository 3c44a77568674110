#include "server/mcp_server/mcp_server.hpp"

#include "common/json_limits.hpp"
#include "server/core/generation_watch.hpp"
#include "server/mcp_server/mcp_approval_wait.hpp"
#include "server/mcp_server/mcp_call.hpp"
#include "server/mcp_server/mcp_protocol.hpp"

namespace airlock::server {

namespace rpc = mcp::rpc_error;
namespace protocol = mcp_protocol;

namespace {

// MCP's "session not found" (the TypeScript SDK's code; HTTP 404 says it too).
constexpr int kSessionNotFound = -32001;

std::string header(const std::map<std::string, std::string>& headers, const std::string& name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

McpReply refused(int status, const nlohmann::json& id, int code, const std::string& text) {
  return McpReply{status, mcp::make_error(id, code, text), {}};
}

}  // namespace

nlohmann::json mcp_server_info() { return {{"name", "airlock"}, {"version", "0.1.0"}}; }

nlohmann::json mcp_capabilities() {
  // Tasks: tools/call of the tools that wait for a person (mcp_tasks.hpp), tasks/list, and
  // tasks/cancel (of a task that still waits for its approval).
  // Resources and prompts: the gateway servers' (mcp_content.cpp), without subscriptions or
  // list_changed.
  return {{"tools", {{"listChanged", true}}},
          {"resources", nlohmann::json::object()},
          {"prompts", nlohmann::json::object()},
          {"logging", nlohmann::json::object()},
          {"tasks",
           {{"list", nlohmann::json::object()},
            {"cancel", nlohmann::json::object()},
            {"requests", {{"tools", {{"call", nlohmann::json::object()}}}}}}}};
}

void McpServer::Call::answer(nlohmann::json result) const {
  if (stateless) {
    if (!result.contains("resultType")) result["resultType"] = "complete";  // else input_required
    result["_meta"][protocol::kServerInfoMeta] = mcp_server_info();
  }
  reply(McpReply{200, mcp::make_result(message.id, std::move(result)), {}});
}

void McpServer::Call::fail(int http_status, int code, const std::string& text) const {
  reply(refused(http_status, message.id, code, text));
}

void McpServer::Call::fail(int code, const std::string& text, nlohmann::json data) const {
  reply(McpReply{200, mcp::make_error(message.id, code, text, std::move(data)), {}});
}

McpServer::McpServer(ApiServices services)
    : s_(std::move(services)),
      calls_(std::make_shared<McpCallsInFlight>()),
      listeners_(std::make_shared<McpListeners>()) {
  if (s_.mcp_session_book) sessions_.share(s_.mcp_session_book);
  task_watch_ = make_task_watch(tasks_, listeners_, s_.changes, s_.generation);
  // The Airlock sessions an MCP session created end with it (closed, or evicted), and so do
  // its notification stream and its tasks' notifications.
  sessions_.on_end([sessions = s_.sessions, listeners = listeners_, watch = task_watch_](
                       const std::string& id, std::vector<std::shared_ptr<LiveSession>> ending) {
    listeners->end_session(id);
    watch->forget_session(id);
    if (!sessions || ending.empty()) return;
    sessions->spawn([sessions, ending = std::move(ending)] {
      for (const auto& s : ending) sessions->end(s, "mcp_session_ended", "its MCP session ended");
    });
  });
  if (s_.generation_watch)
    s_.generation_watch->listen([weak = std::weak_ptr<McpListeners>(listeners_)] {
      if (auto listeners = weak.lock())
        listeners->notify_all(mcp::make_notification("notifications/tools/list_changed", nlohmann::json::object()));
    });
}

std::string McpServer::session_id(const Call& call) { return header(call.ctx.headers, "mcp-session-id"); }

std::variant<nlohmann::json, McpReply> McpServer::parse(std::string_view body) const {
  const auto& server = s_.generation->load()->config->server;
  if (body.size() > server.max_body_bytes)
    return refused(413, nullptr, rpc::invalid_request,
                   "the message is larger than server.maxBodyBytes (" + std::to_string(server.max_body_bytes) + " bytes)");
  auto parsed = parse_json_bounded(body, server.max_json_depth);
  if (!parsed) return refused(400, nullptr, rpc::parse_error, "the message is not JSON: " + parsed.error().message);
  return std::move(*parsed);
}

bool McpServer::streams(const nlohmann::json& m) {
  if (!m.is_object() || !m.contains("method") || !m["method"].is_string()) return false;
  if (m["method"] == "subscriptions/listen" || m["method"] == "tasks/result") return m.contains("id");
  if (m["method"] != "tools/call") return false;
  const auto params = m.find("params");
  if (params == m.end() || !params->is_object()) return false;
  const auto meta = params->find("_meta");
  return meta != params->end() && meta->is_object() && meta->contains("progressToken");
}

void McpServer::handle(const McpContext& ctx, const nlohmann::json& body, McpNotify notify, McpReplyFn reply) {
  if (body.is_array())
    return reply(refused(400, nullptr, rpc::invalid_request,
                         "JSON-RPC batches are not accepted: send one message per request"));
  auto parsed = mcp::parse_message(body);
  if (!parsed) return reply(refused(400, nullptr, rpc::invalid_request, parsed.error().message));
  auto generation = s_.generation->load();
  auto who = generation->authenticator->authenticate(ctx.headers, ctx.client_certificate ? &*ctx.client_certificate : nullptr);
  if (const auto* no = std::get_if<pipeline::InvocationError>(&who))
    return reply(refused(401, parsed->id, rpc::invalid_request, "unauthenticated: " + no->message));
  if (parsed->kind == mcp::Message::Kind::response || parsed->kind == mcp::Message::Kind::error_response)
    return reply(McpReply{202, std::nullopt, {}});  // its requests (a task's elicitation) await no answer
  Call call{ctx, std::move(*parsed), generation, std::get<pipeline::Caller>(who), {}, {}, false, {}, false,
            std::move(notify), std::move(reply)};
  call.principal = mcp_principal(call.caller);
  if (auto revision = protocol::envelope_revision(call.message)) {
    if (auto no = protocol::check_stateless(call.message, *revision, ctx.http ? &ctx.headers : nullptr))
      return call.reply(McpReply{no->http_status, no->answer, {}});
    call.revision = *revision;
    call.stateless = true;
    call.channel = ctx.channel;
    call.elicits_urls = elicits_urls(call.message.params);  // 2026-07-28: each request says
  } else if (call.message.method == "initialize" && call.message.kind == mcp::Message::Kind::request) {
    return initialize(call);
  } else if (!resolve_session(call)) {
    return;
  }
  if (call.message.kind == mcp::Message::Kind::notification) {
    notification(call);
    return call.reply(McpReply{202, std::nullopt, {}});
  }
  dispatch(call);
}

// A message of a session revision: its session must exist, be the caller's, and speak the
// revision the MCP-Protocol-Version header names. False: refused (answered).
bool McpServer::resolve_session(Call& call) {
  const std::string id = header(call.ctx.headers, "mcp-session-id");
  if (id.empty()) {
    call.fail(400, rpc::invalid_request,
              "Bad Request: no Mcp-Session-Id header; send initialize first, or name a protocol revision in _meta");
    return false;
  }
  auto revision = sessions_.revision(id, call.principal);
  if (!revision) {
    call.fail(404, kSessionNotFound, "Session not found: no session " + id + " of yours");
    return false;
  }
  const std::string named = header(call.ctx.headers, "mcp-protocol-version");
  if (call.ctx.http && !named.empty() && named != *revision) {
    call.fail(400, rpc::unsupported_protocol_version,
              "Bad Request: Unsupported protocol version: " + named + " (this session speaks " + *revision + ")");
    return false;
  }
  call.revision = *revision;
  call.channel = call.ctx.http ? id : call.ctx.channel;
  call.elicits_urls = sessions_.elicits_urls(id);
  return true;
}

void McpServer::initialize(Call& call) {
  const std::string revision = protocol::negotiate(call.message.params);
  const auto& params = call.message.params;
  // URL-mode elicitation came with 2025-11-25.
  const bool elicits = revision >= "2025-11-25" && params.is_object() && params.contains("capabilities") &&
                       declares_url_elicitation(params["capabilities"]);
  const auto opened = sessions_.open(call.principal, revision, elicits);
  if (!opened) return call.fail(503, rpc::internal_error, "the session could not be opened: " + opened.error().message);
  const std::string& id = *opened;
  nlohmann::json result = {{"protocolVersion", revision},
                           {"capabilities", mcp_capabilities()},
                           {"serverInfo", mcp_server_info()},
                           {"instructions", "Airlock's tools: each call runs sandboxed, checked and audited."}};
  call.reply(McpReply{200, mcp::make_result(call.message.id, std::move(result)), id});
}

void McpServer::notification(const Call& call) const {
  if (call.message.method != "notifications/cancelled" || call.channel.empty()) return;
  const auto& params = call.message.params;
  if (!params.is_object() || !params.contains("requestId")) return;
  const auto key = McpCallsInFlight::key(call.channel, params["requestId"].dump());
  calls_->cancel(key);
  listeners_->remove(key);  // a subscriptions/listen the client ends: no result follows
  task_watch_->forget_subscription(key);
}

void McpServer::cancel(const std::string& channel, const nlohmann::json& request_id) {
  const auto key = McpCallsInFlight::key(channel, request_id.dump());
  calls_->cancel(key);
  listeners_->remove(key);
  task_watch_->forget_subscription(key);
}

namespace {

std::string session_stream_key(const std::string& id) { return "get\n" + id; }

}  // namespace

std::optional<McpReply> McpServer::listen_session(const McpContext& ctx, const std::string& id, McpNotify send,
                                                  std::function<void()> end) {
  auto generation = s_.generation->load();
  auto who = generation->authenticator->authenticate(ctx.headers, ctx.client_certificate ? &*ctx.client_certificate : nullptr);
  if (const auto* no = std::get_if<pipeline::InvocationError>(&who))
    return refused(401, nullptr, rpc::invalid_request, "unauthenticated: " + no->message);
  auto revision = sessions_.revision(id, mcp_principal(std::get<pipeline::Caller>(who)));
  if (!revision) return refused(404, nullptr, kSessionNotFound, "Session not found: no session " + id + " of yours");
  const std::string named = header(ctx.headers, "mcp-protocol-version");
  if (!named.empty() && named != *revision)
    return refused(400, nullptr, rpc::unsupported_protocol_version,
                   "Bad Request: Unsupported protocol version: " + named + " (this session speaks " + *revision + ")");
  if (!listeners_->add(session_stream_key(id), {id, std::move(send), std::move(end)}))
    return refused(503, nullptr, rpc::invalid_request, "too many notification streams are open; retry later");
  // Deleted between the check and now: its end came before the stream was kept.
  if (!sessions_.revision(id, mcp_principal(std::get<pipeline::Caller>(who)))) listeners_->end_session(id);
  return std::nullopt;
}

void McpServer::forget_session_stream(const std::string& id) { listeners_->remove(session_stream_key(id)); }

void McpServer::listen_stdio(const std::string& id, McpNotify send) {
  (void)listeners_->add("stdio", {id, std::move(send), nullptr});
}

void McpServer::forget_stdio() { listeners_->remove("stdio"); }

void McpServer::close_streams() { listeners_->end_all(); }

int McpServer::end_session(const McpContext& ctx, const std::string& id) {
  auto generation = s_.generation->load();
  auto who = generation->authenticator->authenticate(ctx.headers, ctx.client_certificate ? &*ctx.client_certificate : nullptr);
  if (std::holds_alternative<pipeline::InvocationError>(who)) return 401;
  return sessions_.close(id, mcp_principal(std::get<pipeline::Caller>(who))) ? 204 : 404;
}

}  // namespace airlock::server
