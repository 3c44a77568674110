// Issue #15 end to end: calls on behalf of users against a real daemon. The users' issuer is
// real: an Ed25519 key made with OpenSSL (identity::TokenSigner), its JWKS in a file the
// config names. Each test runs an attack or a rule and asserts the answer and its reason.
// (Verification itself, key by key and claim by claim, is in tests/unit/identity_test.cpp.)
#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>

#include "audit/log_reader.hpp"
#include "identity/base64url.hpp"
#include "identity/signer.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;

constexpr const char* kCorp = "https://idp.corp.example";
constexpr const char* kAgentSubject = "system:serviceaccount:agents:ci";

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The config: the usual principals (agent may call everything, other only echo), a JWT agent,
// the corp issuer and a second one, and RBAC for analysts.
const char* kIdentitySections = R"(server: {listen: 127.0.0.1:0, maxBodyBytes: 64Ki, maxConcurrentInvocations: 4, queueLength: 64, drainTimeout: 20s}
identity:
  issuers:
    - {name: corp, issuer: https://idp.corp.example, audiences: [airlock], jwksFile: corp-jwks.json}
    - {name: partner, issuer: https://idp.partner.example, audiences: [airlock], jwksFile: partner-jwks.json}
roles:
  - name: analyst
    rules:
      - {effect: allow, actions: [invoke], tools: ["echo*", "export", "medium-echo"], maxRisk: low}
      - {effect: deny, actions: [invoke], tools: ["export"]}
bindings:
  - role: analyst
    users: [{issuer: corp, claim: groups, value: analysts}])";

const char* kIdentityTools = R"(
  - name: echo-for-user
    description: Echo, only on behalf of a user.
    requiresUser: true
    runtime: {type: python, file: tools/echo.py}
  - name: export
    description: Echo, denied to analysts.
    runtime: {type: python, file: tools/echo.py}
  - name: medium-echo
    description: Echo at medium risk.
    risk: medium
    runtime: {type: python, file: tools/echo.py})";

class Identity : public ::testing::Test {
 protected:
  void SetUp() override {
    auto corp = identity::TokenSigner::load_or_create(ws_.dir() + "/corp.key");
    auto partner = identity::TokenSigner::load_or_create(ws_.dir() + "/partner.key");
    ASSERT_TRUE(corp.ok() && partner.ok());
    corp_.emplace(std::move(*corp));
    partner_.emplace(std::move(*partner));
    std::ofstream(ws_.dir() + "/corp-jwks.json") << corp_->jwks().dump();
    std::ofstream(ws_.dir() + "/partner-jwks.json") << partner_->jwks().dump();
    ws_.rewrite(kIdentitySections, kIdentityTools);
    std::string yaml = ws_.config_text();
    const std::string jwt_agent = "principals:\n  - name: ci-agent\n    jwt: {issuer: corp, subject: \"" +
                                  std::string(kAgentSubject) + "\"}\n    tools: [echo]\n";
    yaml.replace(yaml.find("principals:\n"), std::string("principals:\n").size(), jwt_agent);
    ws_.write_config(yaml);
    daemon_ = std::make_unique<RunningDaemon>(ws_);
  }

  // A corp user's token (overrides replace or add claims; a null value removes one).
  std::string user_token(const std::string& sub, json overrides = json::object()) const {
    json claims = {{"iss", kCorp}, {"aud", "airlock"}, {"sub", sub}, {"iat", now_s()},
                   {"exp", now_s() + 300}, {"jti", "jti-" + sub}};
    if (sub == "alice") claims["groups"] = {"staff", "analysts"};
    for (auto& [k, v] : overrides.items()) {
      if (v.is_null()) claims.erase(k);
      else claims[k] = v;
    }
    return *corp_->issue(claims);
  }

  // A corp token of the header and payload exactly as written (JSON text, not a value: a value
  // cannot name a member twice), signed with corp's key.
  std::string raw_token(const std::string& header, const std::string& payload) const {
    const std::string input = identity::base64url_encode(header) + "." + identity::base64url_encode(payload);
    std::unique_ptr<FILE, decltype(&std::fclose)> pem(std::fopen((ws_.dir() + "/corp.key").c_str(), "r"), std::fclose);
    EXPECT_TRUE(pem);
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(PEM_read_PrivateKey(pem.get(), nullptr, nullptr, nullptr),
                                                            EVP_PKEY_free);
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    unsigned char sig[64];
    std::size_t size = sizeof sig;
    EXPECT_TRUE(key && ctx && EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) == 1 &&
                EVP_DigestSign(ctx.get(), sig, &size, reinterpret_cast<const unsigned char*>(input.data()),
                               input.size()) == 1);
    return input + "." + identity::base64url_encode(std::string_view(reinterpret_cast<const char*>(sig), size));
  }

  Reply call(const std::string& tool, const std::string& bearer, const std::string& subject_token = "") {
    std::map<std::string, std::string> headers;
    if (!subject_token.empty()) headers["Airlock-Subject-Token"] = subject_token;
    return http_with(daemon_->port, "POST", "/v1/tools/" + tool + "/invoke",
                     json{{"arguments", {{"x", 1}}}}.dump(), bearer, headers);
  }

  Reply exchange(const std::string& form, const std::string& bearer = kKey) {
    return http_with(daemon_->port, "POST", "/v1/token", form, bearer,
                     {{"Content-Type", "application/x-www-form-urlencoded"}});
  }

  std::string exchanged_token(const std::string& subject_token, const std::string& extra = "") {
    auto r = exchange("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
                      "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&subject_token=" +
                      subject_token + extra);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json().value("access_token", "");
  }

  Workspace ws_;
  std::optional<identity::TokenSigner> corp_, partner_;
  std::unique_ptr<RunningDaemon> daemon_;
};

void expect_refused(const Reply& r, int status, const std::string& kind, const std::string& words) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.json()["error"]["kind"], kind) << r.body;
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find(words), std::string::npos) << r.body;
}

TEST_F(Identity, AnAgentActsForAUserAndTheAnswerAndAuditRecordNameBoth) {
  const std::string token = user_token("alice");
  auto r = call("echo-for-user", kKey, token);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["status"], "ok");
  EXPECT_EQ(r.json()["actor"]["principal"], "agent");
  EXPECT_EQ(r.json()["subject"], (json{{"issuer", "corp"}, {"sub", "alice"}}));
  auto stored = http(daemon_->port, "GET", "/v1/invocations/" + r.json()["id"].get<std::string>());
  EXPECT_EQ(stored.json()["subject"]["sub"], "alice");

  auto reader = audit::LogReader::open(ws_.audit_path());
  ASSERT_TRUE(reader.ok());
  auto size = reader->size();
  ASSERT_TRUE(size.ok());
  auto record = json::parse(*reader->record(*size - 1));
  const auto& fields = record.contains("fields") ? record["fields"] : record;
  const std::string text = record.dump();
  EXPECT_NE(text.find("\"jti_sha256\""), std::string::npos) << text;
  EXPECT_NE(text.find("role analyst rule 1"), std::string::npos) << text;
  EXPECT_EQ(text.find(token.substr(token.rfind('.') + 1)), std::string::npos);  // never the token
  EXPECT_EQ(text.find("jti-alice"), std::string::npos);                          // only its hash
  (void)fields;
}

TEST_F(Identity, AgentAllowedButUserNot) {
  auto r = call("echo", kKey, user_token("bob"));
  expect_refused(r, 403, "forbidden", "no role is bound to them (decided by: no rule allows)");
  EXPECT_EQ(r.json()["error"]["rule"], "no rule allows");
}

TEST_F(Identity, UserAllowedButAgentNot) {
  expect_refused(call("echo-for-user", kOtherKey, user_token("alice")), 403, "forbidden",
                 "principal 'other' may not call tool 'echo-for-user'");
}

TEST_F(Identity, ADenyRuleOverridesAnAllow) {
  auto r = call("export", kKey, user_token("alice"));
  expect_refused(r, 403, "forbidden", "deny invoke export");
  EXPECT_EQ(r.json()["error"]["rule"], "role analyst rule 2 (deny invoke export)");
}

TEST_F(Identity, MaxRiskExceeded) {
  expect_refused(call("medium-echo", kKey, user_token("alice")), 403, "forbidden", "maxRisk");
}

TEST_F(Identity, AToolThatRequiresAUserRefusesACallWithoutOne) {
  expect_refused(call("echo-for-user", kKey), 401, "subject_required", "on behalf of a user");
}

TEST_F(Identity, APersonCallsDirectlyWithTheirOwnToken) {
  auto r = call("echo", user_token("alice"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.json()["actor"].is_null());
  EXPECT_EQ(r.json()["subject"]["sub"], "alice");
  expect_refused(call("echo", user_token("bob")), 403, "forbidden", "no role is bound to them");
}

TEST_F(Identity, AUserReadsTheAuditLogOnlyIfARoleAllowsIt) {
  EXPECT_EQ(http(daemon_->port, "GET", "/v1/audit/checkpoint").status, 200);  // an agent may
  auto r = http(daemon_->port, "GET", "/v1/audit/checkpoint", "", user_token("alice"));
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("read_audit"), std::string::npos) << r.body;
  // Nor another's invocation: alice reads hers, not the agent's own.
  auto own = call("echo", user_token("alice"));
  auto agents = call("echo", kKey);
  EXPECT_EQ(http(daemon_->port, "GET", "/v1/invocations/" + own.json()["id"].get<std::string>(), "",
                 user_token("alice")).status, 200);
  EXPECT_EQ(http(daemon_->port, "GET", "/v1/invocations/" + agents.json()["id"].get<std::string>(), "",
                 user_token("alice")).status, 404);
}

TEST_F(Identity, AnAgentAuthenticatesWithItsOwnJwt) {
  const std::string agent_token = user_token(kAgentSubject);
  auto r = call("echo", agent_token);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["actor"]["principal"], "ci-agent");
  EXPECT_TRUE(r.json()["subject"].is_null());
}

TEST_F(Identity, RefusedSubjectTokens) {
  expect_refused(call("echo", kKey, user_token("alice", {{"exp", now_s() - 3600}})), 401, "unauthenticated", "expired");
  expect_refused(call("echo", kKey, user_token("alice", {{"nbf", now_s() + 3600}})), 401, "unauthenticated",
                 "not_yet_valid");
  expect_refused(call("echo", kKey, user_token("alice", {{"aud", "someone-else"}})), 401, "unauthenticated",
                 "wrong_audience");
  expect_refused(call("echo", kKey, user_token("alice", {{"iss", "https://evil.example"}})), 401,
                 "unauthenticated", "wrong_issuer");
  // Chained delegation: a token that was itself delegated is no user's token here.
  expect_refused(call("echo", kKey, user_token("alice", {{"act", {{"sub", "someone"}}}})), 401, "unauthenticated",
                 "delegation_not_allowed");
  // Signed with the partner's key but claiming to be corp's.
  json forged = {{"iss", kCorp}, {"aud", "airlock"}, {"sub", "alice"}, {"exp", now_s() + 300},
                 {"groups", {"analysts"}}};
  expect_refused(call("echo", kKey, *partner_->issue(forged)), 401, "unauthenticated", "unknown_kid");
  // A valid token with a flipped signature byte.
  std::string tampered = user_token("alice");
  tampered[tampered.size() - 5] = tampered[tampered.size() - 5] == 'A' ? 'B' : 'A';
  expect_refused(call("echo", kKey, tampered), 401, "unauthenticated", "bad_signature");
  expect_refused(call("echo", kKey, user_token("alice", {{"sub", nullptr}})), 401, "unauthenticated", "no sub");
  // A subject token without an agent, and two users for one call.
  expect_refused(call("echo", user_token("alice"), user_token("alice")), 401, "unauthenticated",
                 "already has its user");
}

TEST_F(Identity, TokenExchangeGivesAnAirlockTokenThatNamesAgentAndUser) {
  const std::string token = exchanged_token(user_token("alice"));
  ASSERT_FALSE(token.empty());
  auto payload = identity::base64url_decode(token.substr(token.find('.') + 1,
                                                         token.rfind('.') - token.find('.') - 1));
  ASSERT_TRUE(payload.ok());
  auto claims = json::parse(*payload);
  EXPECT_EQ(claims["iss"], "airlock");
  EXPECT_EQ(claims["sub"], "alice");
  EXPECT_EQ(claims["act"]["sub"], "agent");
  EXPECT_LE(claims["exp"].get<std::int64_t>() - claims["iat"].get<std::int64_t>(), 15 * 60);
  auto r = call("echo-for-user", token);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["actor"]["principal"], "agent");
  EXPECT_EQ(r.json()["subject"]["sub"], "alice");
  auto jwks = http(daemon_->port, "GET", "/.well-known/jwks.json", "", "");
  ASSERT_EQ(jwks.status, 200);
  EXPECT_EQ(jwks.json()["keys"][0]["alg"], "EdDSA");
}

TEST_F(Identity, AnAirlockTokenUsedWithAnotherAgentsKeyIsRefused) {
  const std::string token = exchanged_token(user_token("alice"));
  // The confused deputy: agent "other" presents the token issued to "agent" as its user.
  expect_refused(call("echo", kOtherKey, token), 401, "unauthenticated",
                 "issued to agent 'agent', not to 'other'");
  // Its own agent may.
  EXPECT_EQ(call("echo", kKey, token).status, 200);
  // A forged Airlock token: the payload changed to another agent.
  std::string header = token.substr(0, token.find('.'));
  std::string signature = token.substr(token.rfind('.'));
  auto payload = json::parse(*identity::base64url_decode(
      token.substr(token.find('.') + 1, token.rfind('.') - token.find('.') - 1)));
  payload["act"]["sub"] = "other";
  expect_refused(call("echo", header + "." + identity::base64url_encode(payload.dump()) + signature), 401,
                 "unauthenticated", "bad_signature");
}

TEST_F(Identity, AScopedAirlockTokenCallsOnlyItsTools) {
  const std::string token = exchanged_token(user_token("alice"), "&scope=echo");
  EXPECT_EQ(call("echo", token).status, 200);
  expect_refused(call("echo-for-user", token), 403, "forbidden", "scope");
}

// exp is a NumericDate (RFC 7519 2): it may be fractional, and it may be far out of range.
TEST_F(Identity, TokenExchangeNeverOutlivesTheUserTokenWhateverItsExp) {
  const std::string grant = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
                            "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&subject_token=";
  // Past already, but inside the verifier's 60 s skew: valid, and no time left to give.
  auto r = exchange(grant + user_token("alice", {{"exp", static_cast<double>(now_s()) - 10.5}}));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json().value("error", ""), "invalid_grant") << r.body;
  EXPECT_NE(r.body.find("no time left"), std::string::npos) << r.body;

  const double user_exp = static_cast<double>(now_s()) + 100.5;
  r = exchange(grant + user_token("alice", {{"exp", user_exp}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_GT(r.json()["expires_in"].get<std::int64_t>(), 0);
  EXPECT_LE(r.json()["expires_in"].get<std::int64_t>(), 101);
  const std::string token = r.json()["access_token"];
  auto claims = json::parse(*identity::base64url_decode(
      token.substr(token.find('.') + 1, token.rfind('.') - token.find('.') - 1)));
  EXPECT_LE(claims["exp"].get<double>(), user_exp);

  // 2^64 - 1 is a JSON integer that no int64 holds: the lifetime is the configured 15 minutes.
  r = exchange(grant + user_token("alice", {{"exp", std::numeric_limits<std::uint64_t>::max()}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["expires_in"].get<std::int64_t>(), 15 * 60) << r.body;
}

// A member named twice would be whichever value the parser keeps (the last, here; the first
// elsewhere): the header's "alg", a payload's "sub". Refused in the header and in the payload.
TEST_F(Identity, ATokenThatNamesAMemberTwiceIsRefused) {
  const std::string kid = "\"kid\":\"" + corp_->kid() + "\"";
  const std::string payload = "{\"iss\":\"" + std::string(kCorp) + "\",\"aud\":\"airlock\",\"sub\":\"alice\","
                              "\"groups\":[\"analysts\"],\"exp\":" + std::to_string(now_s() + 300) + "}";
  // The control: the same token written once per member is accepted.
  ASSERT_EQ(call("echo-for-user", kKey, raw_token("{\"alg\":\"EdDSA\"," + kid + "}", payload)).status, 200);
  expect_refused(call("echo-for-user", kKey, raw_token("{\"alg\":\"none\",\"alg\":\"EdDSA\"," + kid + "}", payload)),
                 401, "unauthenticated", "the header names a member twice");
  const std::string twice = "{\"sub\":\"mallory\"," + payload.substr(1);
  expect_refused(call("echo-for-user", kKey, raw_token("{\"alg\":\"EdDSA\"," + kid + "}", twice)), 401,
                 "unauthenticated", "the payload names a member twice");
  auto r = exchange("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
                    "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&subject_token=" +
                    raw_token("{\"alg\":\"EdDSA\"," + kid + "}", twice));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("names a member twice"), std::string::npos) << r.body;
}

TEST_F(Identity, TokenExchangeErrorsFollowRfc8693) {
  auto error_of = [](const Reply& r) { return r.json().value("error", ""); };
  auto r = exchange("grant_type=client_credentials");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_of(r), "unsupported_grant_type");
  r = exchange("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange");
  EXPECT_EQ(error_of(r), "invalid_request");
  const std::string grant = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
                            "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&subject_token=";
  r = exchange(grant + user_token("alice", {{"exp", now_s() - 3600}}));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error_of(r), "invalid_grant");
  r = exchange(grant + user_token("alice"), "not-a-key");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(error_of(r), "invalid_client");
  // An Airlock token is not a user's token: no chains of exchanges.
  r = exchange(grant + exchanged_token(user_token("alice")));
  EXPECT_EQ(error_of(r), "invalid_grant");
  r = exchange(grant + user_token("alice") + "&audience=elsewhere");
  EXPECT_EQ(error_of(r), "invalid_target");
  r = exchange(grant + user_token("alice") + "&grant_type=again");
  EXPECT_EQ(error_of(r), "invalid_request");  // a parameter twice
}

}  // namespace
}  // namespace airlock::server::test
