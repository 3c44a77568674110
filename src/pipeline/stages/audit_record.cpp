#include "pipeline/stages/audit_record.hpp"

#include "audit/audit_log.hpp"
#include "audit/invocation_record.hpp"
#include "audit/sandbox_record.hpp"
#include "pipeline/stages/access.hpp"

namespace airlock::pipeline {
namespace {

// The validator's line is 0 for a finding about the whole source: the record has no line then.
std::optional<std::uint32_t> finding_line(const validate::Finding& f) {
  if (f.line < 1) return std::nullopt;
  return static_cast<std::uint32_t>(f.line);
}

}  // namespace

StageResult AuditStage::run(Invocation& inv, StageContext&) {
  if (failed_auth_ && inv.error && inv.error->kind == ErrorKind::unauthenticated) {
    const auto key = bearer_token(inv.headers);
    failed_auth_->note(inv.peer, inv.tool_name, !key || key->empty() ? "missing_key" : "invalid_key");
    return StageResult::next();
  }
  audit::InvocationRecord record;
  const std::string principal =
      inv.actor ? inv.actor->principal : (inv.subject ? "(none: a user called directly)" : "(unauthenticated)");
  if (inv.request && inv.outcome) {
    record = audit::record_from_run(*inv.request, *inv.outcome, {inv.id, principal, inv.tool_name});
  } else {
    record.invocation_id = inv.id;
    record.principal = principal;
    record.tool = inv.tool_name;
  }
  // What the pipeline knows beyond the sandbox run.
  if (inv.subject) record.subject = audit::SubjectRecord{inv.subject->issuer, inv.subject->sub, inv.subject_jti_sha256};
  record.access_rule = inv.access_rule;
  for (const auto& c : inv.credential_leases)
    record.credentials.push_back({c.lease.env, c.hmac_sha256, c.lease.id, c.lease.provider, c.lease.scopes,
                                  std::chrono::duration_cast<std::chrono::seconds>(
                                      c.lease.expires_at.time_since_epoch()).count()});
  if (inv.error) {
    const std::string kind(inv.error->kind_name());
    if (!inv.outcome || kind != sandbox::verdict_name(inv.outcome->verdict))
      record.verdict = inv.outcome ? std::string(sandbox::verdict_name(inv.outcome->verdict)) : kind;
    record.message = std::string(inv.error->status()) + ": " + kind + ": " + inv.error->message;
  } else if (record.verdict.empty()) {
    record.verdict = "ok";
  }
  record.input = audit::ContentDigest::of(inv.raw_body);
  if (!inv.outcome && inv.server_usage) record.usage = audit::usage_of(*inv.server_usage);
  if (inv.redacted_input) record.input->redacted = *inv.redacted_input;
  if (!record.output && inv.server_result) {  // an MCP server's result: no stdout, its text instead
    record.output = audit::ContentDigest{};
    record.output->sha256 = inv.server_result->sha256;
    record.output->bytes = inv.server_result->bytes;
  }
  if (inv.redacted_output) {
    if (!record.output) record.output = audit::ContentDigest::of("");
    record.output->redacted = *inv.redacted_output;
  }
  for (const auto& f : inv.validator_findings)
    record.findings.push_back({f.rule, std::string(validate::severity_name(f.severity)), f.message,
                               finding_line(f)});
  for (const auto& f : inv.code_findings)
    record.dlp_findings.push_back({f.detector, static_cast<std::uint32_t>(f.line)});
  auto receipt = log_.append(audit::to_fields(record));
  // The database went away (storage.postgres): the same answer as a state database that did,
  // one the caller may retry.
  if (!receipt && receipt.error().code == "storage_unavailable")
    return fail(ErrorKind::storage_unavailable,
                "the audit log is unavailable, so the invocation has no result: " + receipt.error().message);
  if (!receipt)
    return fail(ErrorKind::audit_failed,
                "the invocation could not be recorded in the audit log, so it has no result: " +
                    receipt.error().message);
  inv.audit = Invocation::AuditRef{receipt->index, audit::to_hex(receipt->leaf_hash)};
  return StageResult::next();
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
