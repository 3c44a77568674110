// The MCP server's task methods (mcp_tasks.hpp): tools/call with params.task, tasks/get,
// tasks/result, tasks/cancel and tasks/list.
#include <atomic>

#include "server/approvals/approvals.hpp"
#include "server/core/invocation_response.hpp"
#include "server/invocations/invocation_runner.hpp"
#include "server/invocations/invocation_store.hpp"
#include "server/invocations/invocation_waiters.hpp"
#include "server/mcp_server/mcp_approval_wait.hpp"
#include "server/mcp_server/mcp_call.hpp"
#include "server/mcp_server/mcp_tasks.hpp"
#include "server/mcp_server/mcp_tools.hpp"

namespace airlock::server {

namespace rpc = mcp::rpc_error;

// A tools/call that becomes a task: with params.task (2025-11-25), or of a tool that may be
// one from a client that declared the tasks extension (2026-07-28, where the server decides).
// Answered once the call waits for its approvers (or has ended) with the task, never with the
// tool's result; no progress, no cancellation by the request's id (the request is answered at
// once; the task outlives it).
void McpServer::call_tool_as_task(Call& call, InvocationRequest request) const {
  const auto* tool = call.generation->config->find_tool(request.tool);
  if (!tool || !supports_tasks(*tool))
    return call.fail(200, rpc::method_not_found,
                     "tools/call of " + request.tool + " cannot be a task: only tools that wait for a person's "
                     "approval say execution.taskSupport (call it without params.task)");
  if (!call.stateless && !call.message.params["task"].is_object())
    return call.fail(200, rpc::invalid_params, "tools/call: params.task must be an object ({\"ttl\": ms} or {})");
  auto created = [watch = task_watch_, tasks = tasks_, store = s_.store, copy = Call(call)](
                     const Generation&, const pipeline::Invocation& inv) {
    const nlohmann::json stored = to_response(inv);
    // Dated by its row, as every replica (and this one after a restart) dates it.
    const auto started = store ? store->started_ms(inv.id) : std::nullopt;
    const auto created_at = started ? McpTasks::Clock::time_point{std::chrono::milliseconds(*started)}
                                    : McpTasks::Clock::now();
    // Watched before it is answered: the client may have its approver decide at once.
    if (is_unfinished(stored)) watch_task(*watch, copy, inv.id, created_at);
    auto task = tasks->task(inv.id, stored, created_at, copy.elicits_urls);
    nlohmann::json result = copy.stateless ? extension_task(std::move(task)) : nlohmann::json{{"task", std::move(task)}};
    if (copy.stateless) result["resultType"] = "task";
    result["_meta"][kImmediateResponseMeta] = "The call runs as task " + inv.id + ": " + task_status_message(stored);
    copy.answer(std::move(result));
  };
  auto queue_full = [copy = Call(call)] {
    copy.answer(mcp_error_result("queue_full", "too many invocations are queued; retry later"));
  };
  const auto rejected = run_invocation(s_, std::move(request), std::move(created), queue_full);
  if (rejected == Rejection::draining) return call.answer(mcp_error_result("draining", "the server is shutting down"));
  if (rejected == Rejection::queue_full) queue_full();
}

// params.taskId, or the call is failed saying why.
std::optional<std::string> task_id_of(const McpServer::Call& call) {
  const auto& params = call.message.params;
  if (!params.is_object() || !params.contains("taskId") || !params["taskId"].is_string()) {
    call.fail(200, rpc::invalid_params, call.message.method + " needs params.taskId, a string");
    return std::nullopt;
  }
  return params["taskId"].get<std::string>();
}

std::string not_yours(const std::string& id) {
  return "Failed to retrieve task: no task " + id + " of this caller (tasks are kept " +
         std::to_string(McpTasks::kTtl.count()) + " h)";
}

// Task `id`'s invocation row, when the caller owns it (as GET /v1/invocations/{id} would show
// it), it is of a tool that may be a task, and its ttl has not passed; and when it began.
std::optional<McpServer::TaskRow> McpServer::owned_task(const Call& call, const std::string& id) const {
  const auto owner = s_.store ? s_.store->owner(id) : std::nullopt;
  if (!owner || !owns_invocation(call.caller, *owner)) return std::nullopt;
  auto stored = s_.store->get(id);
  const auto started = s_.store->started_ms(id);
  const auto* tool = stored ? call.generation->config->find_tool(stored->value("tool", "")) : nullptr;
  if (!started || !tool || !supports_tasks(*tool)) return std::nullopt;
  const McpTasks::Clock::time_point began{std::chrono::milliseconds(*started)};
  if (McpTasks::Clock::now() - began >= McpTasks::kTtl) return std::nullopt;
  return TaskRow{std::move(*stored), began};
}

void McpServer::task_get(Call& call) const {
  const auto id = task_id_of(call);
  if (!id) return;
  const auto row = owned_task(call, *id);
  if (!row) return call.fail(200, rpc::invalid_params, not_yours(*id));
  if (call.stateless) return call.answer(detailed_extension_task(call, *id, *row));
  call.answer(tasks_->task(*id, row->stored, row->started, call.elicits_urls));
}

// A task that waits for its approval, asked for by a client that takes URL-mode elicitations
// (2025-11-25): the approval's console page, sent ahead of the result on the tasks/result
// stream as an elicitation/create request whose elicitationId is the approval's id. What the
// client answers is not awaited: the call waits for the approver either way (tasks/cancel
// withdraws it). Returns the elicitationId ("" when none was sent).
std::string McpServer::elicit_approval_page(const Call& call, const std::string& id, const TaskRow& row) const {
  if (!call.elicits_urls || row.stored.value("status", "") != "pending_approval") return "";
  const std::string approval = row.stored.value("approval", nlohmann::json::object()).value("id", "");
  if (approval.empty()) return "";
  static std::atomic<std::uint64_t> sent{0};
  const auto page = approval_page_url(*call.generation->config, call.ctx.headers, approval);
  auto params = approval_page_elicitation(row.stored, page);
  params["elicitationId"] = approval;
  params["_meta"][kRelatedTaskMeta] = {{"taskId", id}};
  call.notify({{"jsonrpc", "2.0"},
               {"id", "airlock-elicitation-" + std::to_string(++sent)},
               {"method", "elicitation/create"},
               {"params", std::move(params)}});
  tasks_->page_shown(id, row.started);
  return approval;
}

// Waits for the task's end (its invocation's, through InvocationWaiters, as a long poll of
// GET /v1/invocations/{id} does), then answers what tools/call would have answered. A client
// shown the approval's page first (elicit_approval_page) is told it is done
// (notifications/elicitation/complete) just before the result.
void McpServer::task_result(Call& call) const {
  const auto id = task_id_of(call);
  if (!id) return;
  const auto row = owned_task(call, *id);
  if (!row) return call.fail(200, rpc::invalid_params, not_yours(*id));
  const std::string elicitation = elicit_approval_page(call, *id, *row);
  auto finish = [store = s_.store, slot = s_.generation, id = *id, elicitation, copy = Call(call)] {
    const auto stored = store->get(id);
    if (!stored || is_unfinished(*stored))
      return copy.fail(200, rpc::internal_error,
                       "task " + id + " has not ended and the server is shutting down: ask tasks/result again");
    const auto generation = slot->load();
    auto result = mcp_call_result(generation->config->find_tool(stored->value("tool", "")),
                                  invocation_from_stored(*stored));
    result["_meta"][kRelatedTaskMeta] = {{"taskId", id}};
    if (!elicitation.empty())
      copy.notify({{"jsonrpc", "2.0"},
                   {"method", "notifications/elicitation/complete"},
                   {"params", {{"elicitationId", elicitation}}}});
    copy.answer(std::move(result));
  };
  if (is_unfinished(row->stored)) {
    if (!s_.waiters || !s_.waiters->add(*id, InvocationWaiters::Clock::now() + McpTasks::kTtl, finish))
      return call.fail(200, rpc::internal_error, "too many calls wait for their outcome: poll tasks/get, then ask again");
    // It may have ended between the read and the wait.
    if (auto again = s_.store->get(*id); again && !is_unfinished(*again)) s_.waiters->notify(*id);
    return;
  }
  finish();
}

}  // namespace airlock::server

namespace airlock::server {

namespace {

// Who the caller is, as an audit record of a withdrawal names them.
std::string caller_name(const pipeline::Caller& caller) {
  if (caller.actor) return "principal " + caller.actor->principal;
  if (caller.subject) return caller.subject->issuer + " " + caller.subject->sub;
  return "an unknown caller";
}

}  // namespace

// tasks/cancel: a task that waits for its approval is withdrawn (the approval ends
// "withdrawn", the call ends cancelled without having run) and answered as cancelled. One
// that runs already (approved) or has ended is refused -32602: Airlock does not stop a call a
// person approved halfway, and the spec refuses cancelling a terminal task.
void McpServer::task_cancel(Call& call) const {
  const auto id = task_id_of(call);
  if (!id) return;
  const auto row = owned_task(call, *id);
  if (!row) return call.fail(200, rpc::invalid_params, not_yours(*id));
  if (!is_unfinished(row->stored))
    return call.fail(200, rpc::invalid_params,
                     "Cannot cancel task " + *id + ": it has ended (" + task_status(row->stored) + ")");
  if (row->stored.value("status", "") != "pending_approval" || !s_.approvals)
    return call.fail(200, rpc::invalid_params,
                     "Cannot cancel task " + *id + ": a person approved it and it runs; it ends by itself");
  if (auto withdrawn = s_.approvals->withdraw(*id, caller_name(call.caller)); !withdrawn)
    return call.fail(200, withdrawn.error().code == "not_pending" ? rpc::invalid_params : rpc::internal_error,
                     "Cannot cancel task " + *id + ": " + withdrawn.error().message);
  const auto now = s_.store->get(*id);
  if (!now) return call.fail(200, rpc::internal_error, "task " + *id + " was cancelled and is no longer stored");
  if (call.stateless) return call.answer(nlohmann::json::object());  // 2026-07-28: an acknowledgement
  call.answer(tasks_->task(*id, *now, row->started, call.elicits_urls));
}

// tasks/list: the caller's tasks of the last kTtl, newest first, in pages of kPageSize:
// the invocations of tools that may be tasks whose owner the caller is (those tasks/get
// answers), at most the newest 500 of them.
void McpServer::task_list(Call& call) const {
  const auto offset = cursor_offset(call);
  if (!offset) return;
  if (!s_.store) return call.answer({{"tasks", nlohmann::json::array()}});
  InvocationStore::Query query;
  InvocationStore::Owner owner;
  if (call.caller.actor) owner.principal = call.caller.actor->principal;
  if (call.caller.subject) {
    owner.issuer = call.caller.subject->issuer;
    owner.sub = call.caller.subject->sub;
  }
  query.owner = owner;
  query.limit = 500;
  query.since_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       (McpTasks::Clock::now() - McpTasks::kTtl).time_since_epoch()).count();
  auto rows = s_.store->list(query);
  if (!rows) return call.fail(200, rpc::internal_error, "tasks/list: " + rows.error().message);
  auto ids = nlohmann::json::array();
  for (const auto& summary : *rows) {
    const auto* tool = call.generation->config->find_tool(summary.value("tool", ""));
    if (tool && supports_tasks(*tool)) ids.push_back(summary.value("id", ""));
  }
  auto page = pages_.page(ids, "tasks", *offset, McpTasks::kPageSize);
  for (auto& entry : page["tasks"]) {
    const std::string id = entry.get<std::string>();
    const auto row = owned_task(call, id);
    entry = row ? tasks_->task(id, row->stored, row->started, call.elicits_urls)
                : nlohmann::json{{"taskId", id}, {"status", "failed"}};
  }
  call.answer(std::move(page));
}

}  // namespace airlock::server
