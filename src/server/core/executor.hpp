// The daemon's workers and its two queues (docs/daemon.md, "Quotas and the fair queue").
//
// New requests wait in the intake queue and run only up to their admission: authenticate,
// authorize, the quota stage. Intake is kept per caller (the principal a request's credential
// was verified as before, else its unverified credential: server/core/verified_callers.hpp) and
// served in turn; it is bounded as a whole, and when it is full a caller holding fewer
// requests than the one holding most takes the latter's newest place (that request is
// answered queue_full): a flood fills its own share, never another's. Unverified callers
// together hold at most half the places: fresh or forged credentials, each a caller of its
// own, cannot crowd out the callers already verified. An admitted
// invocation goes on in its principal's lane; lanes are served in turn, `weight` jobs of a
// lane per round, so a principal with 200 calls waiting delays another's next call by at most
// one call per worker. Intake comes first, and one thread serves only intake, so admitting a
// call never waits for a tool to end. A lane job may carry a deadline (server.queueTimeout):
// still waiting then, it leaves its lane and its `expired` job runs as intake work, so the
// caller hears at the deadline, not when a worker frees up. Draining stops new intake and
// waits for the rest.
#pragma once

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace airlock::server {

// Whose request waits in intake: `key` names the caller; `verified` says whether the key is a
// principal its credential was verified as (false: the credential itself, not yet verified).
struct IntakeCaller {
  std::string key;
  bool verified = true;
};

class InvocationExecutor {
 public:
  // Workers live as long as the executor: a sandbox is tied to the thread that launched it.
  // `workers` run lanes' jobs (and intake when idle); one more thread runs intake only.
  InvocationExecutor(unsigned workers, unsigned queue_length);
  ~InvocationExecutor();
  InvocationExecutor(const InvocationExecutor&) = delete;
  InvocationExecutor& operator=(const InvocationExecutor&) = delete;

  // Intake of `caller`'s request: false when the executor is draining, or the intake is full
  // (for an unverified caller: the unverified half is) and `caller` holds at least as many as
  // any other caller there but one (answer it queue_full). When a later request takes its
  // place, `displaced` runs instead of `job` (answer it queue_full): a job without one keeps
  // its place.
  bool submit(const IntakeCaller& caller, std::function<void()> job, std::function<void()> displaced);
  bool submit(const std::string& caller, std::function<void()> job, std::function<void()> displaced) {
    return submit(IntakeCaller{caller, true}, std::move(job), std::move(displaced));
  }
  bool submit(std::function<void()> job) { return submit(std::string(), std::move(job), nullptr); }
  // An admitted invocation's run, in `lane` (its principal): never refused, also while
  // draining (it was acknowledged; the quota stage bounds how much one lane holds).
  void submit_to_lane(const std::string& lane, unsigned weight, std::function<void()> job);
  // The same with a deadline: a job still in its lane at `deadline` is dropped from it and
  // `expired` runs instead (exactly one of the two runs).
  struct Expiry {
    std::chrono::steady_clock::time_point deadline;
    std::function<void()> expired;
  };
  void submit_to_lane(const std::string& lane, unsigned weight, std::function<void()> job, Expiry expiry);

  std::size_t queued() const;   // intake and lanes
  std::size_t running() const;  // lanes' jobs running (intake's are short)

  // Refuses new intake and waits until every queued and running job is done or `timeout`
  // passes. Returns whether everything finished.
  bool drain(std::chrono::milliseconds timeout);

 private:
  struct IntakeJob {
    std::function<void()> run;
    std::function<void()> displaced;
  };
  struct IntakeQueue {
    std::deque<IntakeJob> jobs;
    bool verified = true;
  };
  // Under mu_: when the intake (or with `unverified_only`, its unverified half) is full, the
  // newest displaceable request of the caller there holding most, if that is at least two
  // more than `caller` holds; removed from intake.
  std::function<void()> displace_for(const std::string& caller, bool unverified_only);
  // Under mu_: takes the front request of `caller`'s queue.
  std::function<void()> pop_intake(const std::string& caller);
  using Deadline = std::pair<std::chrono::steady_clock::time_point, std::uint64_t>;  // (when, job id)
  struct LaneJob {
    std::function<void()> run;
    std::optional<Expiry> expiry;
    std::uint64_t id = 0;
  };
  struct Lane {
    std::deque<LaneJob> jobs;
    unsigned weight = 1;
    unsigned taken_this_turn = 0;
  };
  void work(bool intake_only);
  // Under mu_: the next job, intake first, then the lane whose turn it is.
  bool take(bool intake_only, std::function<void()>& job, bool& from_lane);
  bool has_work(bool intake_only) const;
  // Under mu_: moves every lane job whose deadline has passed out of its lane, its `expired`
  // to the front of intake. Returns the next deadline still ahead, if any.
  std::optional<std::chrono::steady_clock::time_point> expire_due();
  void forget_lane_if_empty(const std::string& name);
  void enqueue(const std::string& lane, unsigned weight, LaneJob job);

  mutable std::mutex mu_;
  // The intake thread and the workers wait apart, so that a new job wakes one thread that can
  // take it instead of every idle one (each woken thread took mu_ and slept again: 26 of the
  // daemon's 60 futex calls per gateway call).
  std::condition_variable intake_wake_, worker_wake_, idle_;
  std::map<std::string, IntakeQueue> intake_;  // by caller
  std::deque<std::string> intake_turns_;       // callers with requests, next first
  std::size_t intake_jobs_ = 0, unverified_jobs_ = 0;
  std::deque<std::function<void()>> expired_;  // lane jobs' `expired`: before any intake
  std::map<std::string, Lane> lanes_;
  std::deque<std::string> turns_;  // lanes with jobs, the next to serve first
  std::set<Deadline> deadlines_;   // of lane jobs with an expiry, the soonest first
  std::map<std::uint64_t, std::string> deadline_lanes_;  // job id -> its lane
  std::uint64_t next_job_id_ = 0;
  std::size_t lane_jobs_ = 0, running_ = 0, intake_running_ = 0;
  std::size_t max_intake_, max_unverified_;
  bool stopping_ = false, draining_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace airlock::server
