// The daemon's workers and its two queues (docs/daemon.md, "Quotas and the fair queue").
//
// New requests wait in the intake queue (bounded: a full one is the caller's 429 queue_full)
// and run only up to their admission: authenticate, authorize, the quota stage. An admitted
// invocation goes on in its principal's lane; lanes are served in turn, `weight` jobs of a
// lane per round, so a principal with 200 calls waiting delays another's next call by at most
// one call per worker. Intake comes first, and one thread serves only intake, so admitting a
// call never waits for a tool to end. Draining stops new intake and waits for the rest.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace airlock::server {

class InvocationExecutor {
 public:
  // Workers live as long as the executor: a sandbox is tied to the thread that launched it.
  // `workers` run lanes' jobs (and intake when idle); one more thread runs intake only.
  InvocationExecutor(unsigned workers, unsigned queue_length);
  ~InvocationExecutor();
  InvocationExecutor(const InvocationExecutor&) = delete;
  InvocationExecutor& operator=(const InvocationExecutor&) = delete;

  // Intake: false when the intake queue is full or the executor is draining.
  bool submit(std::function<void()> job);
  // An admitted invocation's run, in `lane` (its principal): never refused, also while
  // draining (it was acknowledged; the quota stage bounds how much one lane holds).
  void submit_to_lane(const std::string& lane, unsigned weight, std::function<void()> job);

  std::size_t queued() const;   // intake and lanes
  std::size_t running() const;  // lanes' jobs running (intake's are short)

  // Refuses new intake and waits until every queued and running job is done or `timeout`
  // passes. Returns whether everything finished.
  bool drain(std::chrono::milliseconds timeout);

 private:
  struct Lane {
    std::deque<std::function<void()>> jobs;
    unsigned weight = 1;
    unsigned taken_this_turn = 0;
  };
  void work(bool intake_only);
  // Under mu_: the next job, intake first, then the lane whose turn it is.
  bool take(bool intake_only, std::function<void()>& job, bool& from_lane);
  bool has_work(bool intake_only) const;

  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> intake_;
  std::map<std::string, Lane> lanes_;
  std::deque<std::string> turns_;  // lanes with jobs, the next to serve first
  std::size_t lane_jobs_ = 0, running_ = 0, intake_running_ = 0;
  std::size_t max_intake_;
  bool stopping_ = false, draining_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace airlock::server
