// Who calls, and for whom (docs/identity.md). One Authenticator per configuration
// generation, shared by the authenticate stage and the API's other endpoints.
//
//   Authorization: Bearer <API key>            an agent (principals[].apiKeySha256)
//   Authorization: Bearer <agent JWT>          an agent (principals[].jwt: issuer + subject)
//   Authorization: Bearer <Airlock token>      an agent acting for a user (POST /v1/token)
//   Authorization: Bearer <user JWT>           a person calling directly: a user, no agent
//   a client certificate (mTLS), no bearer     an agent (principals[].certificate)
//   Airlock-Subject-Token: <user JWT>          next to an agent's credential: the user it acts for
//
// Tokens are verified locally and strictly (identity::Verifier). Airlock's own tokens are
// EdDSA JWTs with iss and aud "airlock", `sub` the user, `act.sub` the agent's principal.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/result.hpp"
#include "identity/signer.hpp"
#include "identity/verifier.hpp"
#include "pipeline/invocation.hpp"
#include "policy/config.hpp"

namespace airlock::pipeline {

using Headers = std::map<std::string, std::string>;  // lower-case names

inline constexpr const char* kSubjectTokenHeader = "airlock-subject-token";
inline constexpr const char* kAirlockTokenIssuer = "airlock";    // iss of Airlock's tokens
inline constexpr const char* kAirlockTokenAudience = "airlock";  // and their aud

// The token of an `Authorization: Bearer <token>` header, if there is one.
std::optional<std::string> bearer_token(const Headers& headers);

// The verified caller of a request.
struct Caller {
  std::optional<Actor> actor;      // the agent, when there is one
  std::optional<Subject> subject;  // the user, when one is given
  std::string subject_jti_sha256;  // of the user token's jti (hex), "" without one
  std::string credential;          // "api_key", "jwt", "airlock_token", "user_token", "certificate"
  std::vector<std::string> scope;  // an Airlock token's scope: the only tools it may call
  std::string user_token;          // the user's token from a configured issuer, as received
};

// A user's token, verified: who they are.
struct VerifiedUser {
  Subject subject;
  std::string jti_sha256;
  std::int64_t exp = 0;  // the token's exp in whole seconds (a fractional one rounded down)
};

// Whether Airlock revoked the token with this jti (creds::RevokedTokens::is_revoked).
using RevokedCheck = std::function<bool(std::string_view jti)>;

class Authenticator {
 public:
  // `signer`: Airlock's token key (null: Airlock's tokens are not accepted, e.g. `serve
  // --check` and `airlock policy check`). Refuses issuers the verifier cannot use.
  // `revoked`: Airlock's tokens it names are refused (POST /v1/token/revoke); empty: none is.
  static Result<std::shared_ptr<const Authenticator>> create(
      std::shared_ptr<const policy::Config> config, const identity::TokenSigner* signer,
      identity::VerifierOptions options = {}, RevokedCheck revoked = {});

  // The caller the request's credentials name, or why they name no one (unauthenticated).
  // `certificate`: the TLS client's, verified at the handshake (null: none). A bearer
  // credential, when given, decides who the agent is; the certificate does without one.
  std::variant<Caller, InvocationError> authenticate(const Headers& headers,
                                                     const policy::ClientCertificate* certificate = nullptr) const;

  // An agent's own credential (an API key or an agent JWT): the token endpoint's actor.
  std::variant<Actor, InvocationError> authenticate_agent(const std::string& credential) const;
  // A user's token from a configured issuer (never Airlock's own): a subject.
  Result<VerifiedUser> verify_user_token(const std::string& token) const;

  const identity::Verifier& verifier() const { return verifier_; }
  const policy::Config& config() const { return *config_; }

 private:
  Authenticator(std::shared_ptr<const policy::Config> config, identity::VerifierOptions options)
      : config_(std::move(config)), verifier_(std::move(options)) {}
  std::variant<Caller, InvocationError> from_bearer(const std::string& token) const;
  std::variant<Caller, InvocationError> from_token(const identity::VerifiedToken& token) const;
  std::optional<InvocationError> add_subject(Caller& caller, const std::string& token) const;
  bool is_revoked(const identity::VerifiedToken& t) const { return revoked_ && revoked_(t.jti); }

  std::shared_ptr<const policy::Config> config_;
  identity::Verifier verifier_;
  bool accepts_airlock_tokens_ = false;
  RevokedCheck revoked_;
};

}  // namespace airlock::pipeline
