#include "server/core/executor.hpp"

#include <algorithm>

namespace airlock::server {

InvocationExecutor::InvocationExecutor(unsigned workers, unsigned queue_length)
    : max_intake_(static_cast<std::size_t>(workers) + queue_length),
      max_unverified_(std::max<std::size_t>(1, max_intake_ / 2)) {
  for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(false); });
  threads_.emplace_back([this] { work(true); });
}

InvocationExecutor::~InvocationExecutor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  intake_wake_.notify_all();
  worker_wake_.notify_all();
  for (auto& t : threads_) t.join();
}

bool InvocationExecutor::submit(const IntakeCaller& caller, std::function<void()> job,
                                std::function<void()> displaced) {
  std::function<void()> displaced_other;
  {
    std::lock_guard lock(mu_);
    if (draining_ || stopping_) return false;
    // The unverified half first: a place taken there is one place of the whole intake too.
    const bool unverified_full = !caller.verified && unverified_jobs_ >= max_unverified_;
    if (unverified_full || intake_jobs_ >= max_intake_) {
      displaced_other = displace_for(caller.key, unverified_full);
      if (!displaced_other) return false;
    }
    auto [it, added] = intake_.try_emplace(caller.key);
    if (added) {
      it->second.verified = caller.verified;
      intake_turns_.push_back(caller.key);
    }
    it->second.jobs.push_back({std::move(job), std::move(displaced)});
    ++intake_jobs_;
    if (!it->second.verified) ++unverified_jobs_;
  }
  // The intake thread and one idle worker: either may take it (the intake thread alone when
  // every worker is busy, a worker when the intake thread is).
  intake_wake_.notify_one();
  worker_wake_.notify_one();
  if (displaced_other) displaced_other();  // answered outside the lock
  return true;
}

std::function<void()> InvocationExecutor::displace_for(const std::string& caller, bool unverified_only) {
  auto mine = intake_.find(caller);
  const std::size_t held = mine == intake_.end() ? 0 : mine->second.jobs.size();
  auto most = intake_.end();
  for (auto it = intake_.begin(); it != intake_.end(); ++it)
    if ((!unverified_only || !it->second.verified) &&
        (most == intake_.end() || it->second.jobs.size() > most->second.jobs.size()))
      most = it;
  if (most == intake_.end() || most->second.jobs.size() < held + 2 || !most->second.jobs.back().displaced)
    return nullptr;
  std::function<void()> displaced = std::move(most->second.jobs.back().displaced);
  most->second.jobs.pop_back();
  --intake_jobs_;
  if (!most->second.verified) --unverified_jobs_;
  if (most->second.jobs.empty()) {
    intake_turns_.erase(std::find(intake_turns_.begin(), intake_turns_.end(), most->first));
    intake_.erase(most);
  }
  return displaced;
}

std::function<void()> InvocationExecutor::pop_intake(const std::string& caller) {
  auto it = intake_.find(caller);
  std::function<void()> job = std::move(it->second.jobs.front().run);
  it->second.jobs.pop_front();
  --intake_jobs_;
  if (!it->second.verified) --unverified_jobs_;
  if (it->second.jobs.empty())
    intake_.erase(it);
  else
    intake_turns_.push_back(caller);
  return job;
}

void InvocationExecutor::submit_to_lane(const std::string& lane, unsigned weight, std::function<void()> job) {
  enqueue(lane, weight, LaneJob{std::move(job), std::nullopt, 0});
}

void InvocationExecutor::submit_to_lane(const std::string& lane, unsigned weight, std::function<void()> job,
                                        Expiry expiry) {
  enqueue(lane, weight, LaneJob{std::move(job), std::move(expiry), 0});
}

void InvocationExecutor::enqueue(const std::string& lane, unsigned weight, LaneJob job) {
  const bool has_expiry = job.expiry.has_value();
  {
    std::lock_guard lock(mu_);
    Lane& l = lanes_[lane];
    l.weight = weight == 0 ? 1 : weight;
    if (l.jobs.empty()) turns_.push_back(lane);
    job.id = ++next_job_id_;
    if (job.expiry) {
      deadlines_.insert({job.expiry->deadline, job.id});
      deadline_lanes_[job.id] = lane;
    }
    l.jobs.push_back(std::move(job));
    ++lane_jobs_;
  }
  worker_wake_.notify_one();  // only workers run lane jobs
  // The intake thread keeps the deadlines while the workers are busy: it waits again with
  // this one in view.
  if (has_expiry) intake_wake_.notify_one();
}

std::size_t InvocationExecutor::queued() const {
  std::lock_guard lock(mu_);
  return expired_.size() + intake_jobs_ + lane_jobs_;
}

std::size_t InvocationExecutor::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

bool InvocationExecutor::drain(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  draining_ = true;
  return idle_.wait_for(lock, timeout, [this] {
    return expired_.empty() && intake_jobs_ == 0 && lane_jobs_ == 0 && running_ == 0 && intake_running_ == 0;
  });
}

bool InvocationExecutor::has_work(bool intake_only) const {
  return !expired_.empty() || intake_jobs_ > 0 || (!intake_only && lane_jobs_ > 0);
}

bool InvocationExecutor::take(bool intake_only, std::function<void()>& job, bool& from_lane) {
  if (!expired_.empty()) {
    job = std::move(expired_.front());
    expired_.pop_front();
    from_lane = false;
    return true;
  }
  if (intake_jobs_ > 0) {  // one request of the caller whose turn it is
    const std::string caller = intake_turns_.front();
    intake_turns_.pop_front();
    job = pop_intake(caller);
    from_lane = false;
    return true;
  }
  if (intake_only || turns_.empty()) return false;
  const std::string name = turns_.front();
  Lane& lane = lanes_.at(name);
  LaneJob taken = std::move(lane.jobs.front());
  lane.jobs.pop_front();
  --lane_jobs_;
  if (taken.expiry) {
    deadlines_.erase({taken.expiry->deadline, taken.id});
    deadline_lanes_.erase(taken.id);
  }
  job = std::move(taken.run);
  from_lane = true;
  // The lane keeps its turn for `weight` jobs, then goes to the back (or away, when empty).
  if (lane.jobs.empty() || ++lane.taken_this_turn >= lane.weight) {
    lane.taken_this_turn = 0;
    turns_.pop_front();
    if (lane.jobs.empty())
      lanes_.erase(name);
    else
      turns_.push_back(name);
  }
  return true;
}

void InvocationExecutor::forget_lane_if_empty(const std::string& name) {
  auto it = lanes_.find(name);
  if (it == lanes_.end() || !it->second.jobs.empty()) return;
  lanes_.erase(it);
  turns_.erase(std::find(turns_.begin(), turns_.end(), name));
}

std::optional<std::chrono::steady_clock::time_point> InvocationExecutor::expire_due() {
  const auto now = std::chrono::steady_clock::now();
  std::size_t moved = 0;
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const std::uint64_t id = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    auto lane_of = deadline_lanes_.find(id);
    Lane& lane = lanes_.at(lane_of->second);
    auto job = std::find_if(lane.jobs.begin(), lane.jobs.end(), [id](const LaneJob& j) { return j.id == id; });
    // Ahead of any intake, in deadline order: these callers have waited longest.
    expired_.push_back(std::move(job->expiry->expired));
    ++moved;
    lane.jobs.erase(job);
    --lane_jobs_;
    forget_lane_if_empty(lane_of->second);
    deadline_lanes_.erase(lane_of);
  }
  if (moved > 0) {  // any thread answers them
    intake_wake_.notify_all();
    worker_wake_.notify_all();
  }
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

void InvocationExecutor::work(bool intake_only) {
  for (;;) {
    std::function<void()> job;
    bool from_lane = false;
    {
      std::unique_lock lock(mu_);
      for (;;) {  // every thread keeps the deadlines while it waits: none is missed
        const auto next_deadline = expire_due();
        if (stopping_ || has_work(intake_only)) break;
        auto& wake = intake_only ? intake_wake_ : worker_wake_;
        if (next_deadline)
          wake.wait_until(lock, *next_deadline);
        else
          wake.wait(lock);
      }
      if (!take(intake_only, job, from_lane)) return;  // stopping, nothing left for this thread
      ++(from_lane ? running_ : intake_running_);
    }
    job();
    {
      std::lock_guard lock(mu_);
      --(from_lane ? running_ : intake_running_);
      if (expired_.empty() && intake_jobs_ == 0 && lane_jobs_ == 0 && running_ == 0 && intake_running_ == 0)
        idle_.notify_all();
    }
  }
}

}  // namespace airlock::server
