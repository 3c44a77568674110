#include "backend/session_pool.hpp"

namespace airlock::backend {

namespace {
// After a failed start, the pool tries that shape again no sooner than this (a template whose
// sandbox cannot start would otherwise be retried in a loop).
constexpr std::chrono::seconds kRetryAfterFailure{1};
}  // namespace

SessionPool::SessionPool(Starter start, std::chrono::milliseconds max_age)
    : start_(std::move(start)), max_age_(max_age) {}

SessionPool::~SessionPool() { shutdown(); }

void SessionPool::keep(std::vector<ReadySessions> wanted) {
  std::map<std::string, Shape> old;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    old.swap(shapes_);
    ++generation_;
    for (auto& w : wanted)
      if (w.count > 0) shapes_[w.key].wanted = std::move(w);
    for (const auto& [key, shape] : old) stats_.retired += shape.ready.size();
    if (!shapes_.empty() && !filler_.joinable()) filler_ = std::thread([this] { fill_loop(); });  // the first to keep
  }
  wake_.notify_all();
  old.clear();  // outside the lock: each ready sandbox ends here
}

std::unique_ptr<Session> SessionPool::take(const std::string& key) {
  std::unique_ptr<Session> taken;
  std::vector<std::unique_ptr<Session>> dead;  // died waiting (killed from outside): never handed out
  {
    std::lock_guard lock(mu_);
    auto it = shapes_.find(key);
    if (it == shapes_.end()) return nullptr;
    auto& ready = it->second.ready;
    it->second.taken_at = Clock::now();
    while (!ready.empty()) {
      auto candidate = std::move(ready.front().session);
      ready.pop_front();
      if (candidate->ended()) {
        ++stats_.retired;
        dead.push_back(std::move(candidate));
        continue;
      }
      taken = std::move(candidate);
      ++stats_.taken;
      break;
    }
  }
  wake_.notify_all();  // its successor
  if (taken) taken->set_warm();
  return taken;  // `dead` end here, outside the lock
}

void SessionPool::shutdown() {
  std::map<std::string, Shape> old;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    old.swap(shapes_);
    for (const auto& [key, shape] : old) stats_.retired += shape.ready.size();
  }
  wake_.notify_all();
  if (filler_.joinable()) filler_.join();
  old.clear();
}

SessionPoolStats SessionPool::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::size_t SessionPool::ready(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = shapes_.find(key);
  return it == shapes_.end() ? 0 : it->second.ready.size();
}

std::vector<std::unique_ptr<Session>> SessionPool::take_stale(Clock::time_point now) {
  std::vector<std::unique_ptr<Session>> stale;
  for (auto& [key, shape] : shapes_)
    for (auto it = shape.ready.begin(); it != shape.ready.end();) {
      if (now - it->since >= max_age_ || it->session->ended()) {
        stale.push_back(std::move(it->session));
        it = shape.ready.erase(it);
      } else {
        ++it;
      }
    }
  return stale;
}

SessionPool::Shape* SessionPool::next_to_start(Clock::time_point now, Clock::time_point& wake) {
  Shape* next = nullptr;
  for (auto& [key, shape] : shapes_) {
    if (!shape.ready.empty()) wake = std::min(wake, shape.ready.front().since + max_age_);
    if (shape.ready.size() + shape.starting >= shape.wanted.count) continue;
    const auto not_before = std::max(shape.retry_at, shape.taken_at + kRefillDelay);
    if (now < not_before) {
      wake = std::min(wake, not_before);
      continue;
    }
    if (!next) next = &shape;
  }
  return next;
}

void SessionPool::fill_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    if (auto stale = take_stale(now); !stale.empty()) {
      stats_.retired += stale.size();
      lock.unlock();
      stale.clear();  // they end outside the lock
      lock.lock();
      continue;
    }
    auto wake = Clock::time_point::max();
    Shape* shape = next_to_start(now, wake);
    if (!shape) {
      if (wake == Clock::time_point::max()) wake_.wait(lock);
      else wake_.wait_until(lock, wake);
      continue;
    }
    ++shape->starting;
    const ReadySessions what = shape->wanted;  // keep() may replace the shapes meanwhile
    const std::uint64_t generation = generation_;
    lock.unlock();
    auto started = start_(what);
    lock.lock();
    auto it = shapes_.find(what.key);
    const bool current = generation == generation_ && it != shapes_.end() && !stopping_;
    if (current) --it->second.starting;
    if (!started) {
      ++stats_.failed;
      if (current) it->second.retry_at = Clock::now() + kRetryAfterFailure;
      continue;
    }
    ++stats_.started;
    if (current) {
      it->second.ready.push_back({std::move(*started), Clock::now()});
      continue;
    }
    ++stats_.retired;  // started for a set that is no longer kept
    lock.unlock();
    started->reset();
    lock.lock();
  }
}

}  // namespace airlock::backend
