// 2026-07-28's tasks extension (io.modelcontextprotocol/tasks, SEP-2663) for the calls that wait
// on a person: a client that declares it in a tools/call's clientCapabilities gets the task
// (`resultType: "task"`) instead of input_required, and follows it with tasks/get (the detailed
// task: its input requests while it needs input, its result once completed), tasks/update
// (its answers to those requests) and tasks/cancel. The task is the invocation, as under
// 2025-11-25 (mcp_tasks.hpp); only the shapes differ (docs/mcp-server.md, "Tasks").
#include "server/core/invocation_response.hpp"
#include "server/invocations/invocation_store.hpp"
#include "server/mcp_server/mcp_approval_wait.hpp"
#include "server/mcp_server/mcp_call.hpp"
#include "server/mcp_server/mcp_tasks.hpp"
#include "server/mcp_server/mcp_tools.hpp"

namespace airlock::server {

namespace rpc = mcp::rpc_error;

// The task with what its status calls for: while it needs input, the approval's page as a
// URL-mode elicitation (inputRequests, under kApprovalInputKey); once completed, the result
// tools/call would have answered.
nlohmann::json McpServer::detailed_extension_task(const Call& call, const std::string& id, const TaskRow& row) const {
  auto task = extension_task(tasks_->task(id, row.stored, row.started, call.elicits_urls));
  const std::string status = task.value("status", "");
  if (status == "input_required") {
    const std::string approval = row.stored.value("approval", nlohmann::json::object()).value("id", "");
    const auto page = approval_page_url(*call.generation->config, call.ctx.headers, approval);
    task["inputRequests"][kApprovalInputKey] = {{"method", "elicitation/create"},
                                                {"params", approval_page_elicitation(row.stored, page)}};
  } else if (status == "completed") {
    task["result"] = extension_task_result(*call.generation->config, row.stored);
  }
  return task;
}

nlohmann::json extension_task_result(const policy::Config& config, const nlohmann::json& stored) {
  auto result = mcp_call_result(config.find_tool(stored.value("tool", "")), invocation_from_stored(stored));
  result["resultType"] = "complete";
  return result;
}

// tasks/update: the client's answers to the task's input requests. Airlock asks only where an
// approver decides, so any answer under kApprovalInputKey (accept, decline or cancel) means
// the page has been shown and the task works again; the call waits for its approver either
// way (tasks/cancel withdraws it). An acknowledgement, also for a task that has moved on.
void McpServer::task_update(Call& call) const {
  const auto id = task_id_of(call);
  if (!id) return;
  const auto& responses = call.message.params.contains("inputResponses") ? call.message.params["inputResponses"]
                                                                         : nlohmann::json();
  if (!responses.is_object())
    return call.fail(200, rpc::invalid_params, "tasks/update needs params.inputResponses, an object");
  const auto row = owned_task(call, *id);
  if (!row) return call.fail(200, rpc::invalid_params, not_yours(*id));
  if (responses.contains(kApprovalInputKey)) tasks_->page_shown(*id, row->started);
  call.answer(nlohmann::json::object());
}

}  // namespace airlock::server
