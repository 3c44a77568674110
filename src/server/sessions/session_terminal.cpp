#include "server/sessions/session_terminal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "common/digest.hpp"
#include "common/unique_fd.hpp"
#include "creds/wipe.hpp"
#include "dlp/credential_redaction.hpp"
#include "dlp/scanner.hpp"
#include "sandbox/outcome.hpp"
#include "server/core/responses.hpp"
#include "server/sessions/session_exec.hpp"
#include "server/sessions/sessions_api.hpp"

namespace airlock::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kMaxPendingInput = 1u << 20;  // typed and not yet taken by the terminal
constexpr std::size_t kMaxUnsentOutput = 1u << 20;  // shown and not yet sent: the shell waits
constexpr milliseconds kSlowTerminalClient{30'000};  // ... this long at most, then the client is gone
constexpr milliseconds kQuiet{50};          // no output this long: DLP settles what it held back
constexpr milliseconds kHangupGrace{5'000};  // the client left: SIGHUP, then SIGKILL after this
constexpr milliseconds kHandshake{35'000};   // the upgrade answered, the WebSocket not yet open

Result<std::uint16_t> dimension(const std::string& target, const char* name, std::uint16_t fallback) {
  auto v = query_param(target, name);
  if (!v) return v.error();
  if (v->empty()) return fallback;
  if (v->size() > 4 || v->find_first_not_of("0123456789") != std::string::npos || std::stoi(*v) < 1 ||
      std::stoi(*v) > 1000)
    return invalid_input(std::string(name) + ": a number from 1 to 1000");
  return static_cast<std::uint16_t>(std::stoi(*v));
}

// What the client's messages leave for the terminal's task (they arrive on the server's I/O
// threads, which must not block), and the eventfd that wakes the task.
struct Inbox {
  std::mutex mu;
  std::condition_variable opened;
  std::shared_ptr<WebSocket> socket;  // once the handshake is done
  bool gone = false;                  // the client closed or left
  std::string input;                  // typed, not yet taken
  bool input_overflow = false;        // more than kMaxPendingInput typed and not taken
  std::optional<sandbox::WindowSize> resize;
  std::vector<int> signals;
  std::uint64_t input_bytes = 0;
  Sha256 input_digest;
  UniqueFd wake{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};

  void notify() {
    const std::uint64_t one = 1;
    (void)!::write(wake.get(), &one, sizeof one);
  }
};

int signal_named(const std::string& name) {
  if (name == "INT") return SIGINT;
  if (name == "TERM") return SIGTERM;
  if (name == "HUP") return SIGHUP;
  if (name == "KILL") return SIGKILL;
  if (name == "QUIT") return SIGQUIT;
  return 0;
}

// A text message: a resize or a signal; anything else is refused with an error message.
std::optional<std::string> take_control(Inbox& inbox, const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  const std::string type = j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
  std::lock_guard lock(inbox.mu);
  if (type == "resize") {
    const auto rows = j.value("rows", 0), cols = j.value("cols", 0);
    if (rows < 1 || rows > 1000 || cols < 1 || cols > 1000) return "resize: rows and cols from 1 to 1000";
    inbox.resize = sandbox::WindowSize{static_cast<std::uint16_t>(rows), static_cast<std::uint16_t>(cols)};
    return std::nullopt;
  }
  if (type == "signal") {
    const int sig = j.contains("signal") && j["signal"].is_string() ? signal_named(j["signal"].get<std::string>()) : 0;
    if (sig == 0) return "signal: one of INT, TERM, HUP, KILL, QUIT";
    inbox.signals.push_back(sig);
    return std::nullopt;
  }
  return "unknown control message (expected {\"type\": \"resize\"} or {\"type\": \"signal\"})";
}

void take_message(Inbox& inbox, const std::weak_ptr<WebSocket>& weak, std::string message, bool binary) {
  if (!binary) {
    auto refused = take_control(inbox, message);
    if (auto socket = weak.lock(); refused && socket)
      socket->send(nlohmann::json{{"type", "error"}, {"message", *refused}}.dump(), false);
  } else {
    std::lock_guard lock(inbox.mu);
    inbox.input_bytes += message.size();
    inbox.input_digest.update(message);
    if (inbox.input.size() + message.size() > kMaxPendingInput) inbox.input_overflow = true;
    else inbox.input += message;
  }
  inbox.notify();
}

WebSocketHandlers connect(const std::shared_ptr<Inbox>& inbox, const std::shared_ptr<WebSocket>& socket) {
  {
    std::lock_guard lock(inbox->mu);
    inbox->socket = socket;
  }
  inbox->opened.notify_all();
  std::weak_ptr<WebSocket> weak = socket;  // the socket holds these handlers: no cycle
  WebSocketHandlers handlers;
  handlers.message = [inbox, weak](std::string message, bool binary) {
    take_message(*inbox, weak, std::move(message), binary);
  };
  handlers.closed = [inbox] {
    {
      std::lock_guard lock(inbox->mu);
      inbox->gone = true;
    }
    inbox->notify();
  };
  return handlers;
}

// One terminal from its admission to its record.
struct TerminalRun {
  TerminalRun(SessionService& s, std::shared_ptr<LiveSession> live, std::shared_ptr<const Generation> g,
              std::shared_ptr<pipeline::QuotaBook> q, TerminalRequest r)
      : sessions(s), session(std::move(live)), generation(std::move(g)), quotas(std::move(q)), request(std::move(r)),
        id(s.new_id()()) {}
  TerminalRun(const TerminalRun&) = delete;
  TerminalRun& operator=(const TerminalRun&) = delete;

  SessionService& sessions;
  std::shared_ptr<LiveSession> session;
  std::shared_ptr<const Generation> generation;
  std::shared_ptr<pipeline::QuotaBook> quotas;
  TerminalRequest request;
  std::string id;
  std::shared_ptr<Inbox> inbox = std::make_shared<Inbox>();
  std::shared_ptr<pipeline::QuotaHold> hold;
  std::shared_ptr<const dlp::Scanner> scanner;
  std::optional<dlp::StreamScanner> scan;
  SessionCredentials::Redaction redaction;           // the session's values as the shell started
  std::optional<dlp::CredentialStream> credentials;  // ... out of what it shows, before DLP
  sandbox::StartedExec started;
  bool exec_begun = false;
  Clock::time_point began = Clock::now();
  // While it runs, on its task only.
  std::shared_ptr<WebSocket> socket;
  std::string pending_input;  // taken from the inbox, not yet written to the pty
  std::uint64_t output_bytes = 0;
  Sha256 output_digest;
  std::vector<std::string> redactions;
  bool blocked = false, gone = false, overflow = false;
  Clock::time_point last_output = Clock::now();

  ~TerminalRun() {
    if (exec_begun) session->end_exec();
  }
};

audit::SessionTerminalRecord opened_record(const TerminalRun& t) {
  audit::SessionTerminalRecord r;
  r.id = t.id;
  r.command = t.request.argv;
  r.rows = t.request.size.rows;
  r.columns = t.request.size.columns;
  return r;
}

// The command through DLP: a blocked one is refused; a redacted one runs redacted.
Status scan_command(TerminalRun& t) {
  if (!t.scanner) return {};
  dlp::ScanOptions bytes_only;
  bytes_only.json = dlp::JsonMode::off;
  for (auto& arg : t.request.argv) {
    const auto result = t.scanner->scan(arg, bytes_only);
    if (result.blocked)
      return Error::make("dlp_blocked", "the terminal's command holds data the DLP policy blocks (" +
                                            std::string(result.findings.front().detector) + ")");
    if (!result.findings.empty()) arg = t.scanner->redact(arg, result);
  }
  auto stream = t.scanner->open_stream();
  if (!stream) return Error::make("dlp_unavailable", "the terminal's output scan could not start: " + stream.error().message);
  t.scan.emplace(std::move(*stream));
  return {};
}

// A fresh credential stream over the values the shell was given; false when it cannot be.
bool open_credentials(TerminalRun& t) {
  if (!t.redaction.literals) return true;
  auto stream = dlp::CredentialStream::open(*t.redaction.scanner, *t.redaction.literals);
  if (stream) t.credentials.emplace(std::move(*stream));
  return stream.ok();
}

// The session's credentials, as an exec gets them: its variables in the shell's environment,
// and their values out of what the terminal shows. No terminal without its redaction.
Status take_credentials(TerminalRun& t, std::map<std::string, std::string>& env) {
  if (!t.session->credentials) return {};
  auto given = t.session->credentials->for_exec();
  for (auto& [name, value] : given.env) env[name] = std::exchange(value, std::string());
  t.redaction = std::move(given.redaction);
  if (!open_credentials(t))
    return Error::make("credential_unavailable", "the session's credentials could not be kept out of the terminal");
  return {};
}

// The shell: the command asked for, else a login bash, else a login sh.
Result<sandbox::StartedExec> start_shell(TerminalRun& t, const std::map<std::string, std::string>& env) {
  if (!t.request.argv.empty()) return t.session->sandbox->exec_on_terminal({t.request.argv, env, ""}, t.request.size);
  t.request.argv = {"/bin/bash", "-l"};
  auto started = t.session->sandbox->exec_on_terminal({t.request.argv, env, ""}, t.request.size);
  if (started || started.error().code != "exec_failed") return started;
  t.request.argv = {"/bin/sh", "-l"};
  return t.session->sandbox->exec_on_terminal({t.request.argv, env, ""}, t.request.size);
}

// Admission, DLP on the command, the shell, and the terminal_opened record.
Status start(TerminalRun& t) {
  auto hold = admit_session_work(t.quotas.get(), *t.generation->config, t.session->owner);
  if (!hold) return hold.error();
  t.hold = std::move(*hold);
  t.scanner = t.generation->pipeline ? t.generation->pipeline->scanner() : nullptr;
  if (auto s = scan_command(t); !s) return s;
  if (auto refused = t.session->begin_exec()) return *refused;
  t.exec_begun = true;
  std::map<std::string, std::string> env = {{"TERM", t.request.term}};
  auto given = take_credentials(t, env);
  auto started = given ? start_shell(t, env) : Result<sandbox::StartedExec>(given.error());
  creds::wipe_secrets(env);
  if (!started) return started.error();
  t.started = std::move(*started);
  ::fcntl(t.started.terminal.get(), F_SETFL, ::fcntl(t.started.terminal.get(), F_GETFL) | O_NONBLOCK);
  auto recorded = t.sessions.record_event(*t.session, "terminal_opened", [&](audit::SessionRecord& r) { r.terminal = opened_record(t); });
  if (!recorded) {
    (void)t.session->sandbox->signal(t.started.id, SIGKILL);
    return Error::make("audit_failed", "the terminal's record could not be written, so it was closed: " + recorded.error().message);
  }
  return {};
}

// Sends what the terminal showed; a client that cannot keep up for kSlowTerminalClient is gone.
void send_output(TerminalRun& t, const std::string& text) {
  if (t.gone || !t.socket) return;
  if (!t.socket->send(text, true) || !t.socket->wait_below(kMaxUnsentOutput, kSlowTerminalClient)) t.gone = true;
}

void show(TerminalRun& t, dlp::StreamOutput out) {
  for (const auto& f : out.findings) t.redactions.emplace_back(f.detector);
  if (out.blocked) t.blocked = true;
  if (!out.text.empty() && !t.blocked) send_output(t, out.text);
}

// What the terminal shows, through the credential redaction, then DLP.
void pass(TerminalRun& t, std::string_view chunk, bool end) {
  std::string text(chunk);
  if (t.credentials) {
    dlp::StreamOutput out = end ? t.credentials->finish() : t.credentials->write(chunk);
    t.redactions.insert(t.redactions.end(), out.findings.size(), "credential");
    text = std::move(out.text);
  }
  t.output_bytes += text.size();  // the record's: what it showed, its credentials out, before DLP
  t.output_digest.update(text);
  if (!t.scan) {
    if (!text.empty()) send_output(t, text);
    return;
  }
  if (!text.empty()) show(t, t.scan->write(text));
  if (end) show(t, t.scan->finish());
}

std::size_t held_back(const TerminalRun& t) {
  return (t.scan ? t.scan->buffered_bytes() : 0) + (t.credentials ? t.credentials->buffered_bytes() : 0);
}

// Quiet for kQuiet: what the scans held back (a possible start of a secret) is settled and
// shown, so a prompt is never kept waiting; the scans start afresh.
void settle(TerminalRun& t) {
  if (held_back(t) == 0 || Clock::now() - t.last_output < kQuiet) return;
  pass(t, {}, true);
  if (!open_credentials(t)) t.blocked = true;  // no scan, no output
  if (!t.scan) return;
  auto fresh = t.scanner->open_stream();
  if (fresh) t.scan.emplace(std::move(*fresh));
  else t.blocked = true;
}

// Reads what the terminal shows; false once nothing holds it any more (EIO).
bool read_output(TerminalRun& t) {
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(t.started.terminal.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) return false;
    const std::string_view chunk(buf, static_cast<std::size_t>(n));
    t.last_output = Clock::now();
    pass(t, chunk, false);
  }
}

// Takes what the client sent: keystrokes to the pty (as far as it takes them), a resize, signals.
void take_inbox(TerminalRun& t) {
  std::uint64_t count;
  while (::read(t.inbox->wake.get(), &count, sizeof count) == static_cast<ssize_t>(sizeof count)) {
  }
  std::optional<sandbox::WindowSize> resize;
  std::vector<int> signals;
  {
    std::lock_guard lock(t.inbox->mu);
    t.pending_input += std::exchange(t.inbox->input, std::string());
    resize = std::exchange(t.inbox->resize, std::nullopt);
    signals = std::exchange(t.inbox->signals, {});
    if (t.inbox->gone) t.gone = true;
    if (t.inbox->input_overflow) t.overflow = true;
  }
  const int master = t.started.terminal.get();
  if (resize && master >= 0) {
    winsize size{};
    size.ws_row = resize->rows;
    size.ws_col = resize->columns;
    (void)::ioctl(master, TIOCSWINSZ, &size);  // the foreground gets SIGWINCH
  }
  for (int sig : signals) (void)t.session->sandbox->signal(t.started.id, sig);
  while (!t.pending_input.empty() && master >= 0) {
    const ssize_t n = ::write(master, t.pending_input.data(), t.pending_input.size());
    if (n <= 0) break;  // EAGAIN: the shell is not reading; the rest waits
    t.pending_input.erase(0, static_cast<std::size_t>(n));
  }
}

// The terminal runs until its shell ends, the session ends, or (its client gone, or DLP
// blocking what it shows) it is hung up and then killed.
std::optional<sandbox::ExecEnd> pump(TerminalRun& t) {
  backend::Session& sandbox = *t.session->sandbox;
  std::optional<Clock::time_point> hung_up;
  bool readable = true;
  for (;;) {
    const bool has_master = readable && t.started.terminal;
    pollfd fds[2] = {{t.inbox->wake.get(), POLLIN, 0},
                     {t.started.terminal.get(), static_cast<short>(POLLIN | (t.pending_input.empty() ? 0 : POLLOUT)), 0}};
    const bool holding = held_back(t) > 0;
    ::poll(fds, has_master ? 2 : 1, static_cast<int>(holding ? kQuiet.count() : 200));
    take_inbox(t);
    if (has_master) readable = read_output(t);
    settle(t);
    if (auto end = sandbox.wait(t.started.id, milliseconds(0))) {
      if (readable && t.started.terminal) read_output(t);  // what it showed last
      return end;
    }
    if (sandbox.ended()) return std::nullopt;
    if ((t.gone || t.blocked || t.overflow) && !hung_up) {
      t.started.terminal.reset();  // the pty hangs up: SIGHUP to its session's foreground
      (void)sandbox.signal(t.started.id, t.blocked ? SIGKILL : SIGHUP);
      hung_up = Clock::now();
    }
    if (hung_up && Clock::now() - *hung_up > kHangupGrace) (void)sandbox.signal(t.started.id, SIGKILL);
  }
}

std::string verdict_of(const TerminalRun& t, const std::optional<sandbox::ExecEnd>& end) {
  if (t.blocked) return "dlp_blocked";
  if (t.overflow) return "input_overflow";
  if (!end) return "session_ended";
  if (t.gone) return "client_gone";
  if (!end->exited) return "signaled";
  return end->code == 0 ? "ok" : "exit_nonzero";
}

// Its terminal_closed record, the CPU charged, and the exit told to the client.
void finish(TerminalRun& t, const std::optional<sandbox::ExecEnd>& end) {
  pass(t, {}, true);
  const std::string verdict = verdict_of(t, end);
  audit::SessionTerminalRecord r = opened_record(t);
  r.verdict = verdict;
  if (end && end->exited) r.exit_code = end->code;
  if (end && !end->exited) r.signal = sandbox::signal_name(end->code);
  {
    std::lock_guard lock(t.inbox->mu);
    r.input_bytes = t.inbox->input_bytes;
    r.input_sha256 = t.inbox->input_digest.hex();
  }
  r.output_bytes = t.output_bytes;
  r.output_sha256 = t.output_digest.hex();
  r.redactions = t.redactions;
  r.wall_ms = static_cast<std::uint64_t>(std::chrono::duration_cast<milliseconds>(Clock::now() - t.began).count());
  if (end && t.quotas)
    t.quotas->charge_cpu(t.generation->config->quotas, t.session->owner.principal, t.session->owner.quota_user(),
                         static_cast<double>(end->user_us + end->sys_us) / 1e6);
  auto recorded = t.sessions.record_event(*t.session, "terminal_closed", [&](audit::SessionRecord& s) { s.terminal = r; });
  nlohmann::json exit = {{"type", "exit"}, {"verdict", verdict}, {"redactions", t.redactions}};
  if (r.exit_code) exit["exit_code"] = *r.exit_code;
  if (!r.signal.empty()) exit["signal"] = r.signal;
  if (!recorded) exit["message"] = "the terminal's record could not be written: " + recorded.error().message;
  if (t.exec_begun) {  // no longer running once the client hears of its end (running_execs, idleness)
    t.session->end_exec();
    t.exec_begun = false;
  }
  if (t.socket && !t.gone) {
    t.socket->send(exit.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), false);
    t.socket->close(1000, verdict);
  }
}

// The terminal's life once the upgrade is answered: the WebSocket opens (or the client never
// completes it), the pump, the end.
void run(TerminalRun& t) {
  {
    std::unique_lock lock(t.inbox->mu);
    t.inbox->opened.wait_for(lock, kHandshake, [&] { return t.inbox->socket || t.inbox->gone; });
    t.socket = t.inbox->socket;
    if (!t.socket) t.gone = true;  // never opened: hung up at once
  }
  finish(t, pump(t));
}

}  // namespace

Result<TerminalRequest> parse_terminal_request(const std::string& target) {
  TerminalRequest r;
  auto rows = dimension(target, "rows", 24);
  if (!rows) return rows.error();
  auto cols = dimension(target, "cols", 80);
  if (!cols) return cols.error();
  r.size = {*rows, *cols};
  auto command = query_param(target, "command");
  if (!command) return command.error();
  if (!command->empty()) r.argv = {"/bin/sh", "-c", *command};
  auto term = query_param(target, "term");
  if (!term) return term.error();
  if (!term->empty()) {
    if (term->size() > 64 || term->find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_+") != std::string::npos)
      return invalid_input("term: a terminal type name (letters, digits, . - _ +; at most 64)");
    r.term = *term;
  }
  return r;
}

void open_terminal(SessionService& sessions, std::shared_ptr<LiveSession> session,
                   std::shared_ptr<const Generation> generation, std::shared_ptr<pipeline::QuotaBook> quotas,
                   const HttpRequest& r, std::function<void(HttpResponse)> reply) {
  if (!is_websocket_upgrade(r)) {
    auto resp = error_response(426, "upgrade_required", "the terminal is a WebSocket: GET it with Upgrade: websocket");
    resp.headers.emplace_back("Upgrade", "websocket");
    return reply(std::move(resp));
  }
  auto request = parse_terminal_request(r.target);
  if (!request) return reply(session_error_response(request.error()));
  auto t = std::make_shared<TerminalRun>(sessions, std::move(session), std::move(generation), std::move(quotas),
                                         std::move(*request));
  sessions.spawn([t, reply = std::move(reply)] {
    if (auto started = start(*t); !started) return reply(session_error_response(started.error()));
    HttpResponse upgrade;
    upgrade.websocket = [inbox = t->inbox](std::shared_ptr<WebSocket> socket) { return connect(inbox, socket); };
    reply(std::move(upgrade));
    run(*t);
  });
}

}  // namespace airlock::server
