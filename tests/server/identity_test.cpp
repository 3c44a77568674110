// Issue #15 end to end: calls on behalf of users against a real daemon. The users' issuer is
// real: an Ed25519 key made with OpenSSL (identity::TokenSigner), its JWKS in a file the
// config names. Each test runs an attack or a rule and asserts the answer and its reason.
// (Verification itself, key by key and claim by claim, is in tests/unit/identity_test.cpp.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>

#include <openssl/evp.h>
#include <openssl/pem.h>

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

// header.payload as given (text, not a JSON value: the tests repeat members), signed with the
// Ed25519 key in `key_file`: a token corp's key really signed.
std::string signed_as_written(const std::string& key_file, const std::string& header, const std::string& payload) {
  std::unique_ptr<FILE, decltype(&std::fclose)> f(std::fopen(key_file.c_str(), "r"), &std::fclose);
  EXPECT_TRUE(f) << key_file;
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      f ? PEM_read_PrivateKey(f.get(), nullptr, nullptr, nullptr) : nullptr, &EVP_PKEY_free);
  EXPECT_TRUE(key);
  const std::string input = identity::base64url_encode(header) + "." + identity::base64url_encode(payload);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char sig[64];
  std::size_t size = sizeof sig;
  EXPECT_EQ(EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()), 1);
  EXPECT_EQ(EVP_DigestSign(ctx.get(), sig, &size, reinterpret_cast<const unsigned char*>(input.data()),
                           input.size()), 1);
  return input + "." + identity::base64url_encode(std::string(reinterpret_cast<const char*>(sig), size));
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

// A JSON object that names a member twice reads differently to different parsers (the first
// or the last wins): a token signed by corp's own key whose payload says "sub" twice, or whose
// header says "alg" twice, is refused; the same token with each member once is accepted.
TEST_F(Identity, ATokenThatNamesAMemberTwiceIsRefused) {
  const std::string key = ws_.dir() + "/corp.key";
  const std::string header = R"({"alg":"EdDSA","typ":"JWT","kid":")" + corp_->kid() + "\"}";
  const std::string rest = std::string(R"("groups":["staff","analysts"],"iss":")") + kCorp +
                           R"(","aud":"airlock","exp":)" + std::to_string(now_s() + 300) + "}";
  const std::string once = R"({"sub":"alice",)" + rest;
  ASSERT_EQ(call("echo", kKey, signed_as_written(key, header, once)).status, 200);
  expect_refused(call("echo", kKey, signed_as_written(key, header, R"({"sub":"mallory","sub":"alice",)" + rest)),
                 401, "unauthenticated", "names a member twice");
  const std::string alg_twice = R"({"alg":"none","alg":"EdDSA","typ":"JWT","kid":")" + corp_->kid() + "\"}";
  expect_refused(call("echo", kKey, signed_as_written(key, alg_twice, once)), 401, "unauthenticated",
                 "names a member twice");
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
  auto r = call("echo-for-user", kKey, token);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["actor"]["principal"], "agent");
  EXPECT_EQ(r.json()["subject"]["sub"], "alice");
  auto jwks = http(daemon_->port, "GET", "/.well-known/jwks.json", "", "");
  ASSERT_EQ(jwks.status, 200);
  EXPECT_EQ(jwks.json()["keys"][0]["alg"], "EdDSA");
}

// The Airlock token never outlives the user's, whatever form the user token's exp takes
// (RFC 7519: a NumericDate may be fractional): a fraction already past (accepted within the
// clock skew) and an integer already past get no token; a fraction ahead caps the life; a
// huge exp (2^64-1) is clamped, not wrapped to a negative expires_in.
TEST_F(Identity, TheExchangeReadsEveryNumericDateAndNeverOutlivesTheUserToken) {
  const std::string grant =
      "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
      "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&subject_token=";
  for (const json& past : {json(static_cast<double>(now_s()) - 10.5), json(now_s() - 10)}) {
    auto r = exchange(grant + user_token("alice", {{"exp", past}}));
    EXPECT_EQ(r.status, 400) << past << " " << r.body;
    EXPECT_EQ(r.json().value("error", ""), "invalid_grant") << r.body;
    EXPECT_NE(r.json().value("error_description", "").find("expired"), std::string::npos) << r.body;
  }
  auto soon = exchange(grant + user_token("alice", {{"exp", static_cast<double>(now_s()) + 120.7}}));
  ASSERT_EQ(soon.status, 200) << soon.body;
  EXPECT_GT(soon.json()["expires_in"].get<std::int64_t>(), 100) << soon.body;
  EXPECT_LE(soon.json()["expires_in"].get<std::int64_t>(), 121) << soon.body;
  auto huge = exchange(grant + user_token("alice", {{"exp", std::numeric_limits<std::uint64_t>::max()}}));
  ASSERT_EQ(huge.status, 200) << huge.body;
  EXPECT_EQ(huge.json()["expires_in"].get<std::int64_t>(), 15 * 60) << huge.body;
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
  expect_refused(call("echo", kOtherKey, header + "." + identity::base64url_encode(payload.dump()) + signature),
                 401, "unauthenticated", "bad_signature");
}

TEST_F(Identity, AScopedAirlockTokenCallsAndListsOnlyItsTools) {
  const std::string token = exchanged_token(user_token("alice"), "&scope=echo");
  EXPECT_EQ(call("echo", kKey, token).status, 200);
  expect_refused(call("echo-for-user", kKey, token), 403, "forbidden", "scope");
  auto listed = http_with(daemon_->port, "GET", "/v1/tools", "", kKey, {{"Airlock-Subject-Token", token}});
  ASSERT_EQ(listed.status, 200) << listed.body;
  ASSERT_EQ(listed.json()["tools"].size(), 1u) << listed.body;
  EXPECT_EQ(listed.json()["tools"][0]["name"], "echo");
  auto one = http_with(daemon_->port, "GET", "/v1/tools/echo-for-user", "", kKey, {{"Airlock-Subject-Token", token}});
  EXPECT_EQ(one.status, 403) << one.body;
  auto mcp = http_with(daemon_->port, "POST", "/mcp",
                       json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"},
                            {"params", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                                                         {"io.modelcontextprotocol/clientCapabilities", json::object()},
                                                         {"io.modelcontextprotocol/clientInfo",
                                                          {{"name", "test"}, {"version", "1"}}}}}}}}.dump(),
                       kKey,
                       {{"Airlock-Subject-Token", token}, {"Accept", "application/json, text/event-stream"},
                        {"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/list"}});
  ASSERT_EQ(mcp.status, 200) << mcp.body;
  EXPECT_NE(mcp.body.find("\"echo\""), std::string::npos) << mcp.body;
  EXPECT_EQ(mcp.body.find("echo-for-user"), std::string::npos) << mcp.body;
}

// docs/identity.md, "The confused deputy": an Airlock token is bound to the agent it was
// issued to. As a bare bearer it authenticates no one (whoever holds it); another agent's
// credential beside it is refused; and the user it names bounds what it reads.
TEST_F(Identity, AnAirlockTokenIsBoundToItsAgentAndItsUser) {
  const std::string token = exchanged_token(user_token("alice"));
  expect_refused(call("echo", token), 401, "unauthenticated", "accepted only as Airlock-Subject-Token");
  expect_refused(call("echo", kOtherKey, token), 401, "unauthenticated", "issued to agent 'agent', not to 'other'");
  for (const char* path : {"/v1/tools", "/v1/invocations"})
    EXPECT_EQ(http(daemon_->port, "GET", path, "", token).status, 401) << path;
  auto alices = call("echo", kKey, token);
  ASSERT_EQ(alices.status, 200) << alices.body;
  // The same agent's call for carol is not alice's to read through her token.
  auto carols = call("echo", kKey, user_token("carol", {{"groups", {"analysts"}}}));
  ASSERT_EQ(carols.status, 200) << carols.body;
  const std::string carol_id = carols.json()["id"], alice_id = alices.json()["id"];
  const std::map<std::string, std::string> as_alice = {{"Airlock-Subject-Token", token}};
  EXPECT_EQ(http_with(daemon_->port, "GET", "/v1/invocations/" + carol_id, "", kKey, as_alice).status, 404);
  EXPECT_EQ(http_with(daemon_->port, "GET", "/v1/invocations/" + alice_id, "", kKey, as_alice).status, 200);
  auto listed = http_with(daemon_->port, "GET", "/v1/invocations", "", kKey, as_alice);
  ASSERT_EQ(listed.status, 200) << listed.body;
  const auto rows = listed.json();  // a range-for over listed.json()[...] would read a destroyed temporary
  for (const auto& row : rows["invocations"]) EXPECT_EQ(row["subject"]["sub"], "alice") << listed.body;
  // The agent alone still reads both.
  EXPECT_EQ(http(daemon_->port, "GET", "/v1/invocations/" + carol_id).status, 200);
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
