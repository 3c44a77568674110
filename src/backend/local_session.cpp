#include "backend/local_session.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "backend/sandbox_egress.hpp"
#include "backend/stderr_ring.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::backend {

struct LocalSession::State {
  sandbox::Spec spec;
  egress::EgressRules rules;
  LocalSessionOptions options;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  enum class Phase { launching, running, ended, failed } phase = Phase::launching;
  Error start_error;
  sandbox::Sandbox* sandbox = nullptr;  // while it runs; kill() goes through it
  bool kill_requested = false;
  UniqueFd stdin_w, stdout_r;
  pid_t pid = -1;
  std::optional<RunResult> result;
  std::unique_ptr<StderrRing> stderr_ring;

  std::thread supervisor, stderr_reader;
};

namespace {

using State = LocalSession::State;

void fail_start(State& st, Error error) {
  std::lock_guard lock(st.mu);
  st.start_error = Error::make("setup_error", std::move(error.message));
  st.phase = State::Phase::failed;
  st.cv.notify_all();
}

// Hands the pipes over; from here on kill() reaches the sandbox.
void publish_running(State& st, sandbox::Sandbox& sb) {
  std::lock_guard lock(st.mu);
  st.sandbox = &sb;
  st.stdin_w = sb.take_stdin();
  st.stdout_r = sb.take_stdout();
  st.pid = sb.pid();
  st.phase = State::Phase::running;
  if (st.kill_requested) sb.kill();
  st.cv.notify_all();
}

void publish_end(State& st, RunResult result) {
  std::lock_guard lock(st.mu);
  st.sandbox = nullptr;
  st.result = std::move(result);
  st.phase = State::Phase::ended;
  st.cv.notify_all();
}

// The supervisor thread: launch() and wait() on the same thread (PR_SET_PDEATHSIG).
void supervise(State& st) {
  sandbox::Spec spec = st.spec;
  std::unique_ptr<SandboxEgress> egress;  // outlives the sandbox
  if (st.rules.has_egress()) {
    auto prepared = SandboxEgress::prepare(spec, st.rules, st.options.rule_set,
                                           st.options.forbidden);
    if (!prepared) return fail_start(st, prepared.error());
    egress = std::move(*prepared);
  }
  auto launched = sandbox::Sandbox::launch(spec);
  if (!launched) return fail_start(st, launched.error());
  sandbox::Sandbox& sb = **launched;
  RunResult result;
  {
    SandboxRegistration registration(st.options.registry, &sb);
    if (egress) egress->start(sb.take_listeners());
    st.stderr_reader = std::thread([ring = st.stderr_ring.get(), fd = sb.take_stderr()]() mutable {
      ring->read_until_eof(std::move(fd));
    });
    publish_running(st, sb);
    static_cast<sandbox::Outcome&>(result) = sb.wait();
    if (egress) result.egress = egress->stop();
  }
  publish_end(st, std::move(result));
  if (st.options.on_end) st.options.on_end();
}

}  // namespace

LocalSession::LocalSession(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<LocalSession>> LocalSession::start(sandbox::Spec spec,
                                                          const egress::EgressRules& rules,
                                                          LocalSessionOptions options) {
  auto st = std::make_shared<State>();
  spec.output_mode = sandbox::OutputMode::caller;
  spec.stdin_source = {};
  spec.tty.reset();
  spec.limits.wall_time = kSessionWallTime;
  st->spec = std::move(spec);
  st->rules = rules;
  st->stderr_ring = std::make_unique<StderrRing>(options.stderr_ring_bytes);
  st->options = std::move(options);
  st->supervisor = std::thread(supervise, std::ref(*st));
  std::unique_lock lock(st->mu);
  st->cv.wait(lock, [&] { return st->phase != State::Phase::launching; });
  if (st->phase == State::Phase::failed) {
    Error error = st->start_error;
    lock.unlock();
    st->supervisor.join();
    return error;
  }
  lock.unlock();
  return std::unique_ptr<LocalSession>(new LocalSession(std::move(st)));
}

LocalSession::~LocalSession() {
  kill();
  if (state_->supervisor.joinable()) state_->supervisor.join();
  if (state_->stderr_reader.joinable()) state_->stderr_reader.join();
}

UniqueFd LocalSession::take_stdin() {
  std::lock_guard lock(state_->mu);
  return std::move(state_->stdin_w);
}

UniqueFd LocalSession::take_stdout() {
  std::lock_guard lock(state_->mu);
  return std::move(state_->stdout_r);
}

pid_t LocalSession::pid() const {
  std::lock_guard lock(state_->mu);
  return state_->pid;
}

std::optional<sandbox::CpuTime> LocalSession::cpu_used() const {
  std::lock_guard lock(state_->mu);  // the sandbox is there until publish_end
  return state_->sandbox ? state_->sandbox->cpu_used() : std::nullopt;
}

void LocalSession::kill() {
  std::lock_guard lock(state_->mu);
  state_->kill_requested = true;
  if (state_->sandbox) state_->sandbox->kill();
}

bool LocalSession::ended() const {
  std::lock_guard lock(state_->mu);
  return state_->phase == State::Phase::ended;
}

std::optional<RunResult> LocalSession::wait_for_end(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mu);
  state_->cv.wait_for(lock, timeout, [&] { return state_->phase == State::Phase::ended; });
  return state_->result;
}

std::uint64_t LocalSession::stderr_mark() const { return state_->stderr_ring->mark(); }

std::string LocalSession::stderr_since(std::uint64_t mark, std::size_t max_bytes) const {
  return state_->stderr_ring->since(mark, max_bytes);
}

}  // namespace airlock::backend
