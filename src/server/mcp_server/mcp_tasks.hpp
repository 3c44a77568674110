// MCP tasks (revision 2025-11-25, experimental) for the calls that wait on a person: a
// critical tool (its approval) says `execution.taskSupport: optional` in tools/list, and a
// tools/call of it with `params.task` is answered with a CreateTaskResult as soon as the call
// waits for its approvers (or has ended). The client polls `tasks/get` and takes the outcome
// with `tasks/result`, which waits for the end and answers exactly what tools/call would have.
// So an MCP-only client gets the result of a call a person approved later (docs/mcp-server.md,
// "Tasks").
//
// The task id is the invocation's id: its row (InvocationStore) is the task's state, and the
// row's owner is who may see the task (as GET /v1/invocations/{id}), so a task made through one
// replica, or before a restart, is polled through any. This table keeps what the row does not:
// the status last seen and when it changed (lastUpdatedAt). It lives in each daemon's memory,
// bounded, for the tasks' ttl; a task it has not seen is adopted with the row's start.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "pipeline/invocation.hpp"
#include "policy/config.hpp"

namespace airlock::server {

inline constexpr const char* kRelatedTaskMeta = "io.modelcontextprotocol/related-task";
// 2026-07-28 moved tasks out of the core protocol into this extension (SEP-2663): a request's
// clientCapabilities.extensions names it when the client takes a task for an answer.
inline constexpr const char* kTasksExtension = "io.modelcontextprotocol/tasks";
inline constexpr const char* kImmediateResponseMeta = "io.modelcontextprotocol/model-immediate-response";

// Whether tools/call may be a task for this tool: those that wait for a person.
bool supports_tasks(const policy::ToolConfig& tool);
// Whether a 2026-07-28 request's client declared the tasks extension (its _meta's
// clientCapabilities.extensions["io.modelcontextprotocol/tasks"], an object).
bool declares_tasks_extension(const nlohmann::json& params);
// A task (McpTasks::task) in the extension's shape: ttlMs and pollIntervalMs. `failed` there
// is a JSON-RPC error, and Airlock's calls end in results (an error result too), so an ended
// call's task is `completed` (its result may be an error result); `cancelled` stays.
nlohmann::json extension_task(nlohmann::json task);
// A completed task's `result` in the extension's detailed task: what tools/call would have
// answered for its invocation's stored row, under `config`'s tools (mcp_task_extension.cpp).
nlohmann::json extension_task_result(const policy::Config& config, const nlohmann::json& stored);

class McpTasks {
 public:
  using Clock = std::chrono::system_clock;
  static constexpr std::chrono::hours kTtl{24};   // how long a task is kept; every task gets it
  static constexpr std::size_t kMaxTasks = 10000;  // past it, the oldest goes first
  static constexpr int kPollIntervalMs = 1000;
  static constexpr std::size_t kPageSize = 50;  // tasks/list

  // The task's answer for tasks/get and CreateTaskResult, from its invocation's stored row (or,
  // while the call is in flight, its Invocation). A task this table has not seen (made through
  // another replica, or before a restart) is recorded as made at `started` (its row's start).
  // `elicits`: the caller's client takes URL-mode elicitations; then a task that waits for its
  // approval is `input_required` until its client has been shown the approval's page
  // (page_shown).
  nlohmann::json task(const std::string& id, const nlohmann::json& stored, Clock::time_point started,
                      bool elicits = false);
  // Task `id`'s client has been shown the approval's page (2025-11-25: tasks/result sent it;
  // 2026-07-28: tasks/update answered it): the task is `working` again.
  void page_shown(const std::string& id, Clock::time_point started);

 private:
  struct Entry {
    Clock::time_point created, updated;
    std::string status;       // as last answered
    bool page_shown = false;  // its approval's page was shown (page_shown)
  };
  void evict_expired(Clock::time_point now);
  Entry& admit(const std::string& id, Entry entry);  // the oldest goes first past kMaxTasks

  std::mutex mu_;
  std::map<std::string, Entry> by_id_;
  std::list<std::string> order_;  // ids, oldest first
};

// The task status of an invocation's stored row (its REST answer): working, completed, failed
// or cancelled; and the sentence a person reads about it.
std::string task_status(const nlohmann::json& stored);
std::string task_status_message(const nlohmann::json& stored);

// The finished invocation a stored row describes, enough for mcp_call_result: tasks/result
// answers what tools/call would have.
pipeline::Invocation invocation_from_stored(const nlohmann::json& stored);

}  // namespace airlock::server
