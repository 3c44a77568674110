// A gVisor sandbox with caller-owned stdio (gvisor_stdio_session.hpp): prepared on the
// caller's thread (the proxy, the directory with its bundle, the cgroup), launched and waited
// for on a supervisor thread of its own (GvisorRun: PR_SET_PDEATHSIG ties runsc to the thread
// that forked it), and removed by that thread when it ends.
#include "backend/gvisor_stdio_session.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "backend/gvisor_backend.hpp"
#include "backend/gvisor_run.hpp"
#include "backend/local_session.hpp"
#include "backend/oci_bundle.hpp"
#include "backend/sandbox_egress.hpp"
#include "backend/stderr_ring.hpp"
#include "backend/stdio_handover.hpp"
#include "sandbox/cgroup.hpp"

namespace airlock::backend {

namespace fs = std::filesystem;

namespace {

std::atomic<unsigned long> g_stdio_sequence{0};

Error stdio_step_error(const std::string& step, int err) {
  return Error::make("setup_error", "gvisor: " + step + ": " + std::strerror(err));
}

// <state_dir>/airlock-gv-<pid>-m<n>/{bundle,state}: the prefix remove_stale_runs sweeps.
GvisorRunPaths stdio_paths(const std::string& state_dir, std::string& dir) {
  GvisorRunPaths p;
  p.container_id = "airlock-gv-" + std::to_string(::getpid()) + "-m" + std::to_string(g_stdio_sequence++);
  dir = state_dir + "/" + p.container_id;
  p.bundle = dir + "/bundle";
  p.state_root = dir + "/state";
  return p;
}

}  // namespace

struct GvisorStdioSession::State : StdioHandover {
  sandbox::Spec spec;
  GvisorStdioOptions options;
  std::string dir;
  GvisorRunPaths paths;
  bool dir_made = false;
  std::unique_ptr<SandboxEgress> egress;
  sandbox::SandboxCgroup cgroup;
  StderrRing ring;
  GvisorRun* run = nullptr;  // while it runs, under `mu`; kill() goes through it

  explicit State(std::size_t ring_bytes) : ring(ring_bytes) {}

  Status prepare(const egress::EgressRules& rules);
  void remove_all();
  void supervise();
};

// Before runsc: the proxy (it rewrites the spec), the directory, the bundle, the cgroup.
Status GvisorStdioSession::State::prepare(const egress::EgressRules& rules) {
  if (auto s = sandbox::validate_spec(spec); !s) return Error::make("setup_error", "gvisor: " + s.error().message);
  if (rules.has_egress()) {
    auto prepared = SandboxEgress::prepare(spec, rules, options.rule_set, options.forbidden);
    if (!prepared) return Error::make("setup_error", "gvisor: the egress proxy: " + prepared.error().message);
    egress = std::move(*prepared);
  }
  paths = stdio_paths(options.place.state_dir, dir);
  // runsc's state root is 0700: its state file holds the spec, the environment with it.
  for (const auto& [d, mode] : {std::pair{dir, 0711}, std::pair{paths.bundle, 0711}, std::pair{paths.state_root, 0700}}) {
    if (::mkdir(d.c_str(), static_cast<mode_t>(mode)) != 0) return stdio_step_error("mkdir " + d, errno);
    dir_made = true;
  }
  if (auto s = write_oci_bundle(paths.bundle, spec); !s)
    return Error::make("setup_error", "gvisor: " + s.error().message);
  auto made = sandbox::SandboxCgroup::create(gvisor_cgroup_limits(spec.limits));
  if (!made) return Error::make("setup_error", "gvisor: the cgroup: " + made.error().message);
  cgroup = std::move(*made);
  return {};
}

// After the end, or a failed start: the container (runsc removes its own state only when it
// ended by itself), the directory, what is left in the cgroup and the cgroup.
void GvisorStdioSession::State::remove_all() {
  std::error_code ec;
  if (dir_made) {
    if (!fs::is_empty(paths.state_root, ec) && !ec)
      (void)force_delete(options.place.runsc, paths.state_root, paths.container_id);
    fs::remove_all(dir, ec);
    dir_made = false;
  }
  cgroup.kill_listed();
  (void)cgroup.remove();
}

// The supervisor thread: launch() and wait() on the same thread (PR_SET_PDEATHSIG).
void GvisorStdioSession::State::supervise() {
  auto launched = GvisorRun::launch(options.place.runsc, paths, spec, cgroup);
  if (!launched) {
    remove_all();
    return fail_start(launched.error());
  }
  GvisorRun& r = **launched;
  if (egress) egress->start(r.take_listeners());
  stderr_reader = std::thread([this, fd = r.take_stderr()]() mutable { ring.read_until_eof(std::move(fd)); });
  // From here on kill() reaches runsc.
  publish_running(r.take_stdin(), r.take_stdout(), r.pid(), [&](bool kill_asked) {
    run = &r;
    if (kill_asked) r.kill();
  });
  RunResult outcome;
  static_cast<sandbox::Outcome&>(outcome) = r.wait();
  if (egress) outcome.egress = egress->stop();
  {
    std::lock_guard lock(mu);
    run = nullptr;
  }
  launched->reset();
  remove_all();
  publish_end(std::move(outcome));
  if (options.on_end) options.on_end();
}

GvisorStdioSession::GvisorStdioSession(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<GvisorStdioSession>> GvisorStdioSession::start(sandbox::Spec spec,
                                                                      const egress::EgressRules& rules,
                                                                      GvisorStdioOptions options) {
  auto st = std::make_shared<State>(options.stderr_ring_bytes);
  spec.output_mode = sandbox::OutputMode::caller;
  spec.stdin_source = {};
  spec.tty.reset();
  spec.kill_on_output_limit = false;  // its output is the caller's: no cap applies
  spec.limits.wall_time = kSessionWallTime;
  st->spec = std::move(spec);
  st->options = std::move(options);
  if (auto s = st->prepare(rules); !s) {
    st->remove_all();
    return s.error();
  }
  st->supervisor = std::thread([raw = st.get()] { raw->supervise(); });
  if (auto launched = st->wait_launched(); !launched) return launched.error();
  return std::unique_ptr<GvisorStdioSession>(new GvisorStdioSession(std::move(st)));
}

GvisorStdioSession::~GvisorStdioSession() {
  kill();
  state_->join();
}

UniqueFd GvisorStdioSession::take_stdin() { return state_->take_stdin(); }
UniqueFd GvisorStdioSession::take_stdout() { return state_->take_stdout(); }
pid_t GvisorStdioSession::pid() const { return state_->program_pid(); }

// The cgroup's: runsc, its gofer, the Sentry and the program (the Sentry's work for the
// program is the program's cost).
std::optional<sandbox::CpuTime> GvisorStdioSession::cpu_used() const {
  std::lock_guard lock(state_->mu);
  if (!state_->run) return std::nullopt;
  const auto stats = state_->cgroup.read_cpu();
  return sandbox::CpuTime{stats.cpu_user_ns.value_or(0), stats.cpu_sys_ns.value_or(0)};
}

void GvisorStdioSession::kill() {
  std::lock_guard lock(state_->mu);
  state_->kill_requested = true;
  if (state_->run) state_->run->kill();
}

bool GvisorStdioSession::ended() const { return state_->ended(); }

std::optional<RunResult> GvisorStdioSession::wait_for_end(std::chrono::milliseconds timeout) const {
  return state_->wait_for_end(timeout);
}

std::uint64_t GvisorStdioSession::stderr_mark() const { return state_->ring.mark(); }

std::string GvisorStdioSession::stderr_since(std::uint64_t mark, std::size_t max_bytes) const {
  return state_->ring.since(mark, max_bytes);
}

const std::string& GvisorStdioSession::id() const { return state_->paths.container_id; }

}  // namespace airlock::backend
