// Session sandboxes started ahead of demand (a session template's warmPool, docs/sessions.md):
// a creation takes a ready one, so the sandbox's start (namespaces, root, cgroup, init,
// egress proxy) is off its path, and one thread of the pool starts the next in the
// background. A ready sandbox is a session that nobody owns yet: no credentials, no files, no
// process but its init; it is handed out once, never back. Ready ones end when the set to keep
// changes (a reload), when they have waited max_age, and at shutdown.
//
// A successor starts kRefillDelay after the last take, not at once: starting a sandbox clones
// the whole daemon process, which holds its memory map while it copies it, and the creation
// that took the ready one (its records, its first exec) would run beside that and wait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/session_backend.hpp"
#include "common/result.hpp"

namespace airlock::backend {

inline constexpr std::chrono::milliseconds kRefillDelay{30};

struct SessionPoolStats {
  std::uint64_t started = 0;  // sandboxes started for the pool
  std::uint64_t failed = 0;   // starts that failed (retried after a pause)
  std::uint64_t taken = 0;    // handed to a creation
  std::uint64_t retired = 0;  // ended unused: aged, replaced by a reload, shutdown, or dead
};

class SessionPool {
 public:
  using Starter = std::function<Result<std::unique_ptr<Session>>(const ReadySessions&)>;
  // `start` starts one sandbox (on the pool's thread). A ready one that has waited `max_age`
  // ends and is replaced: its sandbox's own wall clock ran from its start, not its creation.
  SessionPool(Starter start, std::chrono::milliseconds max_age);
  ~SessionPool();  // shutdown()
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // From now on keeps `wanted` ready; every ready sandbox of the previous set ends.
  void keep(std::vector<ReadySessions> wanted);
  // A ready sandbox of `key`, marked warm, or null when none is; the pool starts its successor.
  std::unique_ptr<Session> take(const std::string& key);
  // Ends every ready sandbox and starts none from now on.
  void shutdown();
  SessionPoolStats stats() const;
  std::size_t ready(const std::string& key) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Ready {
    std::unique_ptr<Session> session;
    Clock::time_point since;
  };
  struct Shape {
    ReadySessions wanted;
    std::deque<Ready> ready;
    unsigned starting = 0;
    Clock::time_point retry_at{};  // after a failed start
    Clock::time_point taken_at{};  // the last take: its successor starts kRefillDelay later
  };
  void fill_loop();
  // Under mu_: a shape short of ready sandboxes that may start one now, or null; and when to
  // look again otherwise (the next retry or the oldest one's age).
  Shape* next_to_start(Clock::time_point now, Clock::time_point& wake);
  // Under mu_: the ready sandboxes that have waited too long or died, out of the shapes.
  std::vector<std::unique_ptr<Session>> take_stale(Clock::time_point now);

  Starter start_;
  std::chrono::milliseconds max_age_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Shape> shapes_;
  std::uint64_t generation_ = 0;  // keep() calls: a start under an older set is not kept
  bool stopping_ = false;
  SessionPoolStats stats_;
  std::thread filler_;  // started by the first keep() that wants any
};

}  // namespace airlock::backend
