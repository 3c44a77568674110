#include "server/executor.hpp"

namespace airlock::server {

InvocationExecutor::InvocationExecutor(unsigned workers, unsigned queue_length)
    : max_intake_(static_cast<std::size_t>(workers) + queue_length) {
  for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(false); });
  threads_.emplace_back([this] { work(true); });
}

InvocationExecutor::~InvocationExecutor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

bool InvocationExecutor::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (draining_ || stopping_) return false;
    if (intake_.size() >= max_intake_) return false;
    intake_.push_back(std::move(job));
  }
  wake_.notify_all();  // the intake thread, or an idle worker
  return true;
}

void InvocationExecutor::submit_to_lane(const std::string& lane, unsigned weight, std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    Lane& l = lanes_[lane];
    l.weight = weight == 0 ? 1 : weight;
    if (l.jobs.empty()) turns_.push_back(lane);
    l.jobs.push_back(std::move(job));
    ++lane_jobs_;
  }
  wake_.notify_all();  // not the intake thread alone
}

std::size_t InvocationExecutor::queued() const {
  std::lock_guard lock(mu_);
  return intake_.size() + lane_jobs_;
}

std::size_t InvocationExecutor::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

bool InvocationExecutor::drain(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  draining_ = true;
  return idle_.wait_for(lock, timeout, [this] {
    return intake_.empty() && lane_jobs_ == 0 && running_ == 0 && intake_running_ == 0;
  });
}

bool InvocationExecutor::has_work(bool intake_only) const {
  return !intake_.empty() || (!intake_only && lane_jobs_ > 0);
}

bool InvocationExecutor::take(bool intake_only, std::function<void()>& job, bool& from_lane) {
  if (!intake_.empty()) {
    job = std::move(intake_.front());
    intake_.pop_front();
    from_lane = false;
    return true;
  }
  if (intake_only || turns_.empty()) return false;
  const std::string name = turns_.front();
  Lane& lane = lanes_.at(name);
  job = std::move(lane.jobs.front());
  lane.jobs.pop_front();
  --lane_jobs_;
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

void InvocationExecutor::work(bool intake_only) {
  for (;;) {
    std::function<void()> job;
    bool from_lane = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || has_work(intake_only); });
      if (!take(intake_only, job, from_lane)) return;  // stopping, nothing left for this thread
      ++(from_lane ? running_ : intake_running_);
    }
    job();
    {
      std::lock_guard lock(mu_);
      --(from_lane ? running_ : intake_running_);
      if (intake_.empty() && lane_jobs_ == 0 && running_ == 0 && intake_running_ == 0) idle_.notify_all();
    }
  }
}

}  // namespace airlock::server
