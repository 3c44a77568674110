#include "backend/local_session.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "backend/sandbox_egress.hpp"
#include "backend/stderr_ring.hpp"
#include "backend/stdio_handover.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::backend {

struct LocalSession::State : StdioHandover {
  sandbox::Spec spec;
  egress::EgressRules rules;
  LocalSessionOptions options;
  sandbox::Sandbox* sandbox = nullptr;  // while it runs, under `mu`; kill() goes through it
  std::unique_ptr<StderrRing> stderr_ring;
};

namespace {

using State = LocalSession::State;

// The supervisor thread: launch() and wait() on the same thread (PR_SET_PDEATHSIG).
void supervise(State& st) {
  sandbox::Spec spec = st.spec;
  std::unique_ptr<SandboxEgress> egress;  // outlives the sandbox
  if (st.rules.has_egress()) {
    auto prepared = SandboxEgress::prepare(spec, st.rules, st.options.rule_set,
                                           st.options.forbidden);
    if (!prepared) return st.fail_start(prepared.error());
    egress = std::move(*prepared);
  }
  auto launched = sandbox::Sandbox::launch(spec);
  if (!launched) return st.fail_start(launched.error());
  sandbox::Sandbox& sb = **launched;
  RunResult result;
  {
    SandboxRegistration registration(st.options.registry, &sb);
    if (egress) egress->start(sb.take_listeners());
    st.stderr_reader = std::thread([ring = st.stderr_ring.get(), fd = sb.take_stderr()]() mutable {
      ring->read_until_eof(std::move(fd));
    });
    // From here on kill() reaches the sandbox.
    st.publish_running(sb.take_stdin(), sb.take_stdout(), sb.pid(), [&](bool kill_asked) {
      st.sandbox = &sb;
      if (kill_asked) sb.kill();
    });
    static_cast<sandbox::Outcome&>(result) = sb.wait();
    if (egress) result.egress = egress->stop();
    std::lock_guard lock(st.mu);
    st.sandbox = nullptr;
  }
  st.publish_end(std::move(result));
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
  if (auto launched = st->wait_launched(); !launched) return launched.error();
  return std::unique_ptr<LocalSession>(new LocalSession(std::move(st)));
}

LocalSession::~LocalSession() {
  kill();
  state_->join();
}

UniqueFd LocalSession::take_stdin() { return state_->take_stdin(); }
UniqueFd LocalSession::take_stdout() { return state_->take_stdout(); }
pid_t LocalSession::pid() const { return state_->program_pid(); }

std::optional<sandbox::CpuTime> LocalSession::cpu_used() const {
  std::lock_guard lock(state_->mu);  // the sandbox is there until publish_end
  return state_->sandbox ? state_->sandbox->cpu_used() : std::nullopt;
}

void LocalSession::kill() {
  std::lock_guard lock(state_->mu);
  state_->kill_requested = true;
  if (state_->sandbox) state_->sandbox->kill();
}

bool LocalSession::ended() const { return state_->ended(); }

std::optional<RunResult> LocalSession::wait_for_end(std::chrono::milliseconds timeout) const {
  return state_->wait_for_end(timeout);
}

std::uint64_t LocalSession::stderr_mark() const { return state_->stderr_ring->mark(); }

std::string LocalSession::stderr_since(std::uint64_t mark, std::size_t max_bytes) const {
  return state_->stderr_ring->since(mark, max_bytes);
}

}  // namespace airlock::backend
