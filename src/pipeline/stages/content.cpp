#include "pipeline/stages/content.hpp"

#include <algorithm>
#include <set>

#include "common/json_limits.hpp"
#include "common/json_text.hpp"
#include "dlp/code_scan.hpp"
#include "dlp/json/json_value.hpp"
#include "pipeline/code_policy.hpp"

namespace airlock::pipeline {
namespace {

// A finding's message names what the code contains (an import, a path), so hostile code
// could make it long: each is cut at a character boundary.
constexpr std::size_t kMaxFindingMessageBytes = 300;

std::string bounded_message(const std::string& message) {
  if (message.size() <= kMaxFindingMessageBytes) return message;
  std::size_t end = kMaxFindingMessageBytes;
  while (end > 0 && (static_cast<unsigned char>(message[end]) & 0xC0) == 0x80) --end;
  return message.substr(0, end) + "...";
}

// The first error names the refusal; every finding is in error.findings.
std::string rejection_message(const validate::Report& report) {
  const validate::Finding* first = &report.findings.front();
  for (const auto& f : report.findings)
    if (f.severity == validate::Severity::error) {
      first = &f;
      break;
    }
  std::string message = "the code was rejected: " + first->rule + " at line " +
                        std::to_string(first->line) + ": " + bounded_message(first->message);
  const std::size_t n = report.findings.size();
  if (n > 1) message += " (" + std::to_string(n) + " findings";
  if (n > kMaxReportedFindings)
    message += ", the first " + std::to_string(kMaxReportedFindings) + " listed";
  if (n > 1) message += ")";
  return message;
}

// Redaction replaces bytes inside strings: the text it leaves nests as deep as the value it
// was written from, which its parser bounded; this bound only keeps the parse bounded.
constexpr std::size_t kRedactedDepthBound = 1u << 16;

// "aws_access_key_id, email": the detectors of the findings, each once.
std::string detector_list(const dlp::ScanResult& result, bool blocking_only) {
  std::set<std::string> detectors;
  for (const auto& f : result.findings)
    if (!blocking_only || f.action == dlp::Action::block) detectors.insert(std::string(f.detector));
  std::string list;
  for (const auto& d : detectors) list += (list.empty() ? "" : ", ") + d;
  return list;
}

}  // namespace

Result<std::unique_ptr<ValidateCodeStage>> ValidateCodeStage::create(const policy::Config& config) {
  auto stage = std::make_unique<ValidateCodeStage>();
  for (const auto& tool : config.tools) {
    if (tool.runtime.kind != policy::ToolRuntime::Kind::python_code) continue;
    auto made = code_policy(tool.validation, tool.network, tool.runtime.interpreter);
    if (!made) return Error::make("config", tool.where + ": tool " + tool.name + ": " + made.error().message);
    validate::Policy& p = *made;
    if (auto warmed = stage->validator_.prepare(p); !warmed)
      return Error::make("setup", "tool " + tool.name + ": the code validator could not start: " +
                                      warmed.error().message);
    stage->policies_[tool.name] = std::move(p);
  }
  return stage;
}

StageResult ValidateCodeStage::run(Invocation& inv, StageContext&) {
  auto policy = policies_.find(inv.tool_name);
  if (policy == policies_.end()) return StageResult::next();  // not a python-code tool
  if (!inv.arguments.contains("code") || !inv.arguments["code"].is_string())
    return deny(ErrorKind::invalid_input, "python-code tools take the code as a string in \"code\"",
                "/arguments/code");
  validate::Report report = validator_.check(inv.arguments["code"].get<std::string>(), policy->second);
  inv.validator_findings_total = report.findings.size();
  for (const auto& f : report.findings) {
    if (inv.validator_findings.size() == kMaxReportedFindings) break;
    validate::Finding kept = f;
    kept.message = bounded_message(f.message);
    inv.validator_findings.push_back(std::move(kept));
  }
  if (report.verdict == validate::Verdict::accept) return StageResult::next();
  return deny(ErrorKind::code_rejected, rejection_message(report));
}

Result<std::shared_ptr<const dlp::Scanner>> make_scanner(const policy::Config& config) {
  dlp::Policy p = dlp::Policy::defaults();
  if (!config.dlp_policy.empty()) {
    auto loaded = dlp::load_policy_file(config.dlp_policy);
    if (!loaded) return loaded.error();
    p = std::move(*loaded);
  }
  auto scanner = dlp::Scanner::create(p);
  if (!scanner) return scanner.error();
  return std::make_shared<const dlp::Scanner>(std::move(*scanner));
}

// The agent's stated reason is shown to approvers beside the arguments: blocked or redacted
// by the same policy. A refusal, or none.
std::optional<StageResult> ScanStage::scan_reason(Invocation& inv) const {
  dlp::ScanOptions bytes_only;
  bytes_only.json = dlp::JsonMode::off;
  auto result = scanner_->scan(inv.reason, bytes_only);
  if (result.findings.empty()) return std::nullopt;
  if (result.blocked)
    return StageResult(deny(ErrorKind::dlp_blocked, "the reason contains data the DLP policy blocks (" +
                                                        detector_list(result, /*blocking_only=*/true) + ")"));
  inv.reason = scanner_->redact(inv.reason, result);
  for (const auto& f : result.findings)
    if (f.action != dlp::Action::allow) inv.redactions.push_back({std::string(f.detector), "reason"});
  return std::nullopt;
}

// Model-written code is never redacted: a finding in it refuses the call, or is reported beside
// a run of the code as written (dlp/code_scan.hpp).
std::optional<StageResult> ScanStage::scan_code(Invocation& inv, const std::string& code) const {
  dlp::CodeScan scan = dlp::scan_code(*scanner_, code);
  if (scan.refusal) return StageResult(deny(ErrorKind::dlp_blocked, *scan.refusal));
  for (auto& f : scan.findings) inv.code_findings.push_back({std::move(f.detector), f.line});
  return std::nullopt;
}

StageResult ScanStage::run(Invocation& inv, StageContext& ctx) {
  const bool input = direction_ == Direction::input;
  const policy::ToolConfig* tool = ctx.tool(inv);
  const bool code_tool = input && tool && tool->runtime.kind == policy::ToolRuntime::Kind::python_code &&
                         inv.arguments.is_object() && inv.arguments.contains("code") && inv.arguments["code"].is_string();
  if (!code_tool) return scan(inv, input);
  // The code is scanned on its own; the other arguments as any tool's, then the code goes back.
  nlohmann::json code = std::move(inv.arguments["code"]);
  inv.arguments.erase("code");
  if (auto refused = scan_code(inv, code.get_ref<const std::string&>()); refused) {
    inv.arguments["code"] = std::move(code);
    return *refused;
  }
  StageResult rest = scan(inv, input);
  inv.arguments["code"] = std::move(code);
  if (inv.redacted_input) inv.redacted_input = dump_compact(inv.arguments);
  return rest;
}

StageResult ScanStage::scan(Invocation& inv, bool input) const {
  // The tool's log is kept with the invocation: it is redacted like the result, never blocked.
  // Airlock's notes (inv.notes) are not in it: they are ours, not the tool's, and stay as is.
  if (!input && !inv.tool_log.empty()) {
    dlp::ScanOptions bytes_only;
    bytes_only.json = dlp::JsonMode::off;
    auto log = scanner_->scan(inv.tool_log, bytes_only);
    if (!log.findings.empty()) inv.tool_log = scanner_->redact(inv.tool_log, log);
  }
  if (input && !inv.reason.empty())
    if (auto refused = scan_reason(inv); refused) return *refused;
  nlohmann::json* value = input ? &inv.arguments : (inv.output ? &*inv.output : nullptr);
  if (!value) return StageResult::next();
  // The value is scanned where it is, with the findings its compact text would give
  // (dlp/json/json_value.hpp); what cannot be laid out that way is scanned as that text.
  std::optional<dlp::ValueScan> in_place = dlp::ValueScan::scan(*scanner_, *value);
  std::string text;  // dump_compact(*value), written only when needed
  dlp::ScanResult text_result;
  if (!in_place) text_result = scanner_->scan(text = dump_compact(*value));
  const dlp::ScanResult& result = in_place ? in_place->result() : text_result;
  if (result.findings.empty()) return StageResult::next();
  if (result.blocked) {
    // The content itself never appears: only which detectors blocked it (those that would
    // only have redacted are not the reason).
    const std::string found = detector_list(result, /*blocking_only=*/true);
    if (!input) inv.output.reset();
    return deny(ErrorKind::dlp_blocked, std::string("the ") +
                                            (input ? "arguments contain" : "result contains") +
                                            " data the DLP policy blocks (" + found + ")");
  }
  const std::string found = detector_list(result, /*blocking_only=*/false);
  std::string redacted;
  if (in_place && in_place->redact_in_place(*scanner_)) {
    redacted = dump_compact(*value);  // the text redact() gives, as the audit record keeps it
  } else {
    if (text.empty()) text = dump_compact(*value);
    redacted = scanner_->redact(text, result);
    // No deeper than the value it was written from (which was bounded when it was parsed).
    auto replaced = parse_json_bounded(redacted, kRedactedDepthBound);
    if (!replaced)  // redaction must leave valid JSON; if not, withhold (fail closed)
      return deny(ErrorKind::dlp_blocked, "redacting the " + std::string(input ? "arguments" : "result") +
                                              " did not leave valid JSON (" + found + "), so it is withheld");
    *value = std::move(*replaced);
  }
  for (const auto& f : result.findings)
    if (f.action != dlp::Action::allow)
      inv.redactions.push_back({std::string(f.detector), input ? "input" : "output"});
  (input ? inv.redacted_input : inv.redacted_output) = std::move(redacted);
  return StageResult::next();
}

}  // namespace airlock::pipeline
