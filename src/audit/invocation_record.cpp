#include "audit/invocation_record.hpp"

#include <openssl/rand.h>

#include <array>
#include <nlohmann/json.hpp>
#include <random>

#include "audit/canonical_json.hpp"
#include "audit/hash.hpp"

namespace airlock::audit {
namespace {

nlohmann::json text(std::string_view value) { return to_valid_utf8(value); }

nlohmann::json to_json(const ContentDigest& digest) {
  nlohmann::json j{{"sha256", digest.sha256},
                   {"bytes", digest.bytes},
                   {"discarded_bytes", digest.discarded_bytes}};
  if (digest.redacted) j["redacted"] = text(*digest.redacted);
  return j;
}

nlohmann::json optional_digest(const std::optional<ContentDigest>& digest) {
  return digest ? to_json(*digest) : nlohmann::json();
}

nlohmann::json to_json(const EgressDecision& d) {
  return {{"host", text(d.host)},     {"port", d.port},           {"address", text(d.address)},
          {"allowed", d.allowed},     {"rule", text(d.rule)},     {"bytes_up", d.bytes_up},
          {"bytes_down", d.bytes_down}, {"ms", d.ms}};
}

nlohmann::json to_json(const ValidatorFinding& f) {
  return {{"rule", text(f.rule)},
          {"severity", text(f.severity)},
          {"message", text(f.message)},
          {"line", f.line ? nlohmann::json(*f.line) : nlohmann::json()}};
}

template <typename T>
nlohmann::json array_of(const std::vector<T>& items) {
  auto out = nlohmann::json::array();
  for (const auto& item : items) out.push_back(to_json(item));
  return out;
}

}  // namespace

nlohmann::json counter_fields(const std::map<std::string, std::uint64_t>& values) {
  auto out = nlohmann::json::object();
  for (const auto& [name, value] : values) out[to_valid_utf8(name)] = value;
  return out;
}

nlohmann::json egress_fields(const std::vector<EgressDecision>& egress) { return array_of(egress); }

nlohmann::json subject_fields(const SubjectRecord& s) {
  return {{"issuer", text(s.issuer)}, {"sub", text(s.sub)}, {"jti_sha256", text(s.jti_sha256)}};
}

ContentDigest ContentDigest::of(std::string_view content) {
  return {to_hex(audit::sha256(content)), content.size(), 0, std::nullopt};
}

nlohmann::json credential_fields(const std::vector<CredentialUse>& uses) {
  auto credentials = nlohmann::json::array();
  for (const auto& c : uses) {
    nlohmann::json use = {{"name", text(c.name)}, {"hmac_sha256", text(c.fingerprint)}};
    if (!c.lease_id.empty()) {
      auto scopes = nlohmann::json::array();
      for (const auto& scope : c.scopes) scopes.push_back(text(scope));
      use["lease_id"] = text(c.lease_id);
      use["provider"] = text(c.provider);
      use["scopes"] = std::move(scopes);
      use["expires_at"] = c.expires_at;
    }
    credentials.push_back(std::move(use));
  }
  return credentials;
}

nlohmann::json to_fields(const InvocationRecord& r) {
  auto command = nlohmann::json::array();
  for (const auto& arg : r.command) command.push_back(text(arg));
  nlohmann::json fields = {{"schema", kInvocationSchema},
          {"invocation_id", text(r.invocation_id)},
          {"principal", text(r.principal)},
          {"tool", text(r.tool)},
          {"command", std::move(command)},
          {"limits", counter_fields(r.limits)},
          {"verdict", text(r.verdict)},
          {"exit", {{"code", r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json()},
                    {"signal", r.signal ? text(*r.signal) : nlohmann::json()}}},
          {"message", text(r.message)},
          {"usage", counter_fields(r.usage)},
          {"egress", egress_fields(r.egress)},
          {"input", optional_digest(r.input)},
          {"output", optional_digest(r.output)},
          {"stderr", optional_digest(r.error_output)},
          {"findings", array_of(r.findings)},
          {"credentials", credential_fields(r.credentials)}};
  // Added with identity (issue #15): present only when set, so records without them keep
  // their form.
  if (r.subject) fields["subject"] = subject_fields(*r.subject);
  if (!r.access_rule.empty()) fields["access_rule"] = text(r.access_rule);
  if (!r.session.empty()) fields["session"] = text(r.session);  // issue #35
  if (!r.dlp_findings.empty()) {  // issue #36
    auto& found = fields["dlp_findings"] = nlohmann::json::array();
    for (const auto& f : r.dlp_findings) found.push_back({{"detector", text(f.detector)}, {"line", f.line}});
  }
  return fields;
}

std::string new_invocation_id() {
  std::array<std::uint8_t, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    std::random_device random;  // still unpredictable enough for an identifier
    for (auto& b : bytes) b = static_cast<std::uint8_t>(random());
  }
  bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string hex = to_hex(ByteView(bytes));
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

}  // namespace airlock::audit
