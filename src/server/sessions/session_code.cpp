#include "server/sessions/session_code.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cerrno>

#include "audit/audit_log.hpp"
#include "audit/invocation_record.hpp"
#include "common/units.hpp"
#include "creds/wipe.hpp"
#include "dlp/code_scan.hpp"
#include "dlp/credential_redaction.hpp"
#include "dlp/scanner.hpp"
#include "pipeline/code_policy.hpp"
#include "validate/validate.hpp"

namespace airlock::server {

extern const char* const kInterpreterSource;  // airlock_interpreter.py, embedded at build time

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using nlohmann::json;

constexpr milliseconds kInterpreterStart{10'000};  // python3 up and its channel ready
constexpr std::size_t kMaxAnswerBytes = 64u << 20;  // one cell's answer line (figures included)

}  // namespace

// The session's interpreter: the Python process of airlock_interpreter.py, started as an exec
// on the first cell and kept until it dies, times out or the session ends.
class SessionInterpreter {
 public:
  struct Process {
    sandbox::StartedExec exec;
    std::string pending;  // read past the last answer's newline
  };
  std::mutex cell_mu;  // one cell at a time: a second is refused, not queued
  std::optional<Process> process;
  std::atomic<std::uint32_t> running{0};  // the process's exec id while a cell runs (interrupt)
  std::uint32_t next_cell = 1;
};

namespace {

SessionInterpreter& interpreter_of(LiveSession& s) {
  std::lock_guard lock(s.interpreter_mu);
  if (!s.interpreter) s.interpreter = std::make_shared<SessionInterpreter>();
  return *s.interpreter;
}

enum class LineEnd { line, timeout, closed, too_long };

// The interpreter's next line on its channel, waiting until `deadline`.
LineEnd read_line(SessionInterpreter::Process& p, Clock::time_point deadline, std::string& line) {
  for (;;) {
    if (auto nl = p.pending.find('\n'); nl != std::string::npos) {
      line = p.pending.substr(0, nl);
      p.pending.erase(0, nl + 1);
      return LineEnd::line;
    }
    if (p.pending.size() > kMaxAnswerBytes) return LineEnd::too_long;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return LineEnd::timeout;
    pollfd f{p.exec.stdout_r.get(), POLLIN, 0};
    if (::poll(&f, 1, static_cast<int>(std::min<long long>(left, 1000))) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::read(p.exec.stdout_r.get(), buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return LineEnd::closed;
    p.pending.append(buf, static_cast<std::size_t>(n));
  }
}

// Writes `text` to the interpreter's stdin by `deadline`; false when it could not.
bool write_all(int fd, const std::string& text, Clock::time_point deadline) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd f{fd, POLLOUT, 0};
    (void)::poll(&f, 1, static_cast<int>(std::min<long long>(left, 1000)));
  }
  return true;
}

// Ends the interpreter (its process group) and forgets it: its state is gone.
std::optional<sandbox::ExecEnd> kill_interpreter(SessionInterpreter& in, backend::Session& sandbox) {
  if (!in.process) return std::nullopt;
  const auto id = in.process->exec.id;
  (void)sandbox.signal(id, SIGKILL);
  auto end = sandbox.wait(id, milliseconds(5000));
  in.process.reset();
  return end;
}

// The interpreter of the session: the one its ready sandbox started ahead, or python3 started
// now; then its "ready" line (after its preload modules were imported). True: it was started ahead.
Result<bool> start_interpreter(SessionInterpreter& in, backend::Session& sandbox, const policy::SessionTemplate& t,
                         const std::map<std::string, std::string>& env) {
  auto started = sandbox.take_started_ahead();
  const bool ahead = started.has_value();
  if (!started) {
    sandbox::SessionExec command = interpreter_command(t);
    command.env = env;
    auto now = sandbox.exec(command);
    if (!now) return now.error();
    started = std::move(*now);
  }
  ::fcntl(started->stdin_w.get(), F_SETFL, ::fcntl(started->stdin_w.get(), F_GETFL) | O_NONBLOCK);
  in.process = SessionInterpreter::Process{std::move(*started), ""};
  std::string line;
  const LineEnd got = read_line(*in.process, Clock::now() + kInterpreterStart, line);
  const json ready = got == LineEnd::line ? json::parse(line, nullptr, false) : json();
  if (ready.is_object() && ready.value("ready", false)) return ahead;
  kill_interpreter(in, sandbox);
  if (ready.is_object() && ready.contains("error") && ready["error"].is_string())
    return Error::make("interpreter_failed", "the interpreter did not start: " + ready["error"].get<std::string>().substr(0, 1000));
  return Error::make("interpreter_failed", got == LineEnd::timeout ? "python3 did not start within 10 s"
                                                                   : "python3 ended as it started (is it in the session?)");
}

// One cell through the interpreter: its answer, or why there is none (and then its state is gone).
struct CellOutcome {
  std::optional<json> answer;
  std::string verdict = "ok";
  std::string state = "kept";  // new, kept, lost
  std::optional<sandbox::ExecEnd> end;  // when the interpreter ended
};

CellOutcome run_in_interpreter(SessionInterpreter& in, backend::Session& sandbox, const std::string& code,
                               const std::map<std::string, std::string>& env, Clock::time_point deadline,
                               std::uint64_t max_output) {
  CellOutcome out;
  json request = {{"id", in.next_cell++}, {"code", code}, {"max_output", max_output}, {"env", env}};
  std::string line;
  LineEnd got = LineEnd::closed;
  in.running = in.process->exec.id;
  std::string text = request.dump() + "\n";
  const bool sent = write_all(in.process->exec.stdin_w.get(), text, deadline);
  OPENSSL_cleanse(text.data(), text.size());  // it holds the credentials' values
  for (auto& value : request["env"]) {
    auto& held = value.get_ref<std::string&>();
    OPENSSL_cleanse(held.data(), held.size());
  }
  if (sent)
    got = read_line(*in.process, deadline, line);
  else if (Clock::now() >= deadline)
    got = LineEnd::timeout;
  in.running = 0;
  if (got == LineEnd::line) {
    auto answer = json::parse(line, nullptr, false);
    if (answer.is_object() && answer.value("id", json()) == request["id"]) {
      out.answer = std::move(answer);
      out.verdict = out.answer->contains("error") ? "exception" : "ok";
      return out;
    }
    got = LineEnd::closed;  // not its answer: the channel cannot be trusted any more
  }
  out.verdict = got == LineEnd::timeout ? "timeout" : got == LineEnd::too_long ? "output_limit" : "interpreter_exited";
  out.end = kill_interpreter(in, sandbox);
  out.state = "lost";
  return out;
}

// What leaves the session: the session's credentials taken out, then the DLP policy applied
// (a blocking finding withholds the whole answer).
struct Screen {
  const dlp::Scanner* dlp = nullptr;
  SessionCredentials::Redaction credentials;
  std::vector<json> redactions;
  bool blocked = false;

  bool apply(std::string& text, const char* where) {
    bool changed = false;
    if (credentials.literals && credentials.scanner) {
      dlp::ScanOptions o;
      o.literals = credentials.literals.get();
      o.json = dlp::JsonMode::off;
      if (dlp::redact_credential_text(text, *credentials.scanner, o)) {
        redactions.push_back({{"detector", "credential"}, {"where", where}});
        changed = true;
      }
    }
    if (!dlp) return changed;
    dlp::ScanOptions bytes_only;
    bytes_only.json = dlp::JsonMode::off;
    const auto result = dlp->scan(text, bytes_only);
    if (result.findings.empty()) return changed;
    blocked = blocked || result.blocked;
    for (const auto& f : result.findings) redactions.push_back({{"detector", f.detector}, {"where", where}});
    text = dlp->redact(text, result);
    return true;
  }
};

// The interpreter's answer as the caller sees it: every text screened; the result's JSON kept
// only when its text needed nothing taken out.
json screened_answer(json answer, Screen& screen) {
  json out = {{"stdout", ""}, {"stderr", ""}, {"images", json::array()}};
  for (const char* stream : {"stdout", "stderr"}) {
    std::string text = answer.value(stream, "");
    screen.apply(text, stream);
    out[stream] = text;
    const auto bytes = answer.value(std::string(stream) + "_bytes", std::uint64_t{0});
    if (bytes > text.size()) out[std::string(stream) + "_truncated_bytes"] = bytes;
  }
  if (auto r = answer.find("result"); r != answer.end() && r->is_object()) {
    std::string repr = r->value("repr", "");
    const bool changed = screen.apply(repr, "result");
    out["result"] = {{"repr", repr}};
    if (r->contains("json") && !changed) {
      std::string dumped = (*r)["json"].dump();
      if (!screen.apply(dumped, "result")) out["result"]["json"] = (*r)["json"];
    }
  }
  if (auto e = answer.find("error"); e != answer.end() && e->is_object()) {
    std::string value = e->value("value", "");
    screen.apply(value, "error");
    json traceback = json::array();
    for (const auto& l : e->value("traceback", json::array())) {
      std::string text = l.is_string() ? l.get<std::string>() : "";
      screen.apply(text, "error");
      traceback.push_back(text);
    }
    out["error"] = {{"name", e->value("name", "")}, {"value", value}, {"traceback", traceback}};
  }
  for (const auto& image : answer.value("images", json::array()))  // PNG: not text DLP reads
    if (image.is_object() && image.value("type", "") == "image/png" && image["data"].is_string())
      out["images"].push_back({{"type", "image/png"}, {"data", image["data"]}});
  return out;
}

// DLP on the code (dlp/code_scan.hpp): never rewritten; refused, or its findings reported
// beside the answer as a python-code tool's are (dlp_findings).
Result<json> scan_code(const dlp::Scanner* dlp, const std::string& code) {
  json findings = json::array();
  if (!dlp) return findings;
  dlp::CodeScan scan = dlp::scan_code(*dlp, code);
  if (scan.refusal) return Error::make("dlp_blocked", *scan.refusal + " (nothing ran)");
  for (const auto& f : scan.findings) findings.push_back({{"detector", f.detector}, {"where", "code"}, {"line", f.line}});
  return findings;
}

// The template's validation policy over the cell: a rejection names the first error's rule and
// line. Warnings come back for the record.
Result<std::vector<validate::Finding>> validate_cell(const policy::SessionTemplate& t, const std::string& code) {
  auto policy = pipeline::code_policy(t.validation, t.network, "python3");
  if (!policy) return Error::make("setup_error", "session template " + t.name + "'s validation: " + policy.error().message);
  auto report = validate::check(code, *policy);
  if (report.verdict == validate::Verdict::accept) return report.findings;
  const validate::Finding* first = &report.findings.front();
  for (const auto& f : report.findings)
    if (f.severity == validate::Severity::error) {
      first = &f;
      break;
    }
  return Error::make("code_rejected", "the code was rejected: " + first->rule + " at line " + std::to_string(first->line) +
                                          ": " + first->message.substr(0, 300) + " (nothing ran)");
}

std::uint64_t total_ns(const std::optional<sandbox::CpuTime>& cpu) { return cpu ? cpu->user_ns + cpu->sys_ns : 0; }

// The cell's CPU: the session's counter after it less before it. The interpreter is one
// long-lived exec, so where the counter is only read at an exec's end (Kubernetes) it is read
// afresh after the cell (one pods/exec): the pod's CPU since the previous reading, whatever
// used it. Without that reading a cell would show none and charge none to cpuSeconds.
std::uint64_t cell_cpu_ns(backend::Session& sandbox, std::uint64_t before_ns) {
  const std::uint64_t after_ns = total_ns(sandbox.read_cpu_now());
  return after_ns - std::min(after_ns, before_ns);
}

// The cell's audit record, as an exec's (session, owner, verdict, usage, digests).
audit::InvocationRecord cell_record(const ExecRun::Context& ctx, const std::string& code, const json& answer,
                                    const std::vector<validate::Finding>& findings, milliseconds timeout) {
  const LiveSession& s = *ctx.session;
  audit::InvocationRecord record;
  record.invocation_id = ctx.invocation_id;
  record.principal = s.owner.principal;
  if (!s.owner.sub.empty()) record.subject = audit::SubjectRecord{s.owner.issuer, s.owner.sub, ctx.caller.subject_jti_sha256};
  record.access_rule = "session owner";
  record.tool = "session/" + s.template_name;
  record.command = {"python3", "<code cell>"};
  record.limits = {{"timeout_ms", static_cast<std::uint64_t>(timeout.count())}, {"output_bytes", s.output_bytes}};
  record.verdict = answer["verdict"];
  for (const auto& [k, v] : answer["usage"].items()) record.usage[k] = v.get<std::uint64_t>();
  record.input = audit::ContentDigest::of(code);
  record.output = audit::ContentDigest::of(answer.value("stdout", ""));
  record.error_output = audit::ContentDigest::of(answer.value("stderr", ""));
  for (const auto& f : findings)
    record.findings.push_back({f.rule, std::string(validate::severity_name(f.severity)), f.message.substr(0, 300),
                               f.line > 0 ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(f.line)) : std::nullopt});
  record.session = s.id;
  return record;
}

// Runs the admitted, checked cell in the interpreter and builds its answer (not yet recorded).
json answer_cell(const ExecRun::Context& ctx, const policy::SessionTemplate& t, SessionInterpreter& in,
                 const std::string& code, milliseconds timeout, Screen& screen,
                 SessionCredentials::ForExec& credentials) {
  backend::Session& sandbox = *ctx.session->sandbox;
  const auto began = Clock::now();
  const auto cpu_before = total_ns(sandbox.cpu_used());
  json answer;
  if (!in.process) {
    if (auto started = start_interpreter(in, sandbox, t, credentials.env); !started)
      answer = {{"verdict", "interpreter_failed"}, {"message", started.error().message}, {"interpreter", {{"state", "lost"}}}};
    else
      answer["interpreter"] = {{"state", "new"}, {"start", *started ? "ahead" : "now"}};
  }
  if (in.process) {
    CellOutcome outcome = run_in_interpreter(in, sandbox, code, credentials.env, began + timeout, ctx.session->output_bytes);
    const json interpreter = outcome.state == "kept" && answer.contains("interpreter") ? answer["interpreter"]
                                                                                     : json{{"state", outcome.state}};
    answer = outcome.answer ? screened_answer(std::move(*outcome.answer), screen) : json::object();
    answer["verdict"] = outcome.verdict;
    if (screen.blocked) answer = {{"verdict", "dlp_blocked"}, {"message", "the cell's output holds data the DLP policy blocks"}};
    answer["interpreter"] = interpreter;
    if (outcome.state == "lost")
      answer["message"] = outcome.verdict == "timeout" ? "the cell ran past its timeout: the interpreter was ended and its state is gone"
                                                       : "the interpreter ended during the cell: its state is gone";
  }
  creds::wipe_secrets(credentials.env);
  const auto cpu = cell_cpu_ns(sandbox, cpu_before);
  answer["usage"] = {{"wall_ms", std::chrono::duration_cast<milliseconds>(Clock::now() - began).count()},
                     {"cpu_ms", cpu / 1'000'000}};
  return answer;
}

}  // namespace

Result<CodeRequest> parse_code_request(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_input("the body must be a JSON object {\"code\": \"...\"}");
  CodeRequest r;
  for (const auto& [key, value] : j.items()) {
    if (key == "code" && value.is_string()) {
      r.code = value.get<std::string>();
    } else if (key == "timeout") {
      if (value.is_number_unsigned() && value.get<std::uint64_t>() > 0) {
        r.timeout = milliseconds(value.get<std::uint64_t>());
        continue;
      }
      if (!value.is_string()) return invalid_input("timeout: a duration (\"30s\") or milliseconds");
      auto d = parse_duration(value.get<std::string>());
      if (!d || *d <= std::chrono::nanoseconds(0)) return invalid_input("timeout: a duration (\"30s\") or milliseconds");
      r.timeout = std::chrono::duration_cast<milliseconds>(*d);
    } else {
      return invalid_input("'" + key + "': expected code (a string) and timeout");
    }
  }
  if (!j.contains("code")) return invalid_input("code: missing (the Python to run)");
  return r;
}

Result<json> run_code_cell(const ExecRun::Context& ctx, const CodeRequest& request) {
  LiveSession& session = *ctx.session;
  const policy::Config& config = *ctx.generation->config;
  const policy::SessionTemplate* t = config.find_session_template(session.template_name);
  if (!t) return Error::make("session_ended", "the session's template is no longer configured");
  auto hold = admit_session_work(ctx.quotas.get(), config, session.owner);
  if (!hold) return hold.error();
  auto findings = validate_cell(*t, request.code);
  if (!findings) return findings.error();
  const dlp::Scanner* dlp = ctx.generation->pipeline ? ctx.generation->pipeline->scanner().get() : nullptr;
  auto code_findings = scan_code(dlp, request.code);
  if (!code_findings) return code_findings.error();

  SessionInterpreter& in = interpreter_of(session);
  std::unique_lock cell(in.cell_mu, std::try_to_lock);
  if (!cell.owns_lock()) return Error::make("interpreter_busy", "a cell is running in this session's interpreter");
  if (auto refused = session.begin_exec()) return *refused;
  Screen screen{dlp, {}, {}, false};
  SessionCredentials::ForExec credentials;
  if (session.credentials) {
    credentials = session.credentials->for_exec();
    screen.credentials = credentials.redaction;
  }
  const milliseconds timeout = request.timeout.value_or(session.exec_timeout);
  json answer = answer_cell(ctx, *t, in, request.code, timeout, screen, credentials);
  session.end_exec();
  if (ctx.quotas)
    ctx.quotas->charge_cpu(config.quotas, session.owner.principal, session.owner.quota_user(),
                           static_cast<double>(answer["usage"].value("cpu_ms", std::uint64_t{0})) / 1e3);
  answer["invocation_id"] = ctx.invocation_id;
  answer["redactions"] = screen.redactions;
  answer["dlp_findings"] = *code_findings;
  answer["findings"] = json::array();
  for (const auto& f : *findings) answer["findings"].push_back({{"rule", f.rule}, {"line", f.line}, {"message", f.message}});
  if (ctx.audit) {
    auto record = cell_record(ctx, request.code, answer, *findings, timeout);
    record.credentials = credentials.uses;
    for (const auto& f : *code_findings)
      record.dlp_findings.push_back({f.value("detector", ""), f.value("line", std::uint32_t{0})});
    if (answer.contains("message")) record.message = answer["message"];
    else if (auto e = answer.find("error"); e != answer.end()) record.message = e->value("name", "");  // not its value: data
    auto receipt = ctx.audit->append(audit::to_fields(record));
    if (!receipt) return Error::make("audit_failed", "the cell's audit record could not be written: " + receipt.error().message);
    answer["audit"] = {{"index", receipt->index}, {"leaf_hash", audit::to_hex(receipt->leaf_hash)}};
  }
  return answer;
}

sandbox::SessionExec interpreter_command(const policy::SessionTemplate& t) {
  sandbox::SessionExec command{{"python3", "-c", kInterpreterSource}, {}, ""};
  command.argv.insert(command.argv.end(), t.interpreter.preload.begin(), t.interpreter.preload.end());
  return command;
}

bool interrupt_code_cell(LiveSession& session) {
  SessionInterpreter& in = interpreter_of(session);
  const std::uint32_t id = in.running.load();
  return id != 0 && session.sandbox->signal(id, SIGINT);
}

}  // namespace airlock::server
