#include "corp_issuer.hpp"

#include <chrono>
#include <fstream>

namespace airlock::server::test {

std::string corp_sections(const std::string& requester_tools) {
  return R"(server: {listen: 127.0.0.1:0, maxBodyBytes: 64Ki, maxConcurrentInvocations: 4, queueLength: 64, drainTimeout: 20s}
identity:
  issuers:
    - {name: corp, issuer: https://idp.corp.example, audiences: [airlock], jwksFile: corp-jwks.json}
roles:
  - name: requester
    rules:
      - {effect: allow, actions: [invoke], tools: [")" +
         requester_tools + R"("]}
  - name: approver
    rules:
      - {effect: allow, actions: [approve], tools: ["danger*"]}
bindings:
  - role: requester
    users: [{issuer: corp, claim: groups, value: staff}]
  - role: approver
    users: [{issuer: corp, claim: groups, value: approvers}])";
}

std::string with_local_critical_tier(std::string yaml) {
  yaml.replace(yaml.find("tiers:\n"), 7, "tiers:\n  critical: {backend: local}\n");
  return yaml;
}

Result<CorpIssuer> CorpIssuer::open(const std::string& dir) {
  auto signer = identity::TokenSigner::load_or_create(dir + "/corp.key");
  if (!signer) return signer.error();
  CorpIssuer issuer(std::move(*signer));
  issuer.publish(dir);
  return issuer;
}

void CorpIssuer::publish(const std::string& dir) const {
  std::ofstream(dir + "/corp-jwks.json") << signer_.jwks().dump();
}

std::string CorpIssuer::token(const std::string& sub, const nlohmann::json& groups,
                              std::chrono::seconds lifetime) const {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const nlohmann::json claims = {{"iss", kIssuer}, {"aud", "airlock"},  {"sub", sub},          {"iat", now},
                                 {"exp", now + lifetime.count()}, {"jti", "jti-" + sub}, {"groups", groups}};
  return *signer_.issue(claims);
}

}  // namespace airlock::server::test
