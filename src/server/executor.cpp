#include "server/executor.hpp"

namespace airlock::server {

InvocationExecutor::InvocationExecutor(unsigned workers, unsigned queue_length) : max_queue_(queue_length) {
  for (unsigned i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
}

InvocationExecutor::~InvocationExecutor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

bool InvocationExecutor::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (draining_ || stopping_) return false;
    // Room when a worker is free or the queue has space.
    if (running_ + queue_.size() >= workers_.size() + max_queue_) return false;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

std::size_t InvocationExecutor::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

std::size_t InvocationExecutor::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

bool InvocationExecutor::drain(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  draining_ = true;
  return idle_.wait_for(lock, timeout, [this] { return queue_.empty() && running_ == 0; });
}

void InvocationExecutor::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    job();
    {
      std::lock_guard lock(mu_);
      --running_;
      if (queue_.empty() && running_ == 0) idle_.notify_all();
    }
  }
}

}  // namespace airlock::server
