#include "audit/session_record.hpp"

#include <nlohmann/json.hpp>

#include "audit/canonical_json.hpp"

namespace airlock::audit {
namespace {

nlohmann::json terminal_fields(const SessionTerminalRecord& t) {
  auto text = [](const std::string& s) { return nlohmann::json(to_valid_utf8(s)); };
  nlohmann::json command = nlohmann::json::array();
  for (const auto& a : t.command) command.push_back(text(a));
  nlohmann::json fields = {{"id", text(t.id)}, {"command", command}, {"rows", t.rows}, {"columns", t.columns}};
  if (t.verdict.empty()) return fields;  // opened
  nlohmann::json redactions = nlohmann::json::array();
  for (const auto& d : t.redactions) redactions.push_back(text(d));
  fields["verdict"] = text(t.verdict);
  if (t.exit_code) fields["exit_code"] = *t.exit_code;
  if (!t.signal.empty()) fields["signal"] = text(t.signal);
  fields["input"] = {{"bytes", t.input_bytes}, {"sha256", t.input_sha256}};
  fields["output"] = {{"bytes", t.output_bytes}, {"sha256", t.output_sha256}};
  fields["redactions"] = redactions;
  fields["wall_ms"] = t.wall_ms;
  return fields;
}

}  // namespace

nlohmann::json to_fields(const SessionRecord& r) {
  auto text = [](const std::string& s) { return nlohmann::json(to_valid_utf8(s)); };
  nlohmann::json fields = {{"schema", kSessionSchema},
                           {"session_id", text(r.session_id)},
                           {"event", text(r.event)},
                           {"template", text(r.template_name)},
                           {"principal", text(r.principal)}};
  if (r.subject) fields["subject"] = subject_fields(*r.subject);
  if (!r.access_rule.empty()) fields["access_rule"] = text(r.access_rule);
  if (!r.limits.empty()) fields["limits"] = counter_fields(r.limits);
  if (!r.reason.empty()) fields["reason"] = text(r.reason);
  if (!r.message.empty()) fields["message"] = text(r.message);
  if (!r.usage.empty()) fields["usage"] = counter_fields(r.usage);
  if (r.event == "ended") fields["egress"] = egress_fields(r.egress);
  if (r.file) {
    nlohmann::json redactions = nlohmann::json::array();
    for (const auto& d : r.file->redactions) redactions.push_back(text(d));
    fields["file"] = {{"path", text(r.file->path)}, {"outcome", text(r.file->outcome)},
                      {"bytes", r.file->bytes}, {"redactions", redactions}};
    if (!r.file->sha256.empty()) fields["file"]["sha256"] = r.file->sha256;
  }
  if (r.terminal) fields["terminal"] = terminal_fields(*r.terminal);
  if (r.snapshot)
    fields["snapshot"] = {{"id", text(r.snapshot->id)}, {"bytes", r.snapshot->bytes}, {"sha256", r.snapshot->sha256}};
  if (!r.credentials.empty()) fields["credentials"] = credential_fields(r.credentials);
  if (!r.credentials_revoked.empty()) {
    auto ended = nlohmann::json::array();
    for (const auto& l : r.credentials_revoked)
      ended.push_back({{"lease_id", text(l.lease_id)}, {"name", text(l.name)}, {"provider", text(l.provider)},
                       {"state", text(l.state)}});
    fields["credentials_revoked"] = std::move(ended);
  }
  return fields;
}

}  // namespace airlock::audit
