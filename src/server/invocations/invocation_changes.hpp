// Who is told when an invocation's status changes where this daemon sees it happen: an
// approved call resumes (its row becomes "running"), or a call ends (its stored row: run,
// denied, expired, withdrawn). The MCP server's task status notifications listen here
// (mcp_task_watch.hpp). A listener is called on the thread of the change (the worker, or the
// request that decided), so it must only queue.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace airlock::server {

class InvocationChanges {
 public:
  // Returns false once its owner is gone: it is then forgotten.
  using Listener = std::function<bool(const std::string& id, const nlohmann::json& stored)>;

  void listen(Listener listener);
  void publish(const std::string& id, const nlohmann::json& stored);

 private:
  std::mutex mu_;
  std::vector<Listener> listeners_;
};

}  // namespace airlock::server
