// A fixed pool of invocation workers behind a bounded queue. A full queue is the caller's
// answer 429; draining stops new work and waits for the rest.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace airlock::server {

class InvocationExecutor {
 public:
  // Workers live as long as the executor: a sandbox is tied to the thread that launched it.
  InvocationExecutor(unsigned workers, unsigned queue_length);
  ~InvocationExecutor();
  InvocationExecutor(const InvocationExecutor&) = delete;
  InvocationExecutor& operator=(const InvocationExecutor&) = delete;

  // False when the queue is full or the executor is draining.
  bool submit(std::function<void()> job);
  std::size_t queued() const;
  std::size_t running() const;

  // Refuses new jobs and waits until every queued and running job is done or `timeout`
  // passes. Returns whether everything finished.
  bool drain(std::chrono::milliseconds timeout);

 private:
  void work();

  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> queue_;
  std::size_t running_ = 0;
  std::size_t max_queue_;
  bool stopping_ = false, draining_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace airlock::server
