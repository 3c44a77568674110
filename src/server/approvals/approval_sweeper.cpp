#include "server/approvals/approval_sweeper.hpp"

#include "server/approvals/approvals.hpp"
#include "server/invocations/invocation_waiters.hpp"

namespace airlock::server {

ApprovalSweeper::ApprovalSweeper(ApprovalService& approvals, InvocationWaiters& waiters,
                                 std::chrono::milliseconds interval)
    : approvals_(approvals), waiters_(waiters), interval_(interval) {}

ApprovalSweeper::~ApprovalSweeper() { stop(); }

void ApprovalSweeper::start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
}

void ApprovalSweeper::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  waiters_.release_all();
}

void ApprovalSweeper::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    approvals_.tick();
    if (also_) also_();
    waiters_.expire(InvocationWaiters::Clock::now());
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace airlock::server
