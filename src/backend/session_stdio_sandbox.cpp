#include "backend/session_stdio_sandbox.hpp"

#include <csignal>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "backend/stderr_ring.hpp"

namespace airlock::backend {

struct SessionStdioSandbox::State {
  explicit State(std::size_t ring_bytes) : ring(ring_bytes) {}

  std::unique_ptr<Session> session;
  std::uint32_t exec_id = 0;
  SessionStdioOptions options;
  StderrRing ring;
  std::thread stderr_reader, supervisor;

  mutable std::mutex mu;
  mutable std::condition_variable changed;
  UniqueFd stdin_w, stdout_r;  // until taken
  bool kill_requested = false;
  std::optional<RunResult> result;  // set once the session has ended

  void supervise();
  std::optional<sandbox::ExecEnd> wait_for_program();
};

namespace {

// How often the supervisor looks for a kill() while the program runs.
constexpr std::chrono::milliseconds kKillCheck{100};

}  // namespace

RunResult exec_outcome(const std::optional<sandbox::ExecEnd>& end, RunResult session, bool killed) {
  RunResult out;
  out.egress = std::move(session.egress);
  out.usage = session.usage;
  if (killed) {
    out.verdict = sandbox::Verdict::signaled;
    out.signal = SIGKILL;
    out.message = "the program was killed (SIGKILL) and its session ended";
  } else if (end && end->exited) {
    out.exit_code = end->code;
    out.verdict = end->code == 0 ? sandbox::Verdict::ok : sandbox::Verdict::exit_nonzero;
    out.message = "the program exited with code " + std::to_string(end->code);
  } else if (end) {
    out.signal = end->code;
    out.verdict = sandbox::Verdict::signaled;
    out.message = "the program was killed by " + sandbox::signal_name(end->code);
  } else {  // the session ended under it (its pod lost, its life over)
    static_cast<sandbox::Outcome&>(out) = std::move(session);
  }
  return out;
}

// The program's end, or nothing when the session ended first or kill() was asked for.
std::optional<sandbox::ExecEnd> SessionStdioSandbox::State::wait_for_program() {
  for (;;) {
    if (auto end = session->wait(exec_id, kKillCheck)) return end;
    std::lock_guard lock(mu);
    if (kill_requested || session->ended()) return std::nullopt;
  }
}

void SessionStdioSandbox::State::supervise() {
  const auto end = wait_for_program();
  RunResult ended = session->end();  // every process in it, its objects, its egress admission
  if (stderr_reader.joinable()) stderr_reader.join();  // the session's end closed the pipe
  {
    std::lock_guard lock(mu);
    result = exec_outcome(end, std::move(ended), kill_requested);
  }
  changed.notify_all();
  if (options.on_end) options.on_end();
}

SessionStdioSandbox::SessionStdioSandbox(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<SessionStdioSandbox>> SessionStdioSandbox::start(SessionBackend& backend, const RunRequest& request,
                                                                        const RunContext& context,
                                                                        const sandbox::SessionExec& program,
                                                                        SessionStdioOptions options) {
  auto session = backend.start_session(request, context);
  if (!session) return session.error();
  auto started = (*session)->exec(program);
  if (!started) {
    (void)(*session)->end();
    return Error::make("setup_error", "starting " + (program.argv.empty() ? std::string("the program") : program.argv.front()) +
                                          " in its session: " + started.error().message);
  }
  auto st = std::make_shared<State>(options.stderr_ring_bytes);
  st->session = std::move(*session);
  st->exec_id = started->id;
  st->options = std::move(options);
  st->stdin_w = std::move(started->stdin_w);
  st->stdout_r = std::move(started->stdout_r);
  st->stderr_reader = std::thread([raw = st.get(), fd = std::move(started->stderr_r)]() mutable {
    raw->ring.read_until_eof(std::move(fd));
  });
  st->supervisor = std::thread([raw = st.get()] { raw->supervise(); });
  return std::unique_ptr<SessionStdioSandbox>(new SessionStdioSandbox(std::move(st)));
}

SessionStdioSandbox::~SessionStdioSandbox() {
  kill();
  if (state_->supervisor.joinable()) state_->supervisor.join();
}

UniqueFd SessionStdioSandbox::take_stdin() {
  std::lock_guard lock(state_->mu);
  return std::move(state_->stdin_w);
}

UniqueFd SessionStdioSandbox::take_stdout() {
  std::lock_guard lock(state_->mu);
  return std::move(state_->stdout_r);
}

// Where the session's counter is not live (Kubernetes) this is the total as of the last
// reading: the program is the session's one exec and ends with it, so a caller that measures a
// piece of work (a call) takes read_cpu_now() at the work's end.
std::optional<sandbox::CpuTime> SessionStdioSandbox::cpu_used() const {
  if (ended()) return std::nullopt;
  return state_->session->cpu_used();
}

std::optional<sandbox::CpuTime> SessionStdioSandbox::read_cpu_now() {
  if (ended()) return std::nullopt;
  return state_->session->read_cpu_now();
}

void SessionStdioSandbox::kill() {
  std::lock_guard lock(state_->mu);
  state_->kill_requested = true;
}

bool SessionStdioSandbox::ended() const {
  std::lock_guard lock(state_->mu);
  return state_->result.has_value();
}

std::optional<RunResult> SessionStdioSandbox::wait_for_end(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mu);
  if (!state_->changed.wait_for(lock, timeout, [&] { return state_->result.has_value(); })) return std::nullopt;
  return state_->result;
}

std::uint64_t SessionStdioSandbox::stderr_mark() const { return state_->ring.mark(); }

std::string SessionStdioSandbox::stderr_since(std::uint64_t mark, std::size_t max_bytes) const {
  return state_->ring.since(mark, max_bytes);
}

}  // namespace airlock::backend
