// MCP task status notifications (mcp_task_watch.hpp): which tasks are watched, and what their
// clients are told. 2025-11-25's notifications/tasks/status carries the Task exactly as
// tasks/get answers it (the same McpTasks table dates it), so a client that polls too sees the
// same status and lastUpdatedAt. 2026-07-28's notifications/tasks (the tasks extension,
// SEP-2663) carries the detailed task as that revision's tasks/get answers it, to the
// subscriptions/listen streams that named the task in `notifications.taskIds`.
#include "mcp/jsonrpc.hpp"
#include "server/invocations/invocation_changes.hpp"
#include "server/invocations/invocation_waiters.hpp"
#include "server/mcp_server/mcp_call.hpp"
#include "server/mcp_server/mcp_listeners.hpp"
#include "server/mcp_server/mcp_task_watch.hpp"

namespace airlock::server {

namespace {

// A change is a resumption or an end, never a wait for the approver: no elicitation to
// account for (a session that takes URL elicitations sees input_required only while it waits).
nlohmann::json extension_notification(McpTasks& tasks, const GenerationSlot& generation,
                                      const McpTaskWatch::Change& change) {
  auto task = extension_task(tasks.task(change.id, change.stored, change.started, false));
  if (task.value("status", "") == "completed")
    task["result"] = extension_task_result(*generation.load()->config, change.stored);
  return mcp::make_notification("notifications/tasks", std::move(task));
}

void tell(McpTasks& tasks, McpListeners& listeners, const GenerationSlot* generation,
          const McpTaskWatch::Change& change) {
  if (!change.session.empty()) {
    auto task = tasks.task(change.id, change.stored, change.started, false);
    listeners.notify_session(change.session, mcp::make_notification("notifications/tasks/status", std::move(task)));
  }
  if (change.subscriptions.empty() || !generation) return;
  const auto notification = extension_notification(tasks, *generation, change);
  for (const auto& key : change.subscriptions) listeners.notify_key(key, notification);
}

}  // namespace

std::shared_ptr<McpTaskWatch> make_task_watch(std::shared_ptr<McpTasks> tasks, std::shared_ptr<McpListeners> listeners,
                                              InvocationChanges* changes, const GenerationSlot* generation) {
  // The watch's thread holds the table and the channels, never the server.
  auto watch = std::make_shared<McpTaskWatch>([tasks, listeners, generation](const McpTaskWatch::Change& change) {
    tell(*tasks, *listeners, generation, change);
  });
  if (changes)
    changes->listen([weak = std::weak_ptr<McpTaskWatch>(watch)](const std::string& id, const nlohmann::json& stored) {
      const auto alive = weak.lock();
      if (alive) alive->changed(id, stored);
      return alive != nullptr;
    });
  return watch;
}

// A task made by a session of 2025-11-25 (the revision that defines the notification) that
// still waits is watched for its session.
void McpServer::watch_task(McpTaskWatch& watch, const Call& call, const std::string& id,
                           McpTasks::Clock::time_point started) {
  if (call.stateless || call.revision < "2025-11-25") return;
  (void)watch.watch(id, session_id(call), started);  // past the cap: the client polls
}

// subscriptions/listen's `notifications.taskIds`: those of the caller's tasks that have not
// ended (and fit under the watch's cap) are watched for subscription `key`; the rest are left
// out of the acknowledgement, as the extension says of ids a server does not accept (the
// client polls them). At most kMaxListenTaskIds are considered.
nlohmann::json McpServer::listen_for_tasks(const Call& call, const nlohmann::json& ids, const std::string& key) const {
  auto accepted = nlohmann::json::array();
  std::size_t considered = 0;
  for (const auto& id : ids) {
    if (!id.is_string() || ++considered > kMaxListenTaskIds) continue;
    const auto row = owned_task(call, id.get<std::string>());
    if (row && is_unfinished(row->stored) && task_watch_->watch_for(id.get<std::string>(), key, row->started))
      accepted.push_back(id);
  }
  return accepted;
}

}  // namespace airlock::server
