// The local backend's sessions: a sandbox::SessionSandbox behind the egress proxy of its rules,
// registered with the daemon's running sandboxes (its shutdown ends them).
#include <mutex>

#include "backend/local.hpp"
#include "backend/sandbox_egress.hpp"
#include "backend/session_backend.hpp"

namespace airlock::backend {
namespace {

class LocalSessionSandbox final : public Session {
 public:
  // What lives as long as the sandbox, touched on its supervising thread: the proxy and the
  // registration are made when it is launched and end when it has ended.
  struct Around {
    std::unique_ptr<SandboxEgress> egress;
    RunningSandboxes* registry = nullptr;
    std::unique_ptr<SandboxRegistration> registration;
    std::vector<egress::EgressRecord> records;
  };

  LocalSessionSandbox(std::unique_ptr<sandbox::SessionSandbox> sandbox, std::shared_ptr<Around> around)
      : sandbox_(std::move(sandbox)), around_(std::move(around)) {}
  ~LocalSessionSandbox() override { (void)end(); }

  Result<sandbox::StartedExec> exec(const sandbox::SessionExec& request) override { return sandbox_->exec(request); }
  Result<sandbox::StartedExec> exec_on_terminal(const sandbox::SessionExec& request, sandbox::WindowSize size) override {
    return sandbox_->exec_on_terminal(request, size);
  }
  std::optional<sandbox::ExecEnd> wait(std::uint32_t id, std::chrono::milliseconds timeout) override {
    return sandbox_->wait(id, timeout);
  }
  Status signal(std::uint32_t id, int sig) override { return sandbox_->signal(id, sig); }
  RunResult end() override {
    std::lock_guard lock(end_mu_);
    if (!result_) {
      RunResult r;
      static_cast<sandbox::Outcome&>(r) = sandbox_->end();  // the supervisor has joined: `around` is ours
      r.egress = std::move(around_->records);
      result_ = std::move(r);
    }
    return *result_;
  }
  bool ended() const override { return sandbox_->ended(); }
  std::optional<sandbox::CpuTime> cpu_used() const override { return sandbox_->cpu_used(); }
  Status freeze(bool frozen) override { return sandbox_->freeze(frozen); }
  // Measured with CRIU 3.17.1 (Debian's): `criu check` and `criu dump` stop before anything is
  // dumped, at "vdso: Unexpected rt vDSO area bounds".
  Status can_snapshot_memory() const override {
    return Error::make("memory_snapshot_unsupported",
                       "a local session's memory cannot be snapshotted here: CRIU, the only checkpointer "
                       "for plain Linux processes, fails on this kernel's vDSO (\"vdso: Unexpected rt vDSO "
                       "area bounds\") before it dumps anything; snapshot without memory (the workspace's files)");
  }
  Result<sandbox::FileTransfer> read_file(const std::string& path) override { return sandbox_->read_file(path); }
  Result<sandbox::FileTransfer> write_file(const std::string& path) override { return sandbox_->write_file(path); }
  Status remove_file(const std::string& path) override { return sandbox_->remove_file(path); }
  Status move_file(const std::string& from, const std::string& to) override { return sandbox_->move_file(from, to); }
  Status make_directory(const std::string& path) override { return sandbox_->make_directory(path); }

 private:
  std::unique_ptr<sandbox::SessionSandbox> sandbox_;
  std::shared_ptr<Around> around_;
  std::mutex end_mu_;
  std::optional<RunResult> result_;
};

}  // namespace

Result<std::unique_ptr<Session>> LocalBackend::start_session(const RunRequest& request, const RunContext& context) {
  if (!context.warm_key.empty())
    if (auto ready = ready_sessions_.take(context.warm_key)) return ready;
  return start_new_session(request, context);
}

// A ready sandbox's wall clock runs from its start, so it gets the longest a ready one waits on
// top: the session's own maximum lifetime, counted from its creation, is the service's to keep.
void LocalBackend::keep_ready(std::vector<ReadySessions> wanted) {
  for (auto& w : wanted) w.request.limits.wall_time += kReadySessionMaxAge;
  ready_sessions_.keep(std::move(wanted));
}

// A session's first exec costs its init the copies of the pages it writes for the first time
// (it is a clone of the daemon). A ready sandbox pays them off the request's path: with the
// program its taker wants running (ReadySessions::started_ahead), or else a `true` of its own,
// which leaves nothing behind (its end is reaped, its pipes closed).
Result<std::unique_ptr<Session>> LocalBackend::start_ready_session(const ReadySessions& wanted) {
  auto session = start_new_session(wanted.request, wanted.context);
  if (!session) return session;
  if (!wanted.started_ahead.argv.empty()) {
    auto started = (*session)->exec(wanted.started_ahead);
    if (!started) {
      (void)(*session)->end();
      return Error::make("setup_error", "the program started ahead (" + wanted.started_ahead.argv[0] +
                                            "): " + started.error().message);
    }
    (*session)->set_started_ahead(std::move(*started));
  } else if (auto started = (*session)->exec({{"/bin/true"}, {}, ""})) {
    started->stdin_w.reset();
    (void)(*session)->wait(started->id, std::chrono::seconds(10));
  }
  return session;
}

Result<std::unique_ptr<Session>> LocalBackend::start_new_session(const RunRequest& request, const RunContext& context) {
  if (registry_ && registry_->stopping())
    return Error::make("setup_error", "the daemon is shutting down: no new session starts");
  sandbox::Spec spec = local_spec(request);
  auto around = std::make_shared<LocalSessionSandbox::Around>();
  around->registry = registry_;
  if (request.egress.has_egress()) {
    auto prepared = SandboxEgress::prepare(spec, request.egress, context.rule_set,
                                           forbidden_ ? *forbidden_ : std::vector<egress::Endpoint>{});
    if (!prepared) return prepared.error();
    around->egress = std::move(*prepared);
  }
  sandbox::SessionHooks hooks;
  hooks.launched = [around](sandbox::Sandbox& sb) {
    around->registration = std::make_unique<SandboxRegistration>(around->registry, &sb);
    if (around->egress) around->egress->start(sb.take_listeners());
  };
  hooks.ended = [around] {
    around->registration.reset();
    if (around->egress) around->records = around->egress->stop();
  };
  auto session = sandbox::SessionSandbox::start(std::move(spec), std::move(hooks));
  if (!session) return session.error();
  return std::unique_ptr<Session>(new LocalSessionSandbox(std::move(*session), std::move(around)));
}

}  // namespace airlock::backend
