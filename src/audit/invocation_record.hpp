// The record of one tool invocation, as plain data, and its JSON fields for AuditLog::append.
// This struct is audit/'s own: the pipeline fills it from whatever stages ran; for a bare
// sandbox run, audit/sandbox_record.hpp fills it from a sandbox::Spec and Outcome.
//
// Secrets never enter a record: outputs appear as SHA-256 digests (plus DLP-redacted text only
// when the caller passes it), credentials as HMAC-SHA256 fingerprints of their values
// (AuditLog::credential_fingerprint).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace airlock::audit {

inline constexpr const char* kInvocationSchema = "airlock.invocation/v1";

struct ContentDigest {
  std::string sha256;                  // hex, of the bytes kept
  std::uint64_t bytes = 0;             // how many bytes the digest covers
  std::uint64_t discarded_bytes = 0;   // bytes past a limit, dropped before hashing
  std::optional<std::string> redacted;  // DLP-redacted text, when the caller has it

  static ContentDigest of(std::string_view content);
};

struct EgressDecision {
  std::string host;
  std::uint16_t port = 0;
  std::string address;
  bool allowed = false;
  std::string rule;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::uint64_t ms = 0;
};

struct ValidatorFinding {
  std::string rule;
  std::string severity;
  std::string message;
  std::optional<std::uint32_t> line;
};

// Data DLP found in submitted code that ran as written (spec.code.onFinding: report): which
// detector, at which line of the code. Never the data.
struct CodeFindingRecord {
  std::string detector;
  std::uint32_t line = 0;
};

struct CredentialUse {
  std::string name;         // which credential (never its value): the variable it was given as
  std::string fingerprint;  // AuditLog::credential_fingerprint(value)
  // Its lease (issue #16; absent from the record when lease_id is empty).
  std::string lease_id;
  std::string provider;             // "token", "postgres", "oauth-exchange", "secret"
  std::vector<std::string> scopes;  // what it granted
  std::int64_t expires_at = 0;      // seconds since the epoch
};

// The user a call was made for: the token's issuer (its configured name) and `sub`, and the
// SHA-256 of its `jti` (hex; "" when it had none). Never the token.
struct SubjectRecord {
  std::string issuer;
  std::string sub;
  std::string jti_sha256;
};

struct InvocationRecord {
  std::string invocation_id;
  std::string principal;
  std::optional<SubjectRecord> subject;  // absent from the record when there is none
  std::string access_rule;               // what decided; absent when empty
  std::string tool;
  std::vector<std::string> command;
  std::map<std::string, std::uint64_t> limits;  // e.g. wall_time_ms, memory_bytes
  std::string verdict;                          // the sandbox verdict, or the denying stage's
  std::optional<std::int64_t> exit_code;
  std::optional<std::string> signal;            // "SIGKILL"
  std::string message;
  std::map<std::string, std::uint64_t> usage;   // e.g. wall_ms, cpu_user_ms
  std::vector<EgressDecision> egress;
  std::optional<ContentDigest> input;
  std::optional<ContentDigest> output;          // stdout
  std::optional<ContentDigest> error_output;    // stderr
  std::vector<ValidatorFinding> findings;
  std::vector<CredentialUse> credentials;
  std::string session;  // an exec in a session: its id (absent from the record when empty)
  std::vector<CodeFindingRecord> dlp_findings;  // absent from the record when empty
};

// The record's members (docs/audit.md, "Invocation records"). Text from outside is made valid
// UTF-8 (invalid bytes become U+FFFD) so the result always has a canonical form.
nlohmann::json to_fields(const InvocationRecord& record);

// Parts of a record, shared with the session's (session_record.hpp).
nlohmann::json egress_fields(const std::vector<EgressDecision>& egress);
nlohmann::json subject_fields(const SubjectRecord& subject);
nlohmann::json counter_fields(const std::map<std::string, std::uint64_t>& values);
nlohmann::json credential_fields(const std::vector<CredentialUse>& uses);

// 128 random bits in the 8-4-4-4-12 hex form (a version 4 UUID).
std::string new_invocation_id();

}  // namespace airlock::audit
