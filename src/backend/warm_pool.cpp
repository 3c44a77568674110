#include "backend/warm_pool.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <optional>
#include <utility>

namespace airlock::backend {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kReadyTimeout = 10s;         // for Python to start and import the tool
constexpr auto kRelaunchAfterFailure = 1s;  // a template that never got ready is not relaunched sooner

}  // namespace

// One running template. Retired: takes no more calls; told to exit once its last call ended.
// Its preparer thread keeps kPreparedChildren children started for calls shaped as `shape`
// (the last call's Spec): a call takes one (take_prepared) and the preparer starts the next.
struct WarmPool::Live {
  std::unique_ptr<sandbox::WarmTemplate> tmpl;
  Clock::time_point born = Clock::now();
  std::mutex mu;
  std::condition_variable wake;  // the preparer's
  std::uint32_t calls = 0;
  unsigned in_flight = 0;
  bool retired = false;
  bool ended = false;  // the template has ended: its children with it
  std::optional<sandbox::Spec> shape;
  std::deque<std::unique_ptr<sandbox::Sandbox>> prepared;
  std::thread preparer;

  void end_call() {
    std::lock_guard lock(mu);
    if (--in_flight == 0 && retired) tmpl->retire();
  }
  // Its preparer stops and destroys the children it prepared (on its own thread: this is
  // called with the pool's lock held).
  void retire() {
    std::lock_guard lock(mu);
    retired = true;
    wake.notify_all();
    if (in_flight == 0) tmpl->retire();
  }
  void end() {
    std::lock_guard lock(mu);
    ended = true;
    wake.notify_all();
  }
  std::optional<sandbox::Spec> last_shape() {
    std::lock_guard lock(mu);
    return shape;
  }
  void set_shape(std::optional<sandbox::Spec> s) {
    std::lock_guard lock(mu);
    if (!shape) shape = std::move(s);
    wake.notify_all();
  }

  // A prepared child for `call`, or null. A call of another shape (a new configuration)
  // discards the children prepared for the old one and becomes the shape to prepare.
  std::unique_ptr<sandbox::Sandbox> take_prepared(const sandbox::Spec& call) {
    std::unique_ptr<sandbox::Sandbox> taken;
    std::deque<std::unique_ptr<sandbox::Sandbox>> discarded;  // destroyed after the unlock
    std::lock_guard lock(mu);
    if (retired) return taken;
    if (!shape || !sandbox::same_sandbox(*shape, call)) {
      shape = call;
      shape->stdin_source = {};  // a prepared child holds no input
      discarded.swap(prepared);
    } else if (!prepared.empty()) {
      taken = std::move(prepared.front());
      prepared.pop_front();
    }
    wake.notify_all();
    return taken;
  }

  // The preparer thread, until the template retires or ends.
  void prepare_ahead() {
    std::unique_lock lock(mu);
    for (;;) {
      wake.wait(lock, [&] {
        return retired || ended || (shape && prepared.size() < kPreparedChildren);
      });
      if (retired || ended) break;
      const sandbox::Spec spec = *shape;
      lock.unlock();
      auto child = tmpl->start_call(spec);
      lock.lock();
      if (!child) {  // the template is ending, or cannot start a child: calls start their own
        wake.wait_for(lock, kRelaunchAfterFailure, [&] { return retired || ended; });
        continue;
      }
      if (retired || ended || !shape || !sandbox::same_sandbox(*shape, spec)) {
        auto stale = std::move(*child);
        lock.unlock();
        stale.reset();
        lock.lock();
        continue;
      }
      prepared.push_back(std::move(*child));
    }
    std::deque<std::unique_ptr<sandbox::Sandbox>> discarded;
    discarded.swap(prepared);
    lock.unlock();
  }

  std::size_t prepared_count() {
    std::lock_guard lock(mu);
    return prepared.size();
  }
};

WarmPool::Lease& WarmPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    live_ = std::move(other.live_);
  }
  return *this;
}

WarmPool::Lease::~Lease() { release(); }

void WarmPool::Lease::release() {
  if (live_) live_->end_call();
  live_.reset();
}

Result<std::unique_ptr<sandbox::Sandbox>> WarmPool::Lease::start_call(
    const sandbox::Spec& call) const {
  // A child prepared by a template that has just died is dying too (its PR_SET_PDEATHSIG
  // may not have landed yet): it is not handed a call.
  if (auto child = live_->tmpl->has_ended() ? nullptr : live_->take_prepared(call)) {
    if (child->hand_over(call)) return child;
    // It ended or misbehaved while it waited (its template died): start one for this call.
  }
  return live_->tmpl->start_call(call);
}

WarmPool::WarmPool(unsigned max_templates) : max_templates_(max_templates) {}

WarmPool::~WarmPool() {
  shutdown();
  std::list<std::pair<std::thread, std::shared_ptr<bool>>> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (auto& [t, done] : threads) t.join();
}

void WarmPool::shutdown() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  for (auto& live : all_) live->tmpl->kill();
  entries_.clear();
}

WarmPoolStats WarmPool::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::size_t WarmPool::prepared_children() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& live : all_) n += live->prepared_count();
  return n;
}

std::size_t WarmPool::ready_templates() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [key, e] : entries_) n += e.current != nullptr;
  return n;
}

WarmPool::Lease WarmPool::lease(const std::string& key, const sandbox::Spec& template_spec,
                                const WarmSettings& settings, std::string& why_cold) {
  std::lock_guard lock(mu_);
  join_finished_threads();
  if (stopping_) {
    why_cold = "the daemon is stopping";
    return {};
  }
  Entry& entry = entries_[key];
  entry.last_used = Clock::now();
  if (auto live = entry.current) {
    std::lock_guard live_lock(live->mu);
    ++live->in_flight;
    // Due for recycling: its successor starts now and takes over once ready (serve_template
    // retires this one then), so recycling sends no call cold.
    if ((++live->calls >= settings.recycle_calls ||
         Clock::now() - live->born >= settings.recycle_after) &&
        !entry.starting && Clock::now() - entry.failed_at >= kRelaunchAfterFailure)
      start_template(key, entry, template_spec);
    return Lease(std::move(live));
  }
  if (entry.starting) {
    why_cold = "its warm template is starting";
  } else if (!entry.last_error.empty() && Clock::now() - entry.failed_at < kRelaunchAfterFailure) {
    why_cold = "its warm template failed to start: " + entry.last_error;
  } else if (templates_in_use() >= max_templates_ && !evict_least_recent(key)) {
    why_cold = "server.maxWarmTemplates (" + std::to_string(max_templates_) + ") templates run";
  } else {
    why_cold = entry.last_error.empty() ? "no warm template was ready (starting one)"
                                        : "its warm template failed to start: " + entry.last_error;
    start_template(key, entry, template_spec);
  }
  return {};
}

std::size_t WarmPool::templates_in_use() const {
  std::size_t n = 0;
  for (const auto& [key, e] : entries_) n += (e.current != nullptr || e.starting);
  return n;
}

// Another tool's template, the one used longest ago, makes room (a configuration changed).
bool WarmPool::evict_least_recent(const std::string& except) {
  auto oldest = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->first != except && it->second.current &&
        (oldest == entries_.end() || it->second.last_used < oldest->second.last_used))
      oldest = it;
  if (oldest == entries_.end()) return false;
  oldest->second.current->retire();
  entries_.erase(oldest);
  return true;
}

void WarmPool::start_template(const std::string& key, Entry& entry, const sandbox::Spec& spec) {
  entry.starting = true;
  auto done = std::make_shared<bool>(false);
  threads_.emplace_back(
      std::thread([this, key, spec, done] {
        serve_template(key, spec);
        std::lock_guard lock(mu_);
        *done = true;
      }),
      done);
}

void WarmPool::join_finished_threads() {
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (*it->second) {
      it->first.join();
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

// The template's thread: it launches the template (which is tied to this thread), then
// supervises it until it ends; one that ends while still taking calls is replaced at once.
void WarmPool::serve_template(std::string key, sandbox::Spec spec) {
  std::optional<sandbox::Spec> shape;  // what the template it replaces prepared
  for (;;) {
    auto launched = sandbox::WarmTemplate::launch(spec, kReadyTimeout);
    auto live = std::make_shared<Live>();
    {
      std::lock_guard lock(mu_);
      auto it = entries_.find(key);
      if (!launched) {
        ++stats_.templates_failed;
        if (it != entries_.end()) {
          it->second.starting = false;
          it->second.last_error = launched.error().message;
          it->second.failed_at = Clock::now();
        }
        return;
      }
      live->tmpl = std::move(*launched);
      ++stats_.templates_started;
      if (stopping_ || it == entries_.end()) {
        live->tmpl->kill();
      } else {
        it->second.starting = false;
        it->second.last_error.clear();
        if (auto predecessor = std::exchange(it->second.current, live)) {
          if (!shape) shape = predecessor->last_shape();
          predecessor->retire();  // exits once its last call has ended
          ++stats_.templates_recycled;
        }
        all_.push_back(live);
      }
    }
    live->set_shape(std::move(shape));
    live->preparer = std::thread([live] { live->prepare_ahead(); });
    (void)live->tmpl->wait();
    live->end();
    live->preparer.join();
    shape = live->last_shape();
    std::lock_guard lock(mu_);
    all_.remove(live);
    auto it = entries_.find(key);
    const bool still_current = it != entries_.end() && it->second.current == live;
    if (!still_current || stopping_) return;  // retired (its successor is under way) or stopping
    ++stats_.templates_died;
    it->second.current.reset();
    it->second.starting = true;  // replaced at once, on this thread
  }
}

}  // namespace airlock::backend
