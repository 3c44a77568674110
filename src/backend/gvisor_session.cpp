// A gVisor session (gvisor_session.hpp): its directory, its sandbox's supervisor thread, its
// execs as `runsc exec` processes and its files through the host-side helper.
#include "backend/gvisor_session.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "backend/gvisor_backend.hpp"
#include "backend/gvisor_run.hpp"
#include "backend/gvisor_session_checkpoint.hpp"
#include "backend/gvisor_session_process.hpp"
#include "backend/local.hpp"
#include "backend/oci_bundle.hpp"
#include "backend/sandbox_egress.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/session/session_protocol.hpp"

namespace airlock::backend {
namespace {

namespace fs = std::filesystem;
namespace gs = gvisor_session;
using sandbox::session_protocol::FileHeader;
using sandbox::session_protocol::FileOp;
using sandbox::session_protocol::Reply;

std::atomic<unsigned long> g_session_sequence{0};
constexpr std::chrono::seconds kStartTimeout{30};
constexpr std::chrono::seconds kCommandTimeout{10};
constexpr std::chrono::seconds kCheckpointTimeout{120};  // 100 MiB: 0.8-1.8 s here, measured

Error step_error(const std::string& step, int err) {
  return Error::make("setup_error", "gvisor session: " + step + ": " + std::strerror(err));
}

Status write_private(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) return step_error("open " + path, errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return step_error("write " + path, errno);
    done += static_cast<std::size_t>(n);
  }
  return {};
}

// The session's directory: <state_dir>/airlock-gv-<pid>-s<n>/{bundle,state,stdin,workspace,
// exec-<id>.json}. remove() force-deletes the container, unmounts the workspace and removes it all.
struct SessionDir {
  std::string dir, workspace;
  GvisorRunPaths paths;
  bool mounted = false;

  SessionDir(const std::string& state_dir, const std::string& id) {
    paths.container_id = id;
    dir = state_dir + "/" + id;
    paths.bundle = dir + "/bundle";
    paths.state_root = dir + "/state";
    paths.stdin_file = dir + "/stdin";
    workspace = dir + "/workspace";
  }

  Status make(std::uint64_t disk_bytes) {
    // runsc's state root is 0700: its state file (0640) holds the spec, the environment with it.
    for (const auto& [d, mode] :
         {std::pair{dir, 0711}, std::pair{paths.bundle, 0711}, std::pair{paths.state_root, 0700}, std::pair{workspace, 0711}})
      if (::mkdir(d.c_str(), static_cast<mode_t>(mode)) != 0) return step_error("mkdir " + d, errno);
    if (auto s = write_private(paths.stdin_file, ""); !s) return s;
    const std::string options = "size=" + std::to_string(disk_bytes) + ",mode=0755,uid=" +
                                std::to_string(sandbox::kSandboxUid) + ",gid=" + std::to_string(sandbox::kSandboxGid);
    if (::mount("tmpfs", workspace.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0)
      return step_error("mount the workspace's tmpfs on " + workspace, errno);
    mounted = true;
    return {};
  }

  void remove(const RunscInvocation& runsc) {
    std::error_code ec;
    if (!fs::is_empty(paths.state_root, ec) && !ec) (void)force_delete(runsc, paths.state_root, paths.container_id);
    if (mounted) ::umount2(workspace.c_str(), MNT_DETACH);
    mounted = false;
    fs::remove_all(dir, ec);
  }
};

// The sandbox's spec: the call's (local_spec, the proxy's listeners), `sleep infinity` as its
// init, the host workspace bound over the work dir, the session's wall time as the run's.
sandbox::Spec session_spec(const RunRequest& request) {
  sandbox::Spec spec = local_spec(request);
  spec.argv = {"/bin/sleep", "infinity"};
  spec.kill_on_output_limit = false;
  return spec;
}

// Whether any process is still listed in the cgroup (a killed sandbox's take a moment to go).
bool cgroup_has_processes(const sandbox::SandboxCgroup& cgroup) {
  for (const auto& path : cgroup.procs_files()) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    char c;
    if (fd && ::read(fd.get(), &c, 1) == 1) return true;
  }
  return false;
}

// A child of the session: an exec's `runsc exec` or a file transfer's helper.
struct Child {
  pid_t pid = -1;
  UniqueFd pidfd;
  bool runsc_exec = true;  // its exit code 128+N means the program was killed by signal N
  std::string process_file;
  std::optional<sandbox::ExecEnd> end;
};

sandbox::ExecEnd exec_end(int status, bool runsc_exec) {
  sandbox::ExecEnd e;
  if (WIFSIGNALED(status)) return {false, WTERMSIG(status), 0, 0, 0};
  const int code = WEXITSTATUS(status);
  e.exited = true;
  e.code = code;
  if (runsc_exec && code > 128 && code <= 128 + 64) {
    e.exited = false;
    e.code = code - 128;
  }
  return e;
}

class GvisorSession final : public Session {
 public:
  GvisorSession(const GvisorSessionOptions& options, const std::string& id)
      : runsc_(options.runsc), dir_(options.state_dir, id) {}
  ~GvisorSession() override { (void)end(); }

  // `image`: restored from it (runsc restore) rather than started (runsc run).
  Status start(const RunRequest& request, const RunContext& context, const GvisorSessionOptions& options,
               const MemoryImage* image = nullptr);

  Result<sandbox::StartedExec> exec(const sandbox::SessionExec& request) override { return start_exec(request, nullptr); }
  Result<sandbox::StartedExec> exec_on_terminal(const sandbox::SessionExec& request, sandbox::WindowSize size) override {
    return start_exec(request, &size);
  }
  std::optional<sandbox::ExecEnd> wait(std::uint32_t id, std::chrono::milliseconds timeout) override;
  Status signal(std::uint32_t id, int sig) override;
  RunResult end() override;
  bool ended() const override;
  std::optional<sandbox::CpuTime> cpu_used() const override;
  Status freeze(bool frozen) override;
  Status can_snapshot_memory() const override;
  Status checkpoint(const std::string& image_dir) override;
  Result<sandbox::FileTransfer> read_file(const std::string& path) override;
  Result<sandbox::FileTransfer> write_file(const std::string& path) override;
  Status remove_file(const std::string& path) override { return simple_file_op(FileOp::remove, {path}); }
  Status move_file(const std::string& from, const std::string& to) override {
    if (from.empty() || to.empty()) return Error::make("invalid_path", "the workspace itself cannot be moved");
    return simple_file_op(FileOp::move, {from, to});
  }
  Status make_directory(const std::string& path) override { return simple_file_op(FileOp::make_directory, {path}); }

 private:
  void supervise();
  bool relaunch_after();
  Status relaunched();
  Status wait_until_running();
  std::vector<std::string> runsc_args(std::initializer_list<std::string> tail) const;
  Result<sandbox::StartedExec> start_exec(const sandbox::SessionExec& request, const sandbox::WindowSize* size);
  Result<std::string> write_process_file(std::uint32_t id, const sandbox::SessionExec& request, bool terminal);
  std::uint32_t add_child(pid_t pid, bool runsc_exec, std::string process_file);
  Result<Reply> file_op(FileOp op, const std::vector<std::string>& paths, int fd);
  Status simple_file_op(FileOp op, const std::vector<std::string>& paths);
  void end_children();

  RunscInvocation runsc_;
  SessionDir dir_;
  sandbox::Spec spec_;
  std::unique_ptr<SandboxEgress> egress_;
  sandbox::SandboxCgroup cgroup_;
  gs::Namespaces ns_;
  GvisorLaunch launch_;  // how runsc starts: set before each launch, read by the supervisor
  // Held exclusively by a checkpoint from its pause until the sandbox is restored (one at a
  // time), shared by what drives the sandbox (an exec's start, pause, resume): none of them
  // meets a paused sandbox mid-checkpoint or the namespaces of one being replaced.
  std::shared_mutex sandbox_mu_;

  // The supervisor: launches runsc and waits for its end on one thread (PR_SET_PDEATHSIG).
  mutable std::mutex mu_;
  std::condition_variable cv_;
  enum class Phase { launching, running, ended, failed } phase_ = Phase::launching;
  Error start_error_;
  GvisorRun* run_ = nullptr;
  sandbox::Outcome outcome_;
  std::vector<egress::EgressRecord> records_;
  bool end_asked_ = false;
  bool relaunch_ = false;  // the sandbox ends for a checkpoint: restored from launch_.restore_image
  unsigned launches_ = 0;
  std::chrono::steady_clock::time_point first_launch_;  // the wall time counts from it
  std::thread supervisor_;

  std::map<std::uint32_t, Child> children_;  // under mu_
  std::uint32_t next_id_ = 1;

  std::mutex end_mu_;
  std::optional<RunResult> result_;
};

std::vector<std::string> GvisorSession::runsc_args(std::initializer_list<std::string> tail) const {
  auto args = runsc_.global_args(dir_.paths.state_root);
  args.insert(args.end(), tail);
  return args;
}

Status GvisorSession::start(const RunRequest& request, const RunContext& context, const GvisorSessionOptions& options,
                            const MemoryImage* image) {
  spec_ = session_spec(request);
  if (auto s = sandbox::validate_spec(spec_); !s) return s.error();
  if (request.egress.has_egress()) {
    if (image)
      return Error::make("memory_snapshot_unsupported",
                         "a snapshot with memory is restored only into a session without egress rules (runsc "
                         "cannot checkpoint or restore a sandbox on --network=host); the template has egress rules now");
    auto prepared = SandboxEgress::prepare(spec_, request.egress, context.rule_set,
                                           options.forbidden ? *options.forbidden : std::vector<egress::Endpoint>{});
    if (!prepared) return prepared.error();
    egress_ = std::move(*prepared);
  }
  launch_.network_none = !egress_;  // no network either way; --network=none is one runsc checkpoints
  if (auto s = dir_.make(spec_.limits.disk_bytes); !s) return s;
  if (image) {
    if (auto s = gs::unpack_workspace(image->workspace_archive, dir_.workspace, sandbox::kSandboxUid,
                                      sandbox::kSandboxGid, kCheckpointTimeout);
        !s)
      return s;
    launch_.restore_image = image->image_dir;
  }
  spec_.binds.push_back({dir_.workspace, spec_.workdir, true});
  if (auto s = write_oci_bundle(dir_.paths.bundle, spec_); !s) return s;
  auto cgroup = sandbox::SandboxCgroup::create(gvisor_cgroup_limits(spec_.limits));
  if (!cgroup) return cgroup.error();
  cgroup_ = std::move(*cgroup);
  supervisor_ = std::thread([this] { supervise(); });
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return phase_ != Phase::launching; });
    if (phase_ == Phase::failed) return start_error_;
  }
  return wait_until_running();
}

void GvisorSession::supervise() {
  for (;;) {
    // A relaunch (after a checkpoint) gets what is left of the session's wall time, not more.
    if (launches_++ == 0) first_launch_ = std::chrono::steady_clock::now();
    sandbox::Spec run_spec = spec_;
    const auto spent = std::chrono::steady_clock::now() - first_launch_;
    run_spec.limits.wall_time = std::max(std::chrono::milliseconds(1), spec_.limits.wall_time -
                                         std::chrono::duration_cast<std::chrono::milliseconds>(spent));
    auto launched = GvisorRun::launch(runsc_, dir_.paths, run_spec, cgroup_, launch_);
    if (!launched) {
      std::lock_guard lock(mu_);
      start_error_ = launched.error();
      phase_ = Phase::failed;
      cv_.notify_all();
      return;
    }
    auto& run = *launched;
    auto ns = gs::open_namespaces(run->pid(), runsc_.rootless);
    if (egress_) egress_->start(run->take_listeners());
    {
      std::lock_guard lock(mu_);
      if (ns) ns_ = std::move(*ns);
      run_ = run.get();
      phase_ = Phase::running;
      if (!ns) {
        start_error_ = ns.error();
        run->kill();
      }
      if (end_asked_) run->kill();
      cv_.notify_all();
    }
    sandbox::Outcome outcome = run->wait();
    if (relaunch_after()) continue;
    std::vector<egress::EgressRecord> records;
    if (egress_) records = egress_->stop();
    std::lock_guard lock(mu_);
    run_ = nullptr;
    outcome_ = std::move(outcome);
    records_ = std::move(records);
    phase_ = Phase::ended;
    cv_.notify_all();
    return;
  }
}

// After a checkpoint the sandbox was killed to be brought back from its image: once every
// process of it is gone, its runsc state is removed and the next launch restores the image
// into the same container id, directory, workspace and cgroup. False: the session ends.
bool GvisorSession::relaunch_after() {
  {
    std::lock_guard lock(mu_);
    if (!relaunch_ || end_asked_) return false;
  }
  for (int i = 0; i < 500 && cgroup_has_processes(cgroup_); ++i) {
    cgroup_.kill_listed();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::error_code ec;
  fs::remove_all(dir_.paths.state_root, ec);
  std::lock_guard lock(mu_);
  relaunch_ = false;
  run_ = nullptr;
  phase_ = Phase::launching;
  if (ec || ::mkdir(dir_.paths.state_root.c_str(), 0700) != 0) {
    start_error_ = step_error("remake " + dir_.paths.state_root, ec ? ec.value() : errno);
    phase_ = Phase::failed;
    cv_.notify_all();
    return false;
  }
  return true;
}

// runsc run has started the sandbox; its container runs once `runsc state` says so.
Status GvisorSession::wait_until_running() {
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mu_);
      if (!start_error_.message.empty()) return start_error_;
      if (phase_ == Phase::ended)
        return Error::make("setup_error", "gvisor session: runsc ended as it started: " + outcome_.message +
                                              (outcome_.stderr_data.empty() ? "" : ": " + outcome_.stderr_data));
    }
    const auto state = gs::run_in(ns_, runsc_args({"state", dir_.paths.container_id}), kCommandTimeout);
    if (state.exit_code == 0 && state.output.find("\"running\"") != std::string::npos) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Error::make("setup_error", "gvisor session: the container was not running after " +
                                        std::to_string(kStartTimeout.count()) + " s");
}

Result<std::string> GvisorSession::write_process_file(std::uint32_t id, const sandbox::SessionExec& request,
                                                      bool terminal) {
  sandbox::Spec spec = spec_;
  spec.argv = request.argv;
  for (const auto& [name, value] : request.env) spec.env[name] = value;
  nlohmann::json process = oci_process(spec);
  if (!request.cwd.empty()) process["cwd"] = request.cwd;
  process["terminal"] = terminal;
  // 0600, as config.json: the environment carries the session's credentials.
  const std::string path = dir_.dir + "/exec-" + std::to_string(id) + ".json";
  if (auto s = write_private(path, process.dump()); !s) return s.error();
  return path;
}

std::uint32_t GvisorSession::add_child(pid_t pid, bool runsc_exec, std::string process_file) {
  Child c;
  c.pid = pid;
  c.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  c.runsc_exec = runsc_exec;
  c.process_file = std::move(process_file);
  std::lock_guard lock(mu_);
  const std::uint32_t id = next_id_++;
  children_[id] = std::move(c);
  return id;
}

Result<std::pair<UniqueFd, UniqueFd>> make_pipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Error::make("exec_failed", std::string("pipe: ") + std::strerror(errno));
  return std::make_pair(UniqueFd(p[0]), UniqueFd(p[1]));
}

// A pty on the host whose slave becomes the exec's controlling terminal: runsc exec with a
// terminal process and no console socket takes its stdin's terminal for the program.
Result<std::pair<UniqueFd, UniqueFd>> make_pty(sandbox::WindowSize size) {
  UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master || ::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0)
    return Error::make("exec_failed", std::string("posix_openpt: ") + std::strerror(errno));
  char name[128];
  if (::ptsname_r(master.get(), name, sizeof name) != 0)
    return Error::make("exec_failed", std::string("ptsname: ") + std::strerror(errno));
  UniqueFd slave(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave) return Error::make("exec_failed", std::string("open ") + name + ": " + std::strerror(errno));
  winsize ws{};
  ws.ws_row = size.rows;
  ws.ws_col = size.columns;
  ::ioctl(master.get(), TIOCSWINSZ, &ws);
  return std::make_pair(std::move(master), std::move(slave));
}

Result<sandbox::StartedExec> GvisorSession::start_exec(const sandbox::SessionExec& request,
                                                       const sandbox::WindowSize* size) {
  std::shared_lock steady(sandbox_mu_);
  if (ended()) return Error::make("session_ended", "the session has ended");
  if (request.argv.empty()) return Error::make("invalid_argument", "an exec needs a program (argv)");
  if (!request.cwd.empty() && request.cwd[0] != '/') return Error::make("invalid_argument", "cwd must be absolute");
  std::uint32_t file_id;
  {
    std::lock_guard lock(mu_);
    file_id = next_id_;  // only names the file
  }
  auto file = write_process_file(file_id, request, size != nullptr);
  if (!file) return Error::make("exec_failed", file.error().message);
  sandbox::StartedExec started;
  UniqueFd in_r, out_w, err_w, slave;
  if (size) {
    auto pty = make_pty(*size);
    if (!pty) return pty.error();
    started.terminal = std::move(pty->first);
    slave = std::move(pty->second);
  } else {
    auto in = make_pipe(), out = make_pipe(), err = make_pipe();
    if (!in || !out || !err) return Error::make("exec_failed", std::string("pipe: ") + std::strerror(errno));
    in_r = std::move(in->first);
    started.stdin_w = std::move(in->second);
    started.stdout_r = std::move(out->first);
    out_w = std::move(out->second);
    started.stderr_r = std::move(err->first);
    err_w = std::move(err->second);
  }
  const int stdio[3] = {size ? slave.get() : in_r.get(), size ? slave.get() : out_w.get(),
                        size ? slave.get() : err_w.get()};
  auto pid = gs::spawn(ns_, runsc_args({"exec", "--process", *file, dir_.paths.container_id}), stdio, size != nullptr);
  if (!pid) {
    ::unlink(file->c_str());
    return Error::make("exec_failed", pid.error().message);
  }
  started.id = add_child(*pid, true, *file);
  started.pid = *pid;  // runsc exec's, on the host: the program's own pid is the Sentry's
  return started;
}

std::optional<sandbox::ExecEnd> GvisorSession::wait(std::uint32_t id, std::chrono::milliseconds timeout) {
  int pidfd;
  {
    std::lock_guard lock(mu_);
    auto it = children_.find(id);
    if (it == children_.end()) return std::nullopt;
    pidfd = it->second.pidfd.get();
  }
  pollfd p{pidfd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = children_.find(id);
  if (it == children_.end()) return std::nullopt;
  int status = 0;
  if (::waitpid(it->second.pid, &status, WNOHANG) != it->second.pid) return std::nullopt;
  const sandbox::ExecEnd end = exec_end(status, it->second.runsc_exec);
  if (!it->second.process_file.empty()) ::unlink(it->second.process_file.c_str());
  children_.erase(it);
  return end;
}

// To runsc exec, which passes it on to the program it started.
Status GvisorSession::signal(std::uint32_t id, int sig) {
  std::lock_guard lock(mu_);
  if (phase_ != Phase::running) return Error::make("session_ended", "the session has ended");
  auto it = children_.find(id);
  if (it == children_.end()) return Error::make("invalid_argument", "no exec " + std::to_string(id));
  if (::kill(it->second.pid, sig) != 0) return Error::make("exec_failed", std::string("kill: ") + std::strerror(errno));
  return {};
}

// Not while a checkpoint relaunches the sandbox (phase launching): the session lives on.
bool GvisorSession::ended() const {
  std::lock_guard lock(mu_);
  return phase_ == Phase::ended || phase_ == Phase::failed || end_asked_;
}

std::optional<sandbox::CpuTime> GvisorSession::cpu_used() const {
  if (ended()) return std::nullopt;
  const auto stats = cgroup_.read_cpu();
  return sandbox::CpuTime{stats.cpu_user_ns.value_or(0), stats.cpu_sys_ns.value_or(0)};
}

Status GvisorSession::freeze(bool frozen) {
  std::shared_lock steady(sandbox_mu_);
  if (ended()) return Error::make("session_ended", "the session has ended");
  const auto r = gs::run_in(ns_, runsc_args({frozen ? "pause" : "resume", dir_.paths.container_id}), kCommandTimeout);
  if (r.exit_code == 0) return {};
  return Error::make("freezer_unavailable",
                     std::string("runsc ") + (frozen ? "pause" : "resume") + " failed: " + r.output);
}

// Measured on a session (docs/sessions.md, "Checkpoint and restore on this machine"): runsc
// refuses to checkpoint a sandbox on --network=host, paused or running, before it writes any of
// the image; --network=sandbox, the network runsc can checkpoint, does not start on this kernel.
// A session without egress rules runs with --network=none, which it checkpoints.
Status GvisorSession::can_snapshot_memory() const {
  if (launch_.network_none) return {};
  return Error::make("memory_snapshot_unsupported",
                     "a gVisor session's memory cannot be snapshotted here when its template has egress rules: its "
                     "sandbox then runs with --network=host (in a network namespace of its own whose only sockets "
                     "are the egress proxy's), and runsc refuses to checkpoint such a sandbox (\"checkpoint not "
                     "supported when using hostinet\", runsc release 20221219); its own network stack "
                     "(--network=sandbox) does not start on this kernel; snapshot without memory (the workspace's "
                     "files), or use a template without egress rules");
}

// runsc pause, runsc checkpoint; then the session is brought back from that image, since the
// checkpointed sandbox is done for (measured: resumed, runsc 20221219's Sentry exits after a
// save; --leave-running restores a new sandbox outside this session's launcher and cgroup).
Status GvisorSession::checkpoint(const std::string& image_dir) {
  if (auto can = can_snapshot_memory(); !can) return can;
  std::unique_lock replacing(sandbox_mu_);
  if (ended()) return Error::make("session_ended", "the session has ended");
  const std::string& id = dir_.paths.container_id;
  auto failed = [](const std::string& step, const CommandResult& r) {
    return Error::make("snapshot_failed", "gvisor session: runsc " + step + " failed (exit " +
                                              std::to_string(r.exit_code) + (r.timed_out ? ", timed out" : "") +
                                              "): " + r.output);
  };
  const auto paused = gs::run_in(ns_, runsc_args({"pause", id}), kCommandTimeout);
  if (paused.exit_code != 0) return failed("pause", paused);
  const auto written = gs::run_in(ns_, runsc_args({"checkpoint", "--image-path=" + image_dir, id}), kCheckpointTimeout);
  if (written.exit_code != 0) {
    (void)gs::run_in(ns_, runsc_args({"resume", id}), kCommandTimeout);  // a refused checkpoint harms nothing
    return failed("checkpoint", written);
  }
  {
    std::lock_guard lock(mu_);
    if (!run_ || end_asked_) return Error::make("session_ended", "the session has ended");
    relaunch_ = true;
    launch_.restore_image = image_dir;
    run_->kill();
  }
  return relaunched();
}

// Waits for the supervisor's restore of the session after a checkpoint.
Status GvisorSession::relaunched() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return phase_ == Phase::ended || phase_ == Phase::failed || (!relaunch_ && phase_ == Phase::running); });
    if (phase_ == Phase::failed)
      return Error::make("snapshot_failed", "gvisor session: restoring the session from its checkpoint: " + start_error_.message);
    if (phase_ == Phase::ended) return Error::make("session_ended", "the session ended during its checkpoint");
  }
  if (auto s = wait_until_running(); !s)
    return Error::make("snapshot_failed", "gvisor session: restoring the session from its checkpoint: " + s.error().message);
  return {};
}

Result<Reply> GvisorSession::file_op(FileOp op, const std::vector<std::string>& paths, int fd) {
  if (ended()) return Error::make("session_ended", "the session has ended");
  FileHeader h{'P', 0, op};
  std::string message(reinterpret_cast<const char*>(&h), sizeof h);
  for (const auto& p : paths) {
    message += p;
    message += '\0';
  }
  if (message.size() > sandbox::session_protocol::kMaxMessageBytes)
    return Error::make("invalid_path", "the path is too long");
  pid_t helper = 0;
  auto r = gs::file_operation(dir_.workspace, sandbox::kSandboxUid, message, fd, &helper);
  if (!r) return r.error();
  if (r->err != 0) return sandbox::file_error(r->err, paths.front());
  if (helper > 0) r->id = add_child(helper, false, "");
  return r;
}

Status GvisorSession::simple_file_op(FileOp op, const std::vector<std::string>& paths) {
  if (op == FileOp::remove && paths.front().empty())
    return Error::make("invalid_path", "the workspace itself cannot be removed");
  auto r = file_op(op, paths, -1);
  if (!r) return r.error();
  return {};
}

Result<sandbox::FileTransfer> GvisorSession::read_file(const std::string& path) {
  auto pipe = make_pipe();
  if (!pipe) return pipe.error();
  auto done = file_op(FileOp::read, {path}, pipe->second.get());
  if (!done) return done.error();
  sandbox::FileTransfer t;
  t.id = done->id;
  t.directory = S_ISDIR(done->file_type);
  t.size = done->size;
  if (!t.directory && !S_ISREG(done->file_type))
    return Error::make("not_a_regular_file", "'" + path + "' is neither a regular file nor a directory");
  t.pipe = std::move(pipe->first);  // the copier holds the write end: EOF is its end
  return t;
}

Result<sandbox::FileTransfer> GvisorSession::write_file(const std::string& path) {
  if (path.empty()) return Error::make("is_a_directory", "'.': the workspace itself is a directory");
  auto pipe = make_pipe();
  if (!pipe) return pipe.error();
  auto done = file_op(FileOp::write, {path}, pipe->first.get());
  if (!done) return done.error();
  sandbox::FileTransfer t;
  t.id = done->id;
  t.pipe = std::move(pipe->second);
  return t;
}

// What is still running of the execs and the file helpers: killed and reaped.
void GvisorSession::end_children() {
  std::lock_guard lock(mu_);
  for (auto& [id, c] : children_) {
    ::kill(c.pid, SIGKILL);
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!c.process_file.empty()) ::unlink(c.process_file.c_str());
  }
  children_.clear();
}

RunResult GvisorSession::end() {
  std::lock_guard end_lock(end_mu_);
  if (result_) return *result_;
  bool by_itself;
  {
    std::lock_guard lock(mu_);
    by_itself = phase_ == Phase::ended;
    end_asked_ = true;
    if (run_) run_->kill();
  }
  if (supervisor_.joinable()) supervisor_.join();
  end_children();
  dir_.remove(runsc_);
  cgroup_.kill_listed();
  (void)cgroup_.remove();
  RunResult r;
  static_cast<sandbox::Outcome&>(r) = outcome_;
  r.egress = std::move(records_);
  if (!by_itself && phase_ == Phase::ended) {  // asked to end: that is no verdict on it
    r.verdict = sandbox::Verdict::ok;
    r.message = "ended";
    r.signal.reset();
  }
  result_ = std::move(r);
  return *result_;
}

}  // namespace

std::string gvisor_session_id(unsigned long sequence) {
  return "airlock-gv-" + std::to_string(::getpid()) + "-s" + std::to_string(sequence);
}

namespace {

// Not root, runsc --rootless maps only the sandbox's root to this user: the session's user
// (1000) could not write its workspace (a directory of ours, root's in there; what it made
// would be an unmapped owner's, EINVAL). Refused rather than a session whose files fail.
Error rootless_refusal() {
  return Error::make("tier_unavailable",
                     "gVisor sessions need the daemon to run as root: under runsc --rootless the session's "
                     "user cannot write its workspace (only the sandbox's root maps to this user); run the "
                     "template on a local or Kubernetes tier, or the daemon as root");
}

}  // namespace

Result<std::unique_ptr<Session>> GvisorSessionBackend::start_session(const RunRequest& request,
                                                                    const RunContext& context) {
  if (options_.runsc.rootless) return rootless_refusal();
  auto session = std::make_unique<GvisorSession>(options_, gvisor_session_id(g_session_sequence++));
  if (auto s = session->start(request, context, options_); !s) {
    (void)session->end();
    return Error::make("setup_error", s.error().message);
  }
  return std::unique_ptr<Session>(std::move(session));
}

// As start_session, the workspace unpacked from the image's archive and runsc restore in place
// of runsc run. A failure ends what was made (end(): container, mounts, directory, cgroup).
Result<std::unique_ptr<Session>> GvisorSessionBackend::restore_session(const RunRequest& request,
                                                                      const RunContext& context,
                                                                      const MemoryImage& image) {
  if (options_.runsc.rootless) return rootless_refusal();
  auto session = std::make_unique<GvisorSession>(options_, gvisor_session_id(g_session_sequence++));
  if (auto s = session->start(request, context, options_, &image); !s) {
    (void)session->end();
    const std::string& code = s.error().code;
    return Error::make(code == "memory_snapshot_unsupported" || code == "snapshot_failed" ? code : "setup_error",
                       "restoring a snapshot with memory: " + s.error().message);
  }
  return std::unique_ptr<Session>(std::move(session));
}

}  // namespace airlock::backend
