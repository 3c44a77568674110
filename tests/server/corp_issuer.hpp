// The users' issuer of the approval tests (approvals, webhooks, approvals across replicas): a
// real Ed25519 key, its JWKS beside the config (the jwksFile the sections name), the identity
// and role sections those configs share, and the critical tier on the local backend.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "identity/signer.hpp"

namespace airlock::server::test {

// The server block, the issuer "corp" (its JWKS in corp-jwks.json), and two roles: staff invoke
// `requester_tools`, approvers approve danger*.
std::string corp_sections(const std::string& requester_tools = "danger*");

// `yaml` (a Workspace's config) with the critical tier run by the local backend.
std::string with_local_critical_tier(std::string yaml);

class CorpIssuer {
 public:
  static constexpr const char* kIssuer = "https://idp.corp.example";

  // Loads or makes dir/corp.key and publishes its JWKS in dir.
  static Result<CorpIssuer> open(const std::string& dir);
  // Writes dir/corp-jwks.json (another daemon's workspace trusting the same issuer).
  void publish(const std::string& dir) const;
  // A token for `sub` in `groups`: audience airlock, valid `lifetime` (ten minutes unless
  // given), jti "jti-<sub>".
  std::string token(const std::string& sub, const nlohmann::json& groups,
                    std::chrono::seconds lifetime = std::chrono::seconds(600)) const;

 private:
  explicit CorpIssuer(identity::TokenSigner signer) : signer_(std::move(signer)) {}
  identity::TokenSigner signer_;
};

}  // namespace airlock::server::test
