#include "server/core/invocation_response.hpp"

namespace airlock::server {
namespace {

using pipeline::ErrorKind;

nlohmann::json finding_json(const validate::Finding& f) {
  return {{"rule", f.rule},
          {"message", f.message},
          {"line", f.line},
          {"col", f.col},
          {"severity", validate::severity_name(f.severity)}};
}

nlohmann::json error_json(const pipeline::Invocation& inv) {
  if (!inv.error) return nullptr;
  const auto& e = *inv.error;
  nlohmann::json j{{"kind", e.kind_name()}, {"message", e.message}};
  if (!e.pointer.empty()) j["pointer"] = e.pointer;
  if (e.kind == ErrorKind::quota_exceeded) {
    j["quota"] = e.quota;
    j["retry_after"] = e.retry_after_seconds;
  }
  if ((e.kind == ErrorKind::forbidden || e.kind == ErrorKind::subject_required) && !inv.access_rule.empty())
    j["rule"] = inv.access_rule;
  if (e.kind == ErrorKind::code_rejected) {
    auto findings = nlohmann::json::array();
    for (const auto& f : inv.validator_findings) findings.push_back(finding_json(f));
    j["findings"] = std::move(findings);
    j["findings_total"] = inv.validator_findings_total;
  }
  if (!inv.error_details.is_null()) j["details"] = inv.error_details;
  return j;
}

}  // namespace

int http_status(const pipeline::InvocationError& error) {
  switch (error.kind) {
    case ErrorKind::unauthenticated:
    case ErrorKind::subject_required: return 401;
    case ErrorKind::forbidden:
    case ErrorKind::credential_denied:
    case ErrorKind::tool_disabled:
    case ErrorKind::tier_unavailable:
    case ErrorKind::approval_denied:
    case ErrorKind::approval_expired: return 403;
    case ErrorKind::unknown_tool: return 404;
    case ErrorKind::quota_exceeded: return 429;
    case ErrorKind::config_changed: return 409;
    case ErrorKind::invalid_input: return 400;
    case ErrorKind::code_rejected:
    case ErrorKind::dlp_blocked: return 422;
    case ErrorKind::sandbox_setup:
    case ErrorKind::audit_failed:
    case ErrorKind::internal: return 500;
    case ErrorKind::credential_unavailable:
    case ErrorKind::storage_unavailable: return 503;
    case ErrorKind::timeout:
    case ErrorKind::cpu_time_limit:
    case ErrorKind::memory_limit:
    case ErrorKind::output_limit:
    case ErrorKind::seccomp_violation:
    case ErrorKind::tool_crashed:
    case ErrorKind::invalid_output:
    case ErrorKind::stopped:
    case ErrorKind::cancelled:
    case ErrorKind::tool_server_failed:
    case ErrorKind::tool_error:
    case ErrorKind::code_error:
    case ErrorKind::egress_denied: return 200;
  }
  return 500;
}

int http_status(const pipeline::Invocation& inv) {
  if (inv.error) return http_status(*inv.error);
  return inv.suspended ? 202 : 200;
}

nlohmann::json to_response(const pipeline::Invocation& inv) {
  nlohmann::json j;
  j["id"] = inv.id;
  j["tool"] = inv.tool_name;
  // A critical call waiting for its approvers: {"status": "pending_approval", "approval": ...}
  const bool pending = inv.suspended && !inv.error && inv.suspended->stage == "approval" &&
                       inv.suspended->data.is_object();
  j["status"] = pending ? std::string("pending_approval") : inv.status();
  if (pending) j["approval"] = inv.suspended->data.value("approval", nlohmann::json::object());
  j["actor"] = inv.actor ? nlohmann::json{{"principal", inv.actor->principal}} : nlohmann::json();
  j["subject"] = inv.subject ? nlohmann::json{{"issuer", inv.subject->issuer}, {"sub", inv.subject->sub}}
                             : nlohmann::json();
  j["output"] = inv.output && (!inv.error || inv.error->kind == ErrorKind::tool_error) ? *inv.output : nlohmann::json();
  j["error"] = error_json(inv);
  j["verdict"] = inv.outcome ? nlohmann::json(sandbox::verdict_name(inv.outcome->verdict)) : nlohmann::json();
  j["usage"] = inv.usage() ? sandbox::to_json(*inv.usage()) : nlohmann::json();
  // Whether its sandbox forked from a warm template (docs/warm-start.md) or started cold.
  j["start"] = inv.outcome ? nlohmann::json(inv.outcome->warm ? "warm" : "cold") : nlohmann::json();
  auto redactions = nlohmann::json::array();
  for (const auto& r : inv.redactions) redactions.push_back({{"detector", r.detector}, {"where", r.where}});
  j["redactions"] = std::move(redactions);
  // Findings DLP left in model-written code that ran as written (docs/dlp.md, "Code").
  if (!inv.code_findings.empty()) {
    auto findings = nlohmann::json::array();
    for (const auto& f : inv.code_findings)
      findings.push_back({{"detector", f.detector}, {"where", "code"}, {"line", f.line}});
    j["dlp_findings"] = std::move(findings);
  }
  auto egress = nlohmann::json::array();
  if (inv.outcome)
    for (const auto& e : inv.outcome->egress) egress.push_back(egress::to_json(e));
  j["egress"] = std::move(egress);
  j["audit"] = inv.audit ? nlohmann::json{{"index", inv.audit->index}, {"leaf_hash", inv.audit->leaf_hash}}
                         : nlohmann::json();
  return j;
}

}  // namespace airlock::server
