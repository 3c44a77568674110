// Airlock's own MCP server, without a transport: JSON-RPC messages in, answers and
// notifications out (docs/mcp-server.md). Streamable HTTP (mcp_http.hpp) and stdio
// (mcp_stdio.hpp) carry it. Every message is authenticated as the HTTP API authenticates;
// tools/list shows what RBAC lets the caller invoke; tools/call runs the same invocation
// as POST /v1/tools/{name}/invoke (invocation_runner.hpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "mcp/jsonrpc.hpp"
#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"
#include "server/invocations/invocation_runner.hpp"
#include "server/mcp_server/mcp_listeners.hpp"
#include "server/mcp_server/mcp_pages.hpp"
#include "server/mcp_server/mcp_sessions.hpp"
#include "server/mcp_server/mcp_task_watch.hpp"
#include "server/mcp_server/mcp_tasks.hpp"

namespace airlock::server {

// tools/call: params._meta[kReasonMetaKey] is the agent's reason for the call (the REST body's
// "reason"), shown to approvers.
inline constexpr const char* kReasonMetaKey = "airlock/reason";

// Where a message came from.
struct McpContext {
  std::map<std::string, std::string> headers;  // lower-case: Authorization, the user token, MCP's own
  std::optional<PeerCertificate> client_certificate;
  std::string peer;
  // Streamable HTTP: the revisions' header rules apply (MCP-Protocol-Version, Mcp-Method,
  // Mcp-Name, Mcp-Session-Id). Otherwise stdio, which sets mcp-session-id itself.
  bool http = true;
  // The connection, for calls notifications/cancelled may name when there is no session
  // (stdio); "" over HTTP, where a stateless call is cancelled by closing its stream.
  std::string channel;
};

// The answer to one message.
struct McpReply {
  int http_status = 200;  // 200 with a message, 202 without (notifications, responses), 4xx refused
  std::optional<nlohmann::json> message;
  std::string session_id;  // set by initialize: the Mcp-Session-Id the client sends from then on
};

// A null notification is a keep-alive: a comment on an SSE stream, nothing on stdio.
using McpNotify = std::function<void(const nlohmann::json& notification)>;
using McpReplyFn = std::function<void(McpReply)>;

class McpServer {
 public:
  explicit McpServer(ApiServices services);

  // One message (a parsed body). `notify` gets the notifications due before the answer
  // (progress), in order, from the call's worker; `reply` is called once, perhaps later.
  void handle(const McpContext& ctx, const nlohmann::json& message, McpNotify notify, McpReplyFn reply);
  // A body under the configuration's limits (size, depth), or the reply refusing it.
  std::variant<nlohmann::json, McpReply> parse(std::string_view body) const;
  // Ends session `id` of the caller: 204, 401 (no valid credential) or 404 (none of theirs).
  int end_session(const McpContext& ctx, const std::string& id);
  // Cancels the call `request_id` of `channel` (the HTTP client went away, say).
  void cancel(const std::string& channel, const nlohmann::json& request_id);
  // Whether the message is answered on a stream over HTTP: a tools/call that asked for
  // progress (params._meta.progressToken), a subscriptions/listen, or a tasks/result (which
  // may send an elicitation ahead of the result).
  static bool streams(const nlohmann::json& message);

  std::size_t sessions() const { return sessions_.size(); }

  // GET /mcp: `send` becomes the notification channel of the caller's session `id` (the one
  // it had before is ended); `end` is called when the session ends or the daemon stops.
  // nullopt: kept; else the refusal (401, 404 as for a POST, 503 when too many are open).
  std::optional<McpReply> listen_session(const McpContext& ctx, const std::string& id, McpNotify send,
                                         std::function<void()> end);
  void forget_session_stream(const std::string& id);  // its client left
  // stdio: the connection's session `id` hears of changes on `send`.
  void listen_stdio(const std::string& id, McpNotify send);
  void forget_stdio();
  // Ends every notification channel (the daemon stops; a subscription's stream ends with its result).
  void close_streams();

  struct Call;  // one message being answered (mcp_call.hpp, internal)

 private:
  void dispatch(Call& call) const;
  void list_tools(Call& call) const;
  // A listing's params.cursor as an offset (0 without one); nullopt: refused (answered).
  std::optional<std::size_t> cursor_offset(Call& call) const;
  void listen(Call& call) const;  // subscriptions/listen (2026-07-28)
  // Its notifications.taskIds: those watched for subscription `key` (mcp_task_notifications.cpp).
  static constexpr std::size_t kMaxListenTaskIds = 100;
  nlohmann::json listen_for_tasks(const Call& call, const nlohmann::json& ids, const std::string& key) const;
  void call_tool(Call& call) const;
  void call_session_tool(Call& call) const;
  void resume_waiting_call(Call& call) const;  // 2026-07-28's retry (mcp_approval_wait.cpp)
  // The gateway servers' resources and prompts (mcp_content.cpp).
  void list_content(Call& call) const;  // resources/list, resources/templates/list, prompts/list
  void read_content(Call& call) const;  // resources/read, prompts/get
  void call_tool_as_task(Call& call, InvocationRequest request) const;  // mcp_task_methods.cpp
  struct TaskRow {
    nlohmann::json stored;
    McpTasks::Clock::time_point started;
  };
  std::optional<TaskRow> owned_task(const Call& call, const std::string& id) const;
  void task_get(Call& call) const;
  // 2026-07-28's tasks extension (mcp_task_extension.cpp): tasks/get's detailed task, and
  // tasks/update, which takes the client's answers to a task's input requests.
  nlohmann::json detailed_extension_task(const Call& call, const std::string& id, const TaskRow& row) const;
  void task_update(Call& call) const;
  void task_result(Call& call) const;
  std::string elicit_approval_page(const Call& call, const std::string& id, const TaskRow& row) const;
  void task_cancel(Call& call) const;
  void task_list(Call& call) const;
  // Task `id` of `call` is told of its status changes, when its revision has them.
  static void watch_task(McpTaskWatch& watch, const Call& call, const std::string& id,
                         McpTasks::Clock::time_point started);
  static std::string session_id(const Call& call);  // its Mcp-Session-Id ("" without)
  void initialize(Call& call);
  bool resolve_session(Call& call);
  void notification(const Call& call) const;

  ApiServices s_;
  mutable McpSessions sessions_;  // its own lock; session tools keep their workspaces in it
  std::shared_ptr<McpCallsInFlight> calls_;  // shared with the workers that finish calls
  // Shared with the generation watch's listener, which may outlive this server.
  std::shared_ptr<McpListeners> listeners_;
  McpPages pages_;
  std::shared_ptr<McpTasks> tasks_ = std::make_shared<McpTasks>();  // the tasks tools/call made
  // The tasks whose sessions are told of their status changes (mcp_task_notifications.cpp).
  std::shared_ptr<McpTaskWatch> task_watch_;
};

}  // namespace airlock::server
