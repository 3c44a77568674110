#include "backend/gvisor_backend.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "backend/gvisor_run.hpp"
#include "backend/local.hpp"
#include "backend/oci_bundle.hpp"
#include "backend/runsc_platform.hpp"
#include "backend/sandbox_egress.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::backend {
namespace {

namespace fs = std::filesystem;

const std::string kRunPrefix = "airlock-gv-";
std::atomic<unsigned long> g_run_sequence{0};

bool write_stdin_file(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The run's directory: <state_dir>/airlock-gv-<pid>-<n>/{bundle,state,stdin}. Removed (after
// its container is force-deleted) when the run ends, whatever happened.
class RunDirectory {
 public:
  RunDirectory(const RunscInvocation& runsc, const std::string& state_dir) : runsc_(runsc) {
    paths_.container_id =
        kRunPrefix + std::to_string(::getpid()) + "-" + std::to_string(g_run_sequence++);
    dir_ = state_dir + "/" + paths_.container_id;
    paths_.bundle = dir_ + "/bundle";
    paths_.state_root = dir_ + "/state";
    paths_.stdin_file = dir_ + "/stdin";
  }
  ~RunDirectory() {
    if (!made_) return;
    // runsc removes its state when the container ended by itself; a killed one leaves it.
    std::error_code empty_ec;
    if (!fs::is_empty(paths_.state_root, empty_ec) && !empty_ec)
      (void)force_delete(runsc_, paths_.state_root, paths_.container_id);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  Status make(const sandbox::Spec& spec, const std::string& stdin_bytes) {
    // runsc's state root is 0700: its state file (0640) holds the spec, the environment with it.
    for (const auto& [d, mode] : {std::pair{dir_, 0711}, std::pair{paths_.bundle, 0711}, std::pair{paths_.state_root, 0700}}) {
      if (::mkdir(d.c_str(), static_cast<mode_t>(mode)) != 0)
        return Error::make("setup_error", "gvisor: mkdir " + d + ": " + std::strerror(errno));
      made_ = true;
    }
    // Made 0600 from the start: the input may hold what only this run should read.
    UniqueFd in(::open(paths_.stdin_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!in || !write_stdin_file(in.get(), stdin_bytes))
      return Error::make("setup_error", "gvisor: cannot write " + paths_.stdin_file + ": " + std::strerror(errno));
    return write_oci_bundle(paths_.bundle, spec);
  }
  const GvisorRunPaths& paths() const { return paths_; }

 private:
  const RunscInvocation& runsc_;
  std::string dir_;
  GvisorRunPaths paths_;
  bool made_ = false;
};

// The limits are the cgroup's: without memory and pids controllers they could not hold.
Status check_cgroup_support() {
  const auto& support = sandbox::cgroup_support();
  if (support.limits_memory() && support.limits_pids()) return {};
  return Error::make("gvisor",
                     "the gvisor backend enforces memory and pids limits through a cgroup, and "
                     "none with both controllers is usable here (" +
                         (support.why_not.empty() ? std::string("no cgroup") : support.why_not) +
                         "): delegate a cgroup subtree to this user (docs/gvisor.md), or set "
                         "tiers.<risk>.backend to another backend");
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

sandbox::Limits gvisor_cgroup_limits(const sandbox::Limits& tool) {
  sandbox::Limits l = tool;
  l.memory_bytes += kGvisorMemoryOverheadBytes;
  l.pids += kGvisorPidsOverhead;
  return l;
}

int remove_stale_runs(const RunscInvocation& runsc, const std::string& state_dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(state_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kRunPrefix, 0) != 0) continue;
    const std::string rest = name.substr(kRunPrefix.size());
    const pid_t pid = static_cast<pid_t>(std::strtol(rest.c_str(), nullptr, 10));
    if (pid <= 0 || (pid != ::getpid() && process_alive(pid))) continue;
    if (pid == ::getpid()) continue;  // ours: a run in flight
    (void)force_delete(runsc, entry.path().string() + "/state", name);
    // A session's workspace is a tmpfs of its own (gvisor_session.hpp).
    ::umount2((entry.path().string() + "/workspace").c_str(), MNT_DETACH);
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
    ++removed;
  }
  return removed;
}

Status write_request_bundle(const RunRequest& request, const std::string& dir) {
  return write_oci_bundle(dir, local_spec(request));
}

GvisorBackend::GvisorBackend(RunscInvocation runsc, GvisorOptions options)
    : runsc_(std::move(runsc)),
      state_dir_(std::move(options.state_dir)),
      forbidden_(std::move(options.forbidden)) {}

GvisorBackend::~GvisorBackend() { shutdown(); }

Result<std::unique_ptr<GvisorBackend>> GvisorBackend::create(const GvisorOptions& options) {
  auto platform = detect_runsc_platform(options.runsc, options.platform);
  if (!platform) return platform.error();
  if (auto s = check_cgroup_support(); !s) return s.error();
  if (options.state_dir.empty() || options.state_dir[0] != '/')
    return Error::make("gvisor", "the state directory must be an absolute path");
  std::error_code ec;
  fs::create_directories(options.state_dir, ec);
  if (ec) return Error::make("gvisor", "mkdir " + options.state_dir + ": " + ec.message());
  RunscInvocation runsc{platform->runsc, platform->platform, ::geteuid() != 0};
  (void)remove_stale_runs(runsc, options.state_dir);
  return std::unique_ptr<GvisorBackend>(new GvisorBackend(std::move(runsc), options));
}

void GvisorBackend::add(GvisorRun* run) {
  std::lock_guard lock(mu_);
  running_.insert(run);
  if (stopping_) run->kill();
}

void GvisorBackend::remove(GvisorRun* run) {
  std::lock_guard lock(mu_);
  running_.erase(run);
}

std::size_t GvisorBackend::running() const {
  std::lock_guard lock(mu_);
  return running_.size();
}

void GvisorBackend::shutdown() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  for (auto* run : running_) run->kill();
}

RunResult GvisorBackend::run(const RunRequest& request, const RunContext& context) {
  if (request.argv.empty()) return setup_failure("gvisor: the request has no argv");
  sandbox::Spec spec = local_spec(request);
  if (auto s = sandbox::validate_spec(spec); !s) return setup_failure(s.error().message);
  // Declared first: the proxy outlives the run (as in run_local).
  std::unique_ptr<SandboxEgress> egress;
  if (request.egress.has_egress()) {
    auto prepared = SandboxEgress::prepare(spec, request.egress, context.rule_set,
                                           forbidden_ ? *forbidden_ : std::vector<egress::Endpoint>{});
    if (!prepared) return setup_failure(prepared.error().message);
    egress = std::move(*prepared);
  }
  auto cgroup = sandbox::SandboxCgroup::create(gvisor_cgroup_limits(spec.limits));
  if (!cgroup) return setup_failure(cgroup.error().message);
  RunDirectory dir(runsc_, state_dir_);
  if (auto s = dir.make(spec, request.stdin_bytes); !s) return setup_failure(s.error().message);
  auto launched = GvisorRun::launch(runsc_, dir.paths(), spec, *cgroup);
  if (!launched) return setup_failure(launched.error().message);
  auto& run = *launched;
  add(run.get());
  RunResult result;
  {
    CancelHook hook(context.cancel, [r = run.get()] { r->kill(); });
    if (egress) egress->start(run->take_listeners());
    static_cast<sandbox::Outcome&>(result) = run->wait();
  }
  remove(run.get());
  if (egress) result.egress = egress->stop();
  run.reset();
  cgroup->kill_listed();  // nothing of the run outlives it (the cgroup's rmdir needs it empty)
  return result;
}

}  // namespace airlock::backend
