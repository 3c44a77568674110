#include "pipeline/stages/audit_record.hpp"

#include "audit/audit_log.hpp"
#include "audit/invocation_record.hpp"
#include "audit/sandbox_record.hpp"

namespace airlock::pipeline {
namespace {

// The validator's line is an int (0: the whole source), which nlohmann stores as a signed
// number: is_number_unsigned() would say no to every line.
std::optional<std::uint32_t> finding_line(const nlohmann::json& f) {
  auto it = f.find("line");
  if (it == f.end() || !it->is_number_integer()) return std::nullopt;
  const auto line = it->get<std::int64_t>();
  if (line < 1 || line > UINT32_MAX) return std::nullopt;
  return static_cast<std::uint32_t>(line);
}

}  // namespace

std::optional<InvocationError> AuditStage::run(Invocation& inv) {
  if (failed_auth_ && inv.error && inv.error->kind == "unauthenticated") {
    const bool no_key = !inv.bearer_key || inv.bearer_key->empty();
    failed_auth_->note(inv.peer, inv.tool_name, no_key ? "missing_key" : "invalid_key");
    return std::nullopt;
  }
  audit::InvocationRecord record;
  const std::string principal = inv.principal ? inv.principal->name : "(unauthenticated)";
  if (inv.request && inv.outcome) {
    record = audit::record_from_run(*inv.request, *inv.outcome, {inv.id, principal, inv.tool_name});
  } else {
    record.invocation_id = inv.id;
    record.principal = principal;
    record.tool = inv.tool_name;
  }
  // What the pipeline knows beyond the sandbox run.
  if (inv.error) {
    if (!inv.outcome || inv.error->kind != std::string(sandbox::verdict_name(inv.outcome->verdict)))
      record.verdict = inv.outcome ? std::string(sandbox::verdict_name(inv.outcome->verdict)) : inv.error->kind;
    record.message = inv.error->status + ": " + inv.error->kind + ": " + inv.error->message;
  } else if (record.verdict.empty()) {
    record.verdict = "ok";
  }
  record.input = audit::ContentDigest::of(inv.raw_body);
  if (inv.redacted_input) record.input->redacted = *inv.redacted_input;
  if (inv.redacted_output) {
    if (!record.output) record.output = audit::ContentDigest::of("");
    record.output->redacted = *inv.redacted_output;
  }
  for (const auto& f : inv.validator_findings)
    record.findings.push_back({f.value("rule", ""), f.value("severity", ""), f.value("message", ""),
                               finding_line(f)});
  auto receipt = log_.append(audit::to_fields(record));
  if (!receipt)
    return InvocationError{"audit_failed",
                           "the invocation could not be recorded in the audit log, so it has no result: " +
                               receipt.error().message,
                           "error", 500, ""};
  inv.audit = Invocation::AuditRef{receipt->index, audit::to_hex(receipt->leaf_hash)};
  return std::nullopt;
}

Status record_aborted(audit::AuditLog& log, const std::string& id, const std::string& tool) {
  audit::InvocationRecord record;
  record.invocation_id = id;
  record.tool = tool;
  record.principal = "(unknown)";
  record.verdict = "aborted";
  record.message = "the daemon stopped (killed or crashed) while this invocation ran";
  auto receipt = log.append(audit::to_fields(record));
  if (!receipt) return receipt.error();
  return {};
}

}  // namespace airlock::pipeline
