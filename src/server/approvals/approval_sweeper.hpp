// The approval service's clock: a thread that, every `interval`, expires the approvals whose
// time is up, hands approved ones to the executor (a full queue is retried), and answers the
// long polls whose deadline passed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace airlock::server {

class ApprovalService;
class InvocationWaiters;

class ApprovalSweeper {
 public:
  ApprovalSweeper(ApprovalService& approvals, InvocationWaiters& waiters,
                  std::chrono::milliseconds interval = std::chrono::milliseconds(200));
  ~ApprovalSweeper();
  ApprovalSweeper(const ApprovalSweeper&) = delete;
  ApprovalSweeper& operator=(const ApprovalSweeper&) = delete;
  // Also run `each_tick` at every tick (set before start).
  void also(std::function<void()> each_tick) { also_ = std::move(each_tick); }
  void start();
  void stop();  // idempotent; answers every long poll still waiting

 private:
  void loop();
  ApprovalService& approvals_;
  InvocationWaiters& waiters_;
  std::chrono::milliseconds interval_;
  std::function<void()> also_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace airlock::server
