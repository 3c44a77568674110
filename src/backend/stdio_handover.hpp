// What a stdio sandbox's supervisor thread and its owner share (LocalSession,
// GvisorStdioSession): the supervisor launches the program and publishes its pipes and pid, or
// the start's error; start() waits for one of the two; the owner takes the pipes once, and
// waits for the end and its result. How the program is killed is each backend's own (a
// pointer it sets under `mu` while the program runs).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "backend/backend.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"

namespace airlock::backend {

struct StdioHandover {
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  enum class Phase { launching, running, ended, failed } phase = Phase::launching;
  Error start_error;
  bool kill_requested = false;  // a kill() before the program ran: done once it does
  UniqueFd stdin_w, stdout_r;
  pid_t pid = -1;
  std::optional<RunResult> result;
  std::thread supervisor, stderr_reader;

  // The supervisor: the start failed (a "setup_error" saying why).
  void fail_start(const Error& error) {
    std::lock_guard lock(mu);
    start_error = Error::make("setup_error", error.message);
    phase = Phase::failed;
    cv.notify_all();
  }
  // The supervisor: the program runs. `attach(kill_requested)` runs under `mu`: the backend
  // sets its kill target there, and kills at once when a kill was asked for already.
  template <typename Attach>
  void publish_running(UniqueFd in, UniqueFd out, pid_t program, Attach&& attach) {
    std::lock_guard lock(mu);
    stdin_w = std::move(in);
    stdout_r = std::move(out);
    pid = program;
    phase = Phase::running;
    attach(kill_requested);
    cv.notify_all();
  }
  // The supervisor: it has ended, and everything of it is gone.
  void publish_end(RunResult outcome) {
    std::lock_guard lock(mu);
    result = std::move(outcome);
    phase = Phase::ended;
    cv.notify_all();
  }

  // start(): waits until the program runs, or for the start's error (the supervisor joined).
  Status wait_launched() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return phase != Phase::launching; });
    if (phase != Phase::failed) return {};
    Error error = start_error;
    lock.unlock();
    supervisor.join();
    return error;
  }
  UniqueFd take_stdin() {
    std::lock_guard lock(mu);
    return std::move(stdin_w);
  }
  UniqueFd take_stdout() {
    std::lock_guard lock(mu);
    return std::move(stdout_r);
  }
  pid_t program_pid() const {
    std::lock_guard lock(mu);
    return pid;
  }
  bool ended() const {
    std::lock_guard lock(mu);
    return phase == Phase::ended;
  }
  std::optional<RunResult> wait_for_end(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu);
    cv.wait_for(lock, timeout, [&] { return phase == Phase::ended; });
    return result;
  }
  // The owner's destructor, after its kill().
  void join() {
    if (supervisor.joinable()) supervisor.join();
    if (stderr_reader.joinable()) stderr_reader.join();
  }
};

}  // namespace airlock::backend
