// airlock run [OPTIONS] -- CMD [ARGS...]
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hpp"
#ifdef AIRLOCK_CLI_WITH_AUDIT
#include "cli/run_audit.hpp"
#endif
#include "common/unique_fd.hpp"
#include "common/units.hpp"
#include "backend/local.hpp"
#include "egress/policy.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::cli {
namespace {

struct RunOptions {
  std::string timeout = "30s";
  std::string setup_timeout = "60s";
  std::string cpu_time;
  std::string memory = "512M";
  unsigned pids = 64;
  std::string output_limit = "1M";
  std::string disk = "64M";
  unsigned nofile = 256;
  std::vector<std::string> ro, rw, env;
  std::vector<std::string> allow, forward, resolve;
  std::string stdin_path;
  std::string workdir = "/work";
  bool json = false;
  bool kill_on_output_limit = false;
  bool tty = false;
  std::string audit;  // --audit PATH
};

// --tty: the caller's terminal (stdin) in raw mode for the run, so every key reaches the
// sandbox's pty, whose own line discipline echoes, edits and turns ^C into SIGINT there.
// Restored when the run ends, on every return path. SIGINT, SIGTERM, SIGHUP and SIGQUIT end the
// run through StopOnSignals (below), so it is restored before airlock dies of them; the
// handlers here only act where that could not be set up.
termios g_saved_mode{};
volatile std::sig_atomic_t g_raw_fd = -1;

void restore_and_reraise(int sig) {
  if (g_raw_fd >= 0) (void)::tcsetattr(g_raw_fd, TCSADRAIN, &g_saved_mode);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

class RawTerminal {
 public:
  explicit RawTerminal(int fd) {
    if (!::isatty(fd) || ::tcgetattr(fd, &g_saved_mode) != 0) return;
    termios raw = g_saved_mode;
    ::cfmakeraw(&raw);
    g_raw_fd = fd;
    for (std::size_t i = 0; i < std::size(kSignals); ++i) {
      struct sigaction action {};
      action.sa_handler = restore_and_reraise;
      ::sigemptyset(&action.sa_mask);
      ::sigaction(kSignals[i], nullptr, &previous_[i]);
      if (previous_[i].sa_handler != SIG_IGN) ::sigaction(kSignals[i], &action, nullptr);
    }
    if (::tcsetattr(fd, TCSANOW, &raw) != 0) restore();
  }
  ~RawTerminal() { restore(); }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  void restore() {
    if (g_raw_fd < 0) return;
    (void)::tcsetattr(g_raw_fd, TCSADRAIN, &g_saved_mode);
    g_raw_fd = -1;
    for (std::size_t i = 0; i < std::size(kSignals); ++i)
      ::sigaction(kSignals[i], &previous_[i], nullptr);
  }

  static constexpr int kSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM};
  struct sigaction previous_[std::size(kSignals)] {};
};

// Whether `sig` was ignored when we started (nohup, a non-interactive shell's background job):
// it stays ignored.
bool ignored(int sig) {
  struct sigaction current {};
  return ::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

// SIGINT, SIGTERM, SIGHUP and SIGQUIT while a run lasts (^C at a shell, a kill, a closed
// terminal): stop the sandbox, let the run end as any other (reaped, cgroups removed, the
// audit record written), then die of the same signal. Dying at once would leave the
// sandbox's cgroups behind. The signals are blocked (threads and the sandbox's child start
// later and inherit the mask; the child clears it) and go to a signalfd, which the
// supervision loop polls as Spec::stop_fd.
class StopOnSignals {
 public:
  StopOnSignals() {
    sigemptyset(&signals_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      if (!ignored(sig)) sigaddset(&signals_, sig);  // nohup, a shell's background job
    if (::pthread_sigmask(SIG_BLOCK, &signals_, &previous_mask_) != 0) return;
    blocked_ = true;
    fd_.reset(::signalfd(-1, &signals_, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd_) restore_mask();  // the signals then act as before
  }
  ~StopOnSignals() { restore_mask(); }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

  int fd() const { return fd_ ? fd_.get() : -1; }

  // The first signal that arrived, if any (after the run).
  int caught() {
    signalfd_siginfo info{};
    if (caught_ == 0 && fd_ &&
        ::read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info))
      caught_ = static_cast<int>(info.ssi_signo);
    return caught_;
  }

  // After the run: if a signal stopped it, die of that signal.
  void die_if_signalled() {
    int sig = caught();
    if (sig == 0) return;
    ::signal(sig, SIG_DFL);
    restore_mask();
    sigset_t just{};
    sigemptyset(&just);
    sigaddset(&just, sig);
    ::pthread_sigmask(SIG_UNBLOCK, &just, nullptr);
    ::raise(sig);
  }

 private:
  void restore_mask() {
    if (blocked_) ::pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
    blocked_ = false;
  }

  sigset_t signals_{}, previous_mask_{};
  bool blocked_ = false;
  UniqueFd fd_;
  int caught_ = 0;
};

// SIGWINCH, as a byte on a pipe the supervisor polls (Terminal::resize_event_fd), while the
// run lasts.
volatile std::sig_atomic_t g_resize_pipe = -1;

void note_resize(int) {
  int saved = errno;
  if (g_resize_pipe >= 0) (void)!::write(g_resize_pipe, "w", 1);
  errno = saved;
}

class ResizeEvents {
 public:
  ResizeEvents() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;
    read_.reset(fds[0]);
    write_.reset(fds[1]);
    g_resize_pipe = write_.get();
    struct sigaction action {};
    action.sa_handler = note_resize;
    action.sa_flags = SA_RESTART;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(SIGWINCH, &action, &previous_);
  }
  ~ResizeEvents() {
    if (!write_) return;
    ::sigaction(SIGWINCH, &previous_, nullptr);
    g_resize_pipe = -1;
  }
  ResizeEvents(const ResizeEvents&) = delete;
  ResizeEvents& operator=(const ResizeEvents&) = delete;
  int fd() const { return read_ ? read_.get() : -1; }

 private:
  UniqueFd read_, write_;
  struct sigaction previous_ {};
};

// The window size of the caller's terminal (stdin, else stdout), or the default 80x24.
sandbox::Terminal caller_terminal() {
  sandbox::Terminal terminal;
  for (int fd : {0, 1}) {
    winsize size{};
    if (::isatty(fd) && ::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_row > 0 && size.ws_col > 0) {
      terminal.rows = size.ws_row;
      terminal.columns = size.ws_col;
      terminal.size_source_fd = fd;
      break;
    }
  }
  return terminal;
}

// "PATH[:DEST]"
sandbox::Bind parse_bind(const std::string& text, bool writable) {
  auto colon = text.find(':');
  if (colon == std::string::npos) return {text, text, writable};
  return {text.substr(0, colon), text.substr(colon + 1), writable};
}

int fail_usage(const std::string& message) {
  std::cerr << "airlock run: " << message << "\n";
  return 125;
}

int run_command(const RunOptions& o, const std::vector<std::string>& command) {
  if (command.empty()) return fail_usage("no command given (airlock run [OPTIONS] -- CMD [ARGS...])");
  if (o.tty && o.json)
    return fail_usage("--tty cannot be combined with --json: the terminal is relayed live, "
                      "not collected into an Outcome");
  if (o.tty && !o.stdin_path.empty())
    return fail_usage("--tty cannot be combined with --stdin: with a terminal, airlock's own "
                      "stdin is the sandbox's keyboard");
  sandbox::Spec spec;
  spec.argv = command;
  auto timeout = parse_duration(o.timeout);
  if (!timeout) return fail_usage("--timeout: " + timeout.error().message);
  spec.limits.wall_time = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
  auto setup_timeout = parse_duration(o.setup_timeout);
  if (!setup_timeout) return fail_usage("--setup-timeout: " + setup_timeout.error().message);
  spec.limits.setup_time = std::chrono::duration_cast<std::chrono::milliseconds>(*setup_timeout);
  if (!o.cpu_time.empty()) {
    auto cpu = parse_duration(o.cpu_time);
    if (!cpu) return fail_usage("--cpu-time: " + cpu.error().message);
    spec.limits.cpu_time = std::chrono::duration_cast<std::chrono::milliseconds>(*cpu);
  }
  auto memory = parse_size(o.memory), output = parse_size(o.output_limit), disk = parse_size(o.disk);
  if (!memory) return fail_usage("--memory: " + memory.error().message);
  if (!output) return fail_usage("--output-limit: " + output.error().message);
  if (!disk) return fail_usage("--disk: " + disk.error().message);
  spec.limits.memory_bytes = *memory;
  spec.limits.output_bytes = *output;
  spec.limits.disk_bytes = *disk;
  spec.limits.pids = o.pids;
  spec.limits.open_files = o.nofile;
  for (const auto& b : o.ro) spec.binds.push_back(parse_bind(b, false));
  for (const auto& b : o.rw) spec.binds.push_back(parse_bind(b, true));
  for (const auto& e : o.env) {
    auto eq = e.find('=');
    if (eq == std::string::npos) return fail_usage("--env " + e + ": expected NAME=VALUE");
    spec.env[e.substr(0, eq)] = e.substr(eq + 1);
  }
  egress::EgressRules rules;  // enforced by the egress proxy, outside the sandbox
  for (const auto& a : o.allow) {
    auto rule = egress::parse_allow_rule(a);
    if (!rule) return fail_usage("--allow: " + rule.error().message);
    rules.allow.push_back(*rule);
  }
  for (const auto& f : o.forward) {
    auto forward = egress::parse_forward(f);
    if (!forward) return fail_usage(forward.error().message);
    rules.forwards.push_back(*forward);
  }
  for (const auto& r : o.resolve) {
    auto pin = egress::parse_resolve(r);
    if (!pin) return fail_usage(pin.error().message);
    rules.resolve[pin->first] = pin->second;
  }
  spec.workdir = o.workdir;
  spec.kill_on_output_limit = o.kill_on_output_limit;
  // Before the audit log opens: its writer thread must start with the signals blocked.
  StopOnSignals stop_on_signals;
  spec.stop_fd = stop_on_signals.fd();
#ifdef AIRLOCK_CLI_WITH_AUDIT
  auto auditor = RunAuditor::open(o.audit);  // before running: no unrecorded runs
  if (!auditor) return fail_usage("--audit " + o.audit + ": " + auditor.error().message);
#else
  // `airlock` hands every run with --audit to airlock-tools before parsing (main.cpp).
  if (!o.audit.empty()) return fail_usage("--audit: this program has no audit log; use airlock-tools");
#endif
  int stdin_fd = -1;
  if (o.stdin_path == "-") {
    spec.stdin_source.kind = sandbox::StdinSource::Kind::fd;
    spec.stdin_source.fd = 0;
  } else if (!o.stdin_path.empty()) {
    stdin_fd = ::open(o.stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (stdin_fd < 0) return fail_usage("--stdin " + o.stdin_path + ": " + strerror(errno));
    spec.stdin_source.kind = sandbox::StdinSource::Kind::fd;
    spec.stdin_source.fd = stdin_fd;
  }
  spec.output_mode = o.json ? sandbox::OutputMode::collect : sandbox::OutputMode::forward;
  if (o.tty) {
    spec.tty = caller_terminal();
    spec.stdin_source.kind = sandbox::StdinSource::Kind::fd;
    spec.stdin_source.fd = 0;
  }

  backend::LocalRunOptions run_options;
  run_options.rule_set = "the --allow rules of this airlock run";
  backend::RunResult outcome;
  {
    std::optional<ResizeEvents> resizes;
    std::optional<RawTerminal> raw;
    if (o.tty && spec.tty->size_source_fd >= 0) spec.tty->resize_event_fd = resizes.emplace().fd();
    if (o.tty) raw.emplace(0);
    outcome = backend::run_local(spec, rules, run_options);
  }
  if (stdin_fd >= 0) ::close(stdin_fd);
#ifdef AIRLOCK_CLI_WITH_AUDIT
  if (auto recorded = auditor->record(spec, outcome); !recorded)
    return fail_usage("--audit " + o.audit + ": " + recorded.error().message);
#endif
  if (o.json) {
    std::cout << backend::to_json(outcome).dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace)
              << std::endl;
  } else if (int sig = stop_on_signals.caught(); sig != 0) {
    std::cerr << "airlock: SIG" << sigabbrev_np(sig)
              << ": stopped the sandbox; nothing of it is left\n";
  } else if (outcome.verdict != sandbox::Verdict::ok &&
             outcome.verdict != sandbox::Verdict::exit_nonzero) {
    std::cerr << "airlock: " << sandbox::verdict_name(outcome.verdict) << ": " << outcome.message
              << "\n";
  }
  std::cout.flush();
  stop_on_signals.die_if_signalled();
  return outcome.exit_status();
}

}  // namespace

void add_run_command(CLI::App& app, ExitStatus& status, const TrailingArgs& trailing) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a command in a fresh sandbox and leave nothing behind");
  cmd->add_option("--timeout", opts->timeout, "Wall-clock limit (default 30s)");
  cmd->add_option("--setup-timeout", opts->setup_timeout,
                  "Limit on preparing the sandbox, binds' lookups to the program's start (default 60s)");
  cmd->add_option("--cpu-time", opts->cpu_time, "CPU-time limit over all processes");
  cmd->add_option("--memory", opts->memory, "Memory limit, no swap (default 512M)");
  cmd->add_option("--pids", opts->pids, "Process and thread limit (default 64)");
  cmd->add_option("--output-limit", opts->output_limit,
                  "Per-stream output limit; the rest is discarded and counted (default 1M)");
  cmd->add_option("--disk", opts->disk, "Size of the tmpfs behind the work dir and /tmp (default 64M)");
  cmd->add_option("--nofile", opts->nofile, "Open-file limit (default 256)");
  cmd->add_option("--ro", opts->ro, "Bind PATH[:DEST] read-only (repeatable)")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--rw", opts->rw, "Bind PATH[:DEST] read-write (repeatable)")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--env", opts->env, "Set NAME=VALUE in the child's environment (repeatable)")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--allow", opts->allow,
                  "Allow egress to HOST[:PORT] (name, *.domain, IP or CIDR; port 443 by default, * for any)")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--forward", opts->forward,
                  "Listen on the sandbox's 127.0.0.1:LPORT and relay to HOST:PORT (LPORT=HOST:PORT)")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--resolve", opts->resolve, "Pin NAME=IP for the egress proxy's resolver")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--stdin", opts->stdin_path, "Feed FILE (or - for our stdin) to the child");
  cmd->add_option("--workdir", opts->workdir, "Work dir inside the sandbox (default /work)");
  cmd->add_flag("--json", opts->json, "Print one Outcome object instead of the child's output");
  cmd->add_flag("--tty", opts->tty,
                "Give the command a terminal (a pty of the sandbox's own; not with --json or "
                "--stdin): our stdin is its keyboard, in raw mode while it runs");
  cmd->add_flag("--kill-on-output-limit", opts->kill_on_output_limit,
                "Stop the run as soon as a stream passes its output limit");
  cmd->add_option("--audit", opts->audit,
                  "Append a record of the run to the audit log at PATH (created if needed)");
  auto command = std::make_shared<std::vector<std::string>>();
  cmd->add_option("command", *command, "CMD [ARGS...]; put them after -- when they have options")
      ->expected(-1);
  cmd->callback([opts, command, &status, &trailing] {
    std::vector<std::string> argv = *command;
    argv.insert(argv.end(), trailing.args.begin(), trailing.args.end());
    status.code = run_command(*opts, argv);
  });
}

}  // namespace airlock::cli
