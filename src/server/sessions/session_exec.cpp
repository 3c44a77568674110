#include "server/sessions/session_exec.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "audit/audit_log.hpp"
#include "audit/invocation_record.hpp"
#include "common/units.hpp"
#include "creds/wipe.hpp"
#include "dlp/credential_redaction.hpp"
#include "dlp/scanner.hpp"

namespace airlock::server {

Error invalid_input(const std::string& message) { return Error::make("invalid_input", message); }

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Result<milliseconds> read_timeout(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return milliseconds(v.get<std::uint64_t>());
  if (v.is_string()) {
    auto d = parse_duration(v.get<std::string>());
    if (d && *d > std::chrono::nanoseconds(0)) return std::chrono::duration_cast<milliseconds>(*d);
  }
  return invalid_input("timeout: a duration (\"30s\") or milliseconds");
}

struct StreamOut {
  const char* name;  // "stdout", "stderr"
  UniqueFd fd;
  std::optional<dlp::CredentialStream> credentials;  // the session's values out, first
  std::optional<dlp::StreamScanner> scan;            // then the DLP policy
  std::string raw;               // up to the output limit
  std::string kept;              // raw with the session's credentials out: the record's digest then
  std::uint64_t bytes = 0;       // every byte it wrote
  bool open = true;
};

void nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

Result<std::shared_ptr<pipeline::QuotaHold>> admit_session_work(pipeline::QuotaBook* quotas, const policy::Config& config,
                                                                const SessionOwner& owner) {
  if (!quotas) return std::shared_ptr<pipeline::QuotaHold>();
  auto admitted = quotas->admit(config.quotas, owner.principal, owner.quota_user());
  if (auto* failed = std::get_if<Error>(&admitted))
    return Error::make("storage_unavailable", "the quotas could not be checked, so nothing ran: " + failed->message);
  if (auto* refusal = std::get_if<pipeline::QuotaRefusal>(&admitted))
    return Error::make("quota_exceeded:" + refusal->quota,
                       refusal->message + "; retry in " + std::to_string(refusal->retry_after.count()) + " s");
  return std::get<std::shared_ptr<pipeline::QuotaHold>>(std::move(admitted));
}

Result<ExecRequest> parse_exec_request(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_input("the body must be a JSON object {\"command\": ...}");
  for (const auto& [key, value] : j.items())
    if (key != "command" && key != "stdin" && key != "env" && key != "cwd" && key != "timeout")
      return invalid_input("unknown field '" + key + "' (expected command, stdin, env, cwd, timeout)");
  ExecRequest r;
  const auto command = j.find("command");
  if (command == j.end()) return invalid_input("command: missing (a list of arguments or a shell line)");
  if (command->is_string()) {
    r.argv = {"/bin/sh", "-c", command->get<std::string>()};
  } else if (command->is_array() && !command->empty()) {
    for (const auto& a : *command) {
      if (!a.is_string()) return invalid_input("command: every argument must be a string");
      r.argv.push_back(a.get<std::string>());
    }
  } else {
    return invalid_input("command: a non-empty list of arguments or a shell line");
  }
  if (auto in = j.find("stdin"); in != j.end()) {
    if (!in->is_string()) return invalid_input("stdin: a string");
    r.stdin_bytes = in->get<std::string>();
  }
  if (auto env = j.find("env"); env != j.end()) {
    if (!env->is_object()) return invalid_input("env: an object of strings");
    for (const auto& [k, v] : env->items()) {
      if (!v.is_string()) return invalid_input("env." + k + ": a string");
      r.env[k] = v.get<std::string>();
    }
  }
  if (auto cwd = j.find("cwd"); cwd != j.end()) {
    if (!cwd->is_string() || cwd->get<std::string>().empty() || cwd->get<std::string>().front() != '/')
      return invalid_input("cwd: an absolute path inside the session");
    r.cwd = cwd->get<std::string>();
  }
  if (auto t = j.find("timeout"); t != j.end()) {
    auto timeout = read_timeout(*t);
    if (!timeout) return timeout.error();
    r.timeout = *timeout;
  }
  return r;
}

struct ExecRun::State {
  Context ctx;
  ExecRequest request;  // as it ran: redacted where DLP said so
  std::shared_ptr<pipeline::QuotaHold> hold;
  std::shared_ptr<const dlp::Scanner> scanner;
  SessionCredentials::ForExec credentials;  // the session's, as the exec started (values wiped once it has)
  std::vector<dlp::CredentialStream> credential_streams;  // one per output, when it has credentials
  std::vector<nlohmann::json> redactions;
  sandbox::StartedExec started;
  Clock::time_point began = Clock::now();
  milliseconds timeout{0};
  bool exec_begun = false;  // LiveSession::begin_exec was counted
};

namespace {

// The input as it will run, DLP applied to each part; an error when a part is blocked.
Status scan_input(ExecRun::State& st) {
  if (!st.scanner) return {};
  auto scan = [&](std::string& text, const std::string& where) -> Status {
    dlp::ScanOptions bytes_only;
    bytes_only.json = dlp::JsonMode::off;
    const auto result = st.scanner->scan(text, bytes_only);
    if (result.findings.empty()) return {};
    if (result.blocked)
      return Error::make("dlp_blocked", "the exec's " + where + " holds data the DLP policy blocks (" +
                                            std::string(result.findings.front().detector) + "); nothing ran");
    for (const auto& f : result.findings) st.redactions.push_back({{"detector", f.detector}, {"where", "input"}});
    text = st.scanner->redact(text, result);
    return {};
  };
  for (auto& arg : st.request.argv)
    if (auto s = scan(arg, "command"); !s) return s;
  for (auto& [name, value] : st.request.env)
    if (auto s = scan(value, "environment (" + name + ")"); !s) return s;
  return scan(st.request.stdin_bytes, "stdin");
}

Status admit(ExecRun::State& st) {
  auto hold = admit_session_work(st.ctx.quotas.get(), *st.ctx.generation->config, st.ctx.session->owner);
  if (!hold) return hold.error();
  st.hold = std::move(*hold);
  return {};
}

// Feeds stdin while the exec reads it; closes it when all is written.
void feed_stdin(ExecRun::State& st, std::size_t& written) {
  while (written < st.request.stdin_bytes.size()) {
    ssize_t n = ::write(st.started.stdin_w.get(), st.request.stdin_bytes.data() + written,
                        st.request.stdin_bytes.size() - written);
    if (n > 0) {
      written += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    written = st.request.stdin_bytes.size();  // EPIPE: it stopped reading
  }
  st.started.stdin_w.reset();
}

// Starts the exec with the session's credentials as they are now, each as its variable (over
// one of the request's of the same name). The values are not kept: the literals that redact
// them from its output are.
Result<sandbox::StartedExec> start_with_credentials(ExecRun::State& st) {
  LiveSession& session = *st.ctx.session;
  sandbox::SessionExec exec{st.request.argv, st.request.env, st.request.cwd};
  if (session.credentials) {
    st.credentials = session.credentials->for_exec();
    for (auto& [name, value] : st.credentials.env) exec.env[name] = std::exchange(value, std::string());
    st.credentials.env.clear();
  }
  // No output leaves without its redaction: the exec does not start when it cannot be set up.
  for (int i = 0; i < 2 && st.credentials.redaction.literals; ++i) {
    const auto& r = st.credentials.redaction;
    auto stream = dlp::CredentialStream::open(*r.scanner, *r.literals);
    if (!stream) {
      creds::wipe_secrets(exec.env);
      return Error::make("credential_unavailable", "the session's credentials could not be kept out of the exec's output: " +
                                                       stream.error().message);
    }
    st.credential_streams.push_back(std::move(*stream));
  }
  auto started = session.sandbox->exec(exec);
  creds::wipe_secrets(exec.env);
  return started;
}

}  // namespace

ExecRun::ExecRun(std::unique_ptr<State> state) : state_(std::move(state)) {}

ExecRun::~ExecRun() {
  if (state_ && state_->exec_begun) state_->ctx.session->end_exec();
}

Result<std::unique_ptr<ExecRun>> ExecRun::start(Context context, ExecRequest request) {
  auto st = std::make_unique<State>();
  st->ctx = std::move(context);
  st->request = std::move(request);
  st->scanner = st->ctx.generation->pipeline ? st->ctx.generation->pipeline->scanner() : nullptr;
  LiveSession& session = *st->ctx.session;
  st->timeout = st->request.timeout.value_or(session.exec_timeout);
  if (auto s = admit(*st); !s) return s.error();
  if (auto s = scan_input(*st); !s) return s.error();
  if (auto refused = session.begin_exec()) return *refused;
  st->exec_begun = true;
  auto started = start_with_credentials(*st);
  if (!started) {  // nothing runs: the session may go idle again
    session.end_exec();
    return started.error();
  }
  st->started = std::move(*started);
  st->began = Clock::now();
  return std::unique_ptr<ExecRun>(new ExecRun(std::move(st)));
}

namespace {

// Reads an exec's output streams as they come: each through its DLP stream scan to the sink,
// up to the output limit (past it, or once DLP blocks, nothing more is sent).
struct Pump {
  ExecRun::State& st;
  ExecSink& sink;
  std::uint64_t limit;
  bool over_limit = false, blocked = false;

  void emit(StreamOut& s, dlp::StreamOutput out) {
    for (const auto& f : out.findings) st.redactions.push_back({{"detector", f.detector}, {"where", s.name}});
    if (out.blocked) blocked = true;
    if (!out.text.empty() && !blocked) sink.output(s.name, out.text);
  }

  // `chunk` (or, at the end, what is held back) through the credential redaction, then DLP.
  void pass(StreamOut& s, std::string_view chunk, bool end) {
    std::string text(chunk);
    if (s.credentials) {
      dlp::StreamOutput out = end ? s.credentials->finish() : s.credentials->write(chunk);
      for (std::size_t i = 0; i < out.findings.size(); ++i)
        st.redactions.push_back({{"detector", "credential"}, {"where", s.name}});
      text = std::move(out.text);
      s.kept += text;
    }
    if (s.scan) {
      if (!text.empty()) emit(s, s.scan->write(text));
      if (end) emit(s, s.scan->finish());
    } else if (!text.empty() && !blocked) {
      sink.output(s.name, text);
    }
  }

  void read(StreamOut& s) {
    char buf[16384];
    for (;;) {
      ssize_t n = ::read(s.fd.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {
        s.open = false;
        return;
      }
      std::string_view chunk(buf, static_cast<std::size_t>(n));
      s.bytes += chunk.size();
      if (s.bytes > limit) {  // the cap: what is past it is neither sent nor kept
        chunk = chunk.substr(0, chunk.size() - std::min<std::uint64_t>(chunk.size(), s.bytes - limit));
        over_limit = true;
      }
      s.raw.append(chunk);
      if (!chunk.empty()) pass(s, chunk, false);
      if (over_limit) return;
    }
  }

  void finish(StreamOut& s) { pass(s, {}, true); }
};

std::string exec_verdict(const std::optional<sandbox::ExecEnd>& end, bool timed_out, bool over_limit, bool blocked,
                         bool session_ended) {
  if (blocked) return "dlp_blocked";
  if (over_limit) return "output_limit";
  if (timed_out) return "timeout";
  if (!end) return session_ended ? "session_ended" : "timeout";
  if (!end->exited) return "signaled";
  return end->code == 0 ? "ok" : "exit_nonzero";
}

}  // namespace

nlohmann::json ExecRun::pump(ExecSink& sink) {
  State& st = *state_;
  backend::Session& sandbox = *st.ctx.session->sandbox;
  StreamOut outs[2] = {{"stdout", std::move(st.started.stdout_r), {}, {}, {}, {}, 0, true},
                       {"stderr", std::move(st.started.stderr_r), {}, {}, {}, {}, 0, true}};
  for (auto& s : outs) {
    nonblocking(s.fd.get());
    if (!st.credential_streams.empty()) {
      s.credentials.emplace(std::move(st.credential_streams.back()));
      st.credential_streams.pop_back();
    }
    if (st.scanner)
      if (auto opened = st.scanner->open_stream()) s.scan.emplace(std::move(*opened));
  }
  Pump pump{st, sink, st.ctx.session->output_bytes};
  std::size_t stdin_written = 0;
  if (st.started.stdin_w) nonblocking(st.started.stdin_w.get());
  feed_stdin(st, stdin_written);
  const auto deadline = st.began + st.timeout;
  std::optional<sandbox::ExecEnd> end;
  bool timed_out = false, stopped = false;
  auto stop = [&] {  // the exec's process group, at once
    if (!stopped) (void)sandbox.signal(st.started.id, SIGKILL);
    stopped = true;
  };
  while (outs[0].open || outs[1].open) {
    pollfd fds[3];
    nfds_t n = 0;
    for (auto& s : outs)
      if (s.open) fds[n++] = {s.fd.get(), POLLIN, 0};
    if (st.started.stdin_w) fds[n++] = {st.started.stdin_w.get(), POLLOUT, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    const int wait_ms = static_cast<int>(std::clamp<long long>(left, 0, 50));
    ::poll(fds, n, wait_ms);
    for (auto& s : outs)
      if (s.open) pump.read(s);
    if (st.started.stdin_w) feed_stdin(st, stdin_written);
    if (pump.over_limit || pump.blocked) stop();
    if (Clock::now() >= deadline && !stopped) {
      timed_out = true;
      stop();
    }
    if (!end) end = sandbox.wait(st.started.id, milliseconds(0));
    // Ended, with what it left in the background still holding its output: what is there
    // now is read, the rest is not waited for.
    if (end && (outs[0].open || outs[1].open)) {
      for (auto& s : outs)
        if (s.open) pump.read(s);
      break;
    }
    if (sandbox.ended()) break;
  }
  if (!end) end = sandbox.wait(st.started.id, stopped ? milliseconds(5000) : std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now())));
  if (!end && !sandbox.ended()) {
    timed_out = true;
    stop();
    end = sandbox.wait(st.started.id, milliseconds(5000));
  }
  for (auto& s : outs) pump.finish(s);
  st.started.stdin_w.reset();

  const auto wall = std::chrono::duration_cast<milliseconds>(Clock::now() - st.began);
  const std::string verdict = exec_verdict(end, timed_out, pump.over_limit, pump.blocked, sandbox.ended());
  nlohmann::json usage = {{"wall_ms", wall.count()}};
  if (end) {
    usage["cpu_user_ms"] = end->user_us / 1000;
    usage["cpu_sys_ms"] = end->sys_us / 1000;
    usage["max_rss_kb"] = end->max_rss_kb;
    if (st.ctx.quotas)
      st.ctx.quotas->charge_cpu(st.ctx.generation->config->quotas, st.ctx.session->owner.principal,
                                st.ctx.session->owner.quota_user(), static_cast<double>(end->user_us + end->sys_us) / 1e6);
  }

  audit::InvocationRecord record;
  record.invocation_id = st.ctx.invocation_id;
  record.principal = st.ctx.session->owner.principal;
  if (!st.ctx.session->owner.sub.empty())
    record.subject = audit::SubjectRecord{st.ctx.session->owner.issuer, st.ctx.session->owner.sub,
                                          st.ctx.caller.subject_jti_sha256};
  record.access_rule = "session owner";
  record.tool = "session/" + st.ctx.session->template_name;
  record.command = st.request.argv;
  record.limits = {{"timeout_ms", static_cast<std::uint64_t>(st.timeout.count())}, {"output_bytes", pump.limit}};
  record.verdict = verdict;
  if (end && end->exited) record.exit_code = end->code;
  if (end && !end->exited) record.signal = sandbox::signal_name(end->code);
  for (const auto& [k, v] : usage.items()) record.usage[k] = v.get<std::uint64_t>();
  record.input = audit::ContentDigest::of(st.request.stdin_bytes);
  // As a tool call's: the digest of its output with the credentials taken out (a digest of a
  // value printed alone would let a reader of the log test guesses of it).
  record.output = audit::ContentDigest::of(outs[0].credentials ? outs[0].kept : outs[0].raw);
  record.output->discarded_bytes = outs[0].bytes - outs[0].raw.size();
  record.error_output = audit::ContentDigest::of(outs[1].credentials ? outs[1].kept : outs[1].raw);
  record.error_output->discarded_bytes = outs[1].bytes - outs[1].raw.size();
  record.session = st.ctx.session->id;
  record.credentials = st.credentials.uses;
  nlohmann::json exit = {{"invocation_id", st.ctx.invocation_id},
                         {"verdict", verdict},
                         {"exit_code", end && end->exited ? nlohmann::json(end->code) : nlohmann::json()},
                         {"signal", end && !end->exited ? nlohmann::json(sandbox::signal_name(end->code)) : nlohmann::json()},
                         {"usage", usage},
                         {"redactions", st.redactions}};
  if (st.ctx.audit) {
    auto receipt = st.ctx.audit->append(audit::to_fields(record));
    if (receipt) exit["audit"] = {{"index", receipt->index}, {"leaf_hash", audit::to_hex(receipt->leaf_hash)}};
    else {  // what streamed is out; the exit says it has no record (the log now refuses every append)
      exit["verdict"] = "audit_failed";
      exit["message"] = "the exec's audit record could not be written: " + receipt.error().message;
    }
  }
  if (st.exec_begun) {  // no longer running once the client hears of its end (running_execs, idleness)
    st.ctx.session->end_exec();
    st.exec_begun = false;
  }
  sink.finished(exit);
  return exit;
}

namespace {

// An exec's output kept until its exit, then answered whole.
class WholeSink final : public ExecSink {
 public:
  void output(std::string_view stream, const std::string& text) override {
    (stream == "stdout" ? stdout_ : stderr_) += text;
  }
  void finished(const nlohmann::json& exit) override {
    answer_ = exit;
    answer_["stdout"] = stdout_;
    answer_["stderr"] = stderr_;
  }
  nlohmann::json answer() const { return answer_; }

 private:
  std::string stdout_, stderr_;
  nlohmann::json answer_;
};

}  // namespace

Result<nlohmann::json> run_exec_whole(ExecRun::Context context, ExecRequest request) {
  auto run = ExecRun::start(std::move(context), std::move(request));
  if (!run) return run.error();
  WholeSink sink;
  (*run)->pump(sink);
  return sink.answer();
}

}  // namespace airlock::server
