#include "pipeline/stages/audit_record.hpp"

#include "audit/audit_log.hpp"
#include "audit/invocation_record.hpp"
#include "audit/sandbox_record.hpp"

namespace airlock::pipeline {

std::optional<InvocationError> AuditStage::run(Invocation& inv) {
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
                               f.contains("line") && f["line"].is_number_unsigned()
                                   ? std::optional<std::uint32_t>(f["line"].get<std::uint32_t>())
                                   : std::nullopt});
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
