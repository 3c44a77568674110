// A one-shot cancellation that a running step can hook: whoever runs something stoppable
// (a sandbox, a call to an MCP server) sets a handler while it runs; cancel() from any
// thread calls it, at once or as soon as one is set. Used by `notifications/cancelled`.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>

namespace airlock {

class CancelSignal {
 public:
  void cancel() {
    std::function<void()> handler;
    {
      std::lock_guard lock(mu_);
      if (cancelled_.exchange(true)) return;
      handler = handler_;
    }
    if (handler) handler();
  }
  bool cancelled() const { return cancelled_.load(); }

  // While `handler` is set, cancel() calls it (once). If already cancelled, it is called now.
  // Clear it (set an empty one) before what it stops is gone.
  void set_handler(std::function<void()> handler) {
    bool call_now = false;
    {
      std::lock_guard lock(mu_);
      handler_ = std::move(handler);
      call_now = cancelled_.load() && handler_;
    }
    if (call_now) handler_();
  }

 private:
  std::mutex mu_;
  std::atomic<bool> cancelled_{false};
  std::function<void()> handler_;
};

// Sets a handler for a scope, and clears it when the scope ends.
class CancelHook {
 public:
  CancelHook(CancelSignal* signal, std::function<void()> handler) : signal_(signal) {
    if (signal_) signal_->set_handler(std::move(handler));
  }
  ~CancelHook() {
    if (signal_) signal_->set_handler({});
  }
  CancelHook(const CancelHook&) = delete;
  CancelHook& operator=(const CancelHook&) = delete;

 private:
  CancelSignal* signal_;
};

}  // namespace airlock
