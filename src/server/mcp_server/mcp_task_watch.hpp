// Which MCP tasks are told of their status changes, and the one thread that tells them: MCP's
// optional task status notifications (2025-11-25's notifications/tasks/status, to the session
// that made the task; 2026-07-28's notifications/tasks, to the subscriptions/listen streams
// that asked for the task by its id, SEP-2663). The changes come from where they happen
// (InvocationChanges: an approved call resumes, a call ends), on the thread that made them;
// they are only queued there, so a slow client never holds up an approver's decision or a
// worker. Best-effort: past the caps a task is not watched (or a change is dropped) and its
// client learns its status by polling tasks/get, as every client may.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/core/generation.hpp"
#include "server/mcp_server/mcp_tasks.hpp"

namespace airlock::server {

class McpTaskWatch {
 public:
  // Tasks watched at once (separate from InvocationWaiters' budget of long polls): past it a
  // new task is not watched, and its client polls.
  static constexpr std::size_t kMaxWatched = 4096;
  static constexpr std::size_t kMaxQueued = 4096;  // changes not yet told; past it one is dropped

  struct Change {
    std::string id;       // the task (its invocation)
    std::string session;  // the MCP session that made it ("": none, or not watched for it)
    std::vector<std::string> subscriptions;  // the subscriptions/listen streams that asked for it
    McpTasks::Clock::time_point started;
    nlohmann::json stored;  // the invocation's row (or, resumed, its "running" status)
  };
  using Deliver = std::function<void(const Change& change)>;

  explicit McpTaskWatch(Deliver deliver) : deliver_(std::move(deliver)) {}
  ~McpTaskWatch();
  McpTaskWatch(const McpTaskWatch&) = delete;
  McpTaskWatch& operator=(const McpTaskWatch&) = delete;

  // Session `session` made task `id`, which began at `started`. False: not watched (too many).
  bool watch(const std::string& id, const std::string& session, McpTasks::Clock::time_point started);
  // The subscriptions/listen stream `subscription` asked for task `id` (its caller's). False:
  // not watched (too many).
  bool watch_for(const std::string& id, const std::string& subscription, McpTasks::Clock::time_point started);
  // Invocation `id` changed (InvocationChanges): queued when it is watched; an ended one is
  // no longer watched.
  void changed(const std::string& id, const nlohmann::json& stored);
  // The session ended: its tasks are forgotten, and nothing more is told for them.
  void forget_session(const std::string& session);
  // The subscription ended (its client cancelled it, or left).
  void forget_subscription(const std::string& subscription);
  std::size_t watched() const;

 private:
  struct Watched {
    std::string session;
    std::set<std::string> subscriptions;
    McpTasks::Clock::time_point started;
  };
  void evict_expired_locked(McpTasks::Clock::time_point now);
  void drop_unheard_locked();
  // The entry of task `id`, added when there is room; null when there is none.
  Watched* entry_locked(const std::string& id, McpTasks::Clock::time_point started);
  void loop();

  Deliver deliver_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Watched> by_id_;
  std::deque<Change> queue_;
  bool stopping_ = false;
  std::thread worker_;  // started with the first watched task
};

}  // namespace airlock::server

namespace airlock::server {

class InvocationChanges;
class McpListeners;

// The MCP server's watch: each change of a watched task is told to the channels of the
// session that made it (`listeners`) as notifications/tasks/status, the task as `tasks`
// answers tasks/get, and to the subscriptions that asked for it as notifications/tasks, the
// detailed task as 2026-07-28's tasks/get answers it (its result under the current
// `generation`'s tools). Listens on `changes` (null: nothing is told) for as long as it lives.
std::shared_ptr<McpTaskWatch> make_task_watch(std::shared_ptr<McpTasks> tasks, std::shared_ptr<McpListeners> listeners,
                                              InvocationChanges* changes, const GenerationSlot* generation);

}  // namespace airlock::server
