// The credentials stage (docs/credentials.md): after the tier is known and before the tool
// runs, leases every credential the tool is configured with, for this call and this user,
// and registers the finalizer that, however the run ends, takes every issued value (and its
// encodings) out of what leaves and revokes the leases.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "creds/broker.hpp"
#include "dlp/scanner.hpp"
#include "pipeline/stage.hpp"

namespace airlock::pipeline {

// How long a call's credentials may live past its wall-time limit (the margin of `exp`).
inline constexpr std::chrono::seconds kCredentialMargin{30};

// What the sandbox sees in place of a credential the egress proxy injects.
std::string injection_placeholder(const std::string& env);

// A user token's scopes: `scope` (RFC 8693: space-separated) or `scp` (a list, or a string);
// nullopt when it has neither (the token does not narrow a credential's scopes).
std::optional<std::vector<std::string>> user_token_scopes(const Subject& user);

class CredentialsStage : public Stage {
 public:
  // `fingerprint`: the audit log's keyed HMAC of a value (AuditLog::credential_fingerprint).
  static Result<std::unique_ptr<CredentialsStage>> create(
      std::shared_ptr<creds::Broker> broker, std::function<std::string(std::string_view)> fingerprint);
  std::string_view name() const override { return "credentials"; }
  StageResult run(Invocation& inv, StageContext& ctx) override;

 private:
  CredentialsStage() = default;
  // A tool of an MCP server: its server's credentials are leased when its instance starts
  // (for the call's owner), not per call; this arms the leaser and the redaction.
  StageResult arm_server_credentials(Invocation& inv, StageContext& ctx, const policy::ToolConfig& tool);
  std::shared_ptr<creds::Broker> broker_;
  std::function<std::string(std::string_view)> fingerprint_;
  std::shared_ptr<const dlp::Scanner> literal_scanner_;  // only the values, always redacted
};

// Replaces every one of `values`, and its base64, hex and URL-encoded forms, in whatever of
// the invocation may leave (result, DLP's redacted text, the tool's log, notes, error
// message, the run's raw output) with [REDACTED:CREDENTIAL], and lists the redactions.
// A result that is no longer JSON once redacted is withheld (fail closed).
Status redact_credentials(Invocation& inv, const dlp::Scanner& literal_scanner,
                          const std::vector<std::string>& values);

}  // namespace airlock::pipeline
