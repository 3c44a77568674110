#include "pipeline/invocation_state.hpp"

namespace airlock::pipeline {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int kStateVersion = 1;

json limits_json(const sandbox::Limits& l) {
  return {{"wall_time_ms", l.wall_time.count()},
          {"cpu_time_ms", l.cpu_time ? json(l.cpu_time->count()) : json()},
          {"memory_bytes", l.memory_bytes},
          {"pids", l.pids},
          {"output_bytes", l.output_bytes},
          {"disk_bytes", l.disk_bytes},
          {"open_files", l.open_files}};
}

sandbox::Limits limits_from(const json& j) {
  sandbox::Limits l;
  l.wall_time = milliseconds(j.at("wall_time_ms").get<std::int64_t>());
  if (!j.at("cpu_time_ms").is_null()) l.cpu_time = milliseconds(j.at("cpu_time_ms").get<std::int64_t>());
  l.memory_bytes = j.at("memory_bytes").get<std::uint64_t>();
  l.pids = j.at("pids").get<std::uint32_t>();
  l.output_bytes = j.at("output_bytes").get<std::uint64_t>();
  l.disk_bytes = j.at("disk_bytes").get<std::uint64_t>();
  l.open_files = j.at("open_files").get<std::uint32_t>();
  return l;
}

json finding_json(const validate::Finding& f) {
  return {{"rule", f.rule}, {"message", f.message}, {"line", f.line}, {"col", f.col},
          {"severity", validate::severity_name(f.severity)}};
}

validate::Finding finding_from(const json& j) {
  validate::Finding f;
  f.rule = j.at("rule").get<std::string>();
  f.message = j.at("message").get<std::string>();
  f.line = j.at("line").get<int>();
  f.col = j.at("col").get<int>();
  f.severity = j.at("severity").get<std::string>() == "error" ? validate::Severity::error
                                                              : validate::Severity::warning;
  return f;
}

json error_json(const InvocationError& e) {
  return {{"kind", e.kind_name()}, {"message", e.message}, {"status", e.status()}, {"pointer", e.pointer}};
}

InvocationError error_from(const json& j) {
  auto kind = kind_from_name(j.at("kind").get<std::string>());
  if (!kind) throw std::invalid_argument("unknown error kind " + j.at("kind").dump());
  InvocationError e{*kind, j.at("message").get<std::string>(),
                    j.at("status").get<std::string>() == "denied" ? ErrorClass::denied : ErrorClass::error,
                    j.at("pointer").get<std::string>(), {}, 0};
  return e;
}

template <typename T, typename F>
json optional_json(const std::optional<T>& v, F to_json) {
  return v ? json(to_json(*v)) : json();
}

void restore_work(const json& j, Invocation& inv) {
  if (!j.at("actor").is_null()) inv.actor = Actor{j.at("actor").get<std::string>()};
  if (const auto& s = j.at("subject"); !s.is_null())
    inv.subject = Subject{s.at("issuer").get<std::string>(), s.at("sub").get<std::string>(), s.at("claims")};
  inv.access_rule = j.at("access_rule").get<std::string>();
  inv.subject_jti_sha256 = j.at("subject_jti_sha256").get<std::string>();
  inv.token_scope = j.at("token_scope").get<std::vector<std::string>>();
  inv.limits = limits_from(j.at("limits"));
  for (const auto& f : j.at("validator_findings")) inv.validator_findings.push_back(finding_from(f));
  inv.validator_findings_total = j.at("validator_findings_total").get<std::size_t>();
  for (const auto& r : j.at("redactions"))
    inv.redactions.push_back({r.at("detector").get<std::string>(), r.at("where").get<std::string>()});
  for (const auto& f : j.value("code_findings", json::array()))  // absent in older state
    inv.code_findings.push_back({f.at("detector").get<std::string>(), f.at("line").get<std::size_t>()});
  if (!j.at("redacted_input").is_null()) inv.redacted_input = j.at("redacted_input").get<std::string>();
  inv.notes = j.at("notes").get<std::vector<std::string>>();
  for (const auto& t : j.at("stage_times"))
    inv.stage_times.push_back({t.at("stage").get<std::string>(), t.at("ms").get<double>()});
  if (!j.at("error").is_null()) inv.error = error_from(j.at("error"));
}

}  // namespace

Result<json> persist(const Invocation& inv) {
  if (inv.request || inv.outcome || inv.output)
    return Error::make("state", "invocation " + inv.id + " has run: only an invocation before its run is kept");
  json findings = json::array(), redactions = json::array(), times = json::array();
  for (const auto& f : inv.validator_findings) findings.push_back(finding_json(f));
  for (const auto& r : inv.redactions) redactions.push_back({{"detector", r.detector}, {"where", r.where}});
  for (const auto& t : inv.stage_times) times.push_back({{"stage", t.stage}, {"ms", t.ms}});
  json code_findings = json::array();
  for (const auto& f : inv.code_findings) code_findings.push_back({{"detector", f.detector}, {"line", f.line}});
  const auto received = std::chrono::duration_cast<milliseconds>(inv.received.time_since_epoch()).count();
  return json{
      {"state_version", kStateVersion},
      {"id", inv.id},
      {"tool", inv.tool_name},
      {"raw_body", inv.raw_body},
      {"peer", inv.peer},
      {"arguments", inv.arguments},
      {"reason", inv.reason},
      {"received_ms", received},
      {"config_version", inv.config_version},
      {"decision_basis", inv.decision_basis},
      {"cursor", inv.cursor},
      {"suspended", optional_json(inv.suspended, [](const Suspension& s) {
         return json{{"stage", s.stage}, {"reason", s.reason}, {"data", s.data}};
       })},
      {"actor", optional_json(inv.actor, [](const Actor& a) { return a.principal; })},
      {"subject", optional_json(inv.subject, [](const Subject& s) {
         return json{{"issuer", s.issuer}, {"sub", s.sub}, {"claims", s.claims}};
       })},
      {"access_rule", inv.access_rule},
      {"subject_jti_sha256", inv.subject_jti_sha256},
      {"token_scope", inv.token_scope},
      {"limits", limits_json(inv.limits)},
      {"validator_findings", std::move(findings)},
      {"validator_findings_total", inv.validator_findings_total},
      {"redactions", std::move(redactions)},
      {"code_findings", std::move(code_findings)},
      {"redacted_input", optional_json(inv.redacted_input, [](const std::string& s) { return s; })},
      {"notes", inv.notes},
      {"stage_times", std::move(times)},
      {"error", optional_json(inv.error, error_json)},
  };
}

Result<Invocation> restore(const json& j) {
  try {
    if (j.at("state_version").get<int>() != kStateVersion)
      return Error::make("state", "unknown state_version " + j.at("state_version").dump());
    Invocation inv;
    inv.id = j.at("id").get<std::string>();
    inv.tool_name = j.at("tool").get<std::string>();
    inv.raw_body = j.at("raw_body").get<std::string>();
    inv.peer = j.at("peer").get<std::string>();
    inv.arguments = j.at("arguments");
    inv.reason = j.value("reason", "");  // absent in invocations persisted before it existed
    inv.received = std::chrono::system_clock::time_point(milliseconds(j.at("received_ms").get<std::int64_t>()));
    inv.config_version = j.at("config_version").get<std::string>();
    // Absent in what an older daemon kept: the version is compared then.
    inv.decision_basis = j.value("decision_basis", nlohmann::json::object());
    if (!inv.decision_basis.is_object()) return Error::make("state", "decision_basis is not an object");
    inv.cursor = j.at("cursor").get<std::size_t>();
    if (const auto& s = j.at("suspended"); !s.is_null())
      inv.suspended = Suspension{s.at("stage").get<std::string>(), s.at("reason").get<std::string>(), s.at("data")};
    restore_work(j, inv);
    return inv;
  } catch (const std::exception& e) {
    return Error::make("state", std::string("not a persisted invocation: ") + e.what());
  }
}

}  // namespace airlock::pipeline
