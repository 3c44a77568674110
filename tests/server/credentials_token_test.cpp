// Issue #16 end to end: the `token` credential, Airlock's tokens introspected (RFC 7662) and
// revoked (RFC 7009), and the `oauth-exchange` provider with the daemon's own POST /v1/token
// as its upstream. Each test runs an attack (a revoked, expired or forged token; a tool's
// token turned on Airlock's API; another agent revoking) and asserts it failed.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "creds/providers/oauth_exchange_provider.hpp"
#include "creds/revoked_tokens.hpp"
#include "creds/providers/token_provider.hpp"
#include "identity/http_fetch.hpp"
#include "identity/signer.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr const char* kFormType = "application/x-www-form-urlencoded";

std::int64_t now_s() {
  return std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The corp issuer, and a role that lets its analysts call echo.
const char* kSections = R"(server: {listen: 127.0.0.1:0, maxBodyBytes: 64Ki, maxConcurrentInvocations: 4, queueLength: 64, drainTimeout: 20s}
identity:
  issuers:
    - {name: corp, issuer: https://idp.corp.example, audiences: [airlock], jwksFile: corp-jwks.json}
roles:
  - name: analyst
    rules:
      - {effect: allow, actions: [invoke], tools: ["echo"], maxRisk: low}
bindings:
  - role: analyst
    users: [{issuer: corp, claim: groups, value: analysts}])";

policy::CredentialSpec payments_spec() {
  policy::CredentialSpec spec;
  spec.env = "PAYMENTS_TOKEN";
  spec.source = policy::TokenCredential{"payments", {"read", "write"}, seconds(60)};
  return spec;
}

class CredentialsToken : public ::testing::Test {
 protected:
  void SetUp() override {
    auto corp = identity::TokenSigner::load_or_create(ws_.dir() + "/corp.key");
    ASSERT_TRUE(corp.ok());
    corp_.emplace(std::move(*corp));
    std::ofstream(ws_.dir() + "/corp-jwks.json") << corp_->jwks().dump();
    ws_.rewrite(kSections, "");
    daemon_ = std::make_unique<RunningDaemon>(ws_);
    // The daemon's own key (the same file): tokens minted here are Airlock's.
    auto signer = identity::TokenSigner::load_or_create(ws_.dir() + "/data/token.key");
    ASSERT_TRUE(signer.ok()) << signer.error().message;
    airlock_.emplace(std::move(*signer));
    auto revoked = creds::RevokedTokens::open(ws_.dir() + "/provider-state.db");
    ASSERT_TRUE(revoked.ok());
    provider_revoked_ = std::move(*revoked);
  }

  std::string user_token(const std::string& sub) const {
    return *corp_->issue({{"iss", "https://idp.corp.example"}, {"aud", "airlock"}, {"sub", sub},
                          {"iat", now_s()}, {"exp", now_s() + 300}, {"jti", "jti-" + sub},
                          {"groups", {"analysts"}}});
  }

  // A `token` credential as the broker would make it for agent's call for alice.
  std::string tool_token(const identity::TokenSigner& signer, const std::string& lease_id,
                         creds::Clock::time_point now = creds::Clock::now()) {
    creds::TokenProvider provider(signer, "airlock", *provider_revoked_);
    creds::Lease lease;
    lease.id = lease_id;
    creds::LeaseContext context;
    context.invocation_id = "inv-1";
    context.tool = "echo";
    context.agent = "agent";
    context.user_issuer = "corp";
    context.user_sub = "alice";
    context.now = now;
    auto issued = provider.issue(payments_spec(), lease, context);
    EXPECT_TRUE(issued.ok()) << issued.error().message;
    return issued.ok() ? issued->value : std::string();
  }

  Reply form_post(const std::string& path, const std::string& form, const std::string& bearer = kKey) {
    return http_with(daemon_->port, "POST", path, form, bearer, {{"Content-Type", kFormType}});
  }
  Reply introspect(const std::string& token, const std::string& bearer = kKey) {
    return form_post("/v1/token/introspect", "token=" + token, bearer);
  }
  Reply revoke(const std::string& token, const std::string& bearer = kKey) {
    return form_post("/v1/token/revoke", "token=" + token + "&token_type_hint=access_token", bearer);
  }
  std::string exchanged(const std::string& subject_token) {
    auto r = form_post("/v1/token",
                       "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
                       "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&subject_token=" +
                           subject_token);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json().value("access_token", "");
  }
  Reply call_echo(const std::string& bearer, const std::string& subject_token = "") {
    std::map<std::string, std::string> headers;
    if (!subject_token.empty()) headers["Airlock-Subject-Token"] = subject_token;
    return http_with(daemon_->port, "POST", "/v1/tools/echo/invoke", json{{"arguments", {{"x", 1}}}}.dump(),
                     bearer, headers);
  }

  Workspace ws_;
  std::optional<identity::TokenSigner> corp_, airlock_;
  std::unique_ptr<RunningDaemon> daemon_;
  std::unique_ptr<creds::RevokedTokens> provider_revoked_;
};

const json kInactive = {{"active", false}};

TEST_F(CredentialsToken, AFreshToolTokenIsActiveWithItsClaims) {
  const std::string token = tool_token(*airlock_, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  auto r = introspect(token);
  ASSERT_EQ(r.status, 200) << r.body;
  auto answer = r.json();
  EXPECT_EQ(answer["active"], true) << r.body;
  EXPECT_EQ(answer["iss"], "airlock");
  EXPECT_EQ(answer["sub"], "alice");
  EXPECT_EQ(answer["aud"], "payments");
  EXPECT_EQ(answer["scope"], "read write");
  EXPECT_EQ(answer["jti"], "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  EXPECT_EQ(answer["act"], (json{{"sub", "agent"}}));
  EXPECT_EQ(answer["client_id"], "agent");
  EXPECT_GT(answer["exp"].get<std::int64_t>(), now_s());
  EXPECT_TRUE(answer.contains("iat"));
  EXPECT_EQ(r.headers["cache-control"], "no-store");
  // Any authenticated caller may ask, as a resource server does: the other agent too.
  EXPECT_EQ(introspect(token, kOtherKey).json()["active"], true);
}

TEST_F(CredentialsToken, ARevokedToolTokenIsInactiveAndOnlyItsAgentMayRevokeIt) {
  const std::string token = tool_token(*airlock_, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  // Another agent may not end an agent's credential.
  auto refused = revoke(token, kOtherKey);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.json()["error"], "unauthorized_client");
  EXPECT_EQ(introspect(token).json()["active"], true);
  auto r = revoke(token);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(introspect(token).json(), kInactive);
  EXPECT_EQ(revoke(token).status, 200);  // again: still 200 (RFC 7009)
}

TEST_F(CredentialsToken, ExpiredForgedAndGarbageTokensAreInactive) {
  // Expired ten minutes ago (past any clock skew).
  EXPECT_EQ(introspect(tool_token(*airlock_, "cccccccccccccccccccccccccccccccc", creds::Clock::now() - std::chrono::minutes(10))).json(),
            kInactive);
  // Signed by another key, claims and all the same.
  auto stranger = identity::TokenSigner::load_or_create(ws_.dir() + "/stranger.key");
  ASSERT_TRUE(stranger.ok());
  EXPECT_EQ(introspect(tool_token(*stranger, "dddddddddddddddddddddddddddddddd")).json(), kInactive);
  // A user's token from a configured issuer is not Airlock's: introspection says nothing of it.
  EXPECT_EQ(introspect(user_token("alice")).json(), kInactive);
  EXPECT_EQ(introspect("not-a-token").json(), kInactive);
  // Revoking garbage: 200, as RFC 7009 says; a missing token parameter: 400.
  EXPECT_EQ(revoke("not-a-token").status, 200);
  EXPECT_EQ(form_post("/v1/token/revoke", "token_type_hint=access_token").status, 400);
}

TEST_F(CredentialsToken, UnauthenticatedCallersAreRefused) {
  const std::string token = tool_token(*airlock_, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
  for (const char* path : {"/v1/token/introspect", "/v1/token/revoke"}) {
    auto none = form_post(path, "token=" + token, "");
    EXPECT_EQ(none.status, 401) << path << " " << none.body;
    EXPECT_EQ(none.headers["www-authenticate"], "Bearer");
    EXPECT_EQ(none.body.find("\"active\""), std::string::npos) << none.body;
    EXPECT_EQ(form_post(path, "token=" + token, "wrong-key").status, 401) << path;
  }
  // The token itself is no credential for Airlock: its audience is "payments".
  EXPECT_EQ(introspect(token, token).status, 401);
  EXPECT_EQ(introspect(token).json()["active"], true);  // the refused revoke did nothing
}

TEST_F(CredentialsToken, AToolsTokenCannotAuthenticateToAirlock) {
  // A tool that leaks or misuses its credential: Airlock's own API refuses it everywhere.
  const std::string token = tool_token(*airlock_, "ffffffffffffffffffffffffffffffff");
  auto as_bearer = call_echo(token);
  EXPECT_EQ(as_bearer.status, 401) << as_bearer.body;
  EXPECT_NE(as_bearer.body.find("wrong_audience"), std::string::npos) << as_bearer.body;
  auto as_subject = call_echo(kKey, token);
  EXPECT_EQ(as_subject.status, 401) << as_subject.body;
  EXPECT_NE(as_subject.body.find("wrong_audience"), std::string::npos) << as_subject.body;
  auto as_grant = form_post("/v1/token",
                            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
                            "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&subject_token=" +
                                token);
  EXPECT_EQ(as_grant.status, 400) << as_grant.body;
  EXPECT_EQ(as_grant.json()["error"], "invalid_grant");
}

TEST_F(CredentialsToken, ARevokedExchangeTokenCanNoLongerInvokeEvenAfterARestart) {
  const std::string token = exchanged(user_token("alice"));
  ASSERT_EQ(call_echo(kKey, token).status, 200);
  ASSERT_EQ(revoke(token).status, 200);
  auto refused = call_echo(kKey, token);
  EXPECT_EQ(refused.status, 401) << refused.body;
  EXPECT_NE(refused.body.find("revoked"), std::string::npos) << refused.body;
  EXPECT_EQ(introspect(token).json(), kInactive);

  daemon_.reset();
  daemon_ = std::make_unique<RunningDaemon>(ws_);
  EXPECT_EQ(call_echo(kKey, token).status, 401);
  EXPECT_EQ(introspect(token).json(), kInactive);
  // A new exchange still works: only that token was revoked.
  EXPECT_EQ(call_echo(kKey, exchanged(user_token("alice"))).status, 200);
}

TEST_F(CredentialsToken, OAuthExchangeAgainstAirlocksOwnTokenEndpoint) {
  const std::string base = "http://127.0.0.1:" + std::to_string(daemon_->port);
  policy::CredentialSpec spec;
  spec.env = "AIRLOCK_TOKEN";
  policy::OAuthExchangeCredential oauth;
  oauth.token_endpoint = base + "/v1/token";
  oauth.revocation_endpoint = base + "/v1/token/revoke";
  oauth.audience = "airlock";
  oauth.scopes = {"echo"};
  oauth.client_secret = "agent-key";  // alone: sent as a bearer token, the agent's API key
  spec.source = oauth;
  creds::OAuthExchangeProvider provider([](const std::string& name) -> Result<std::string> {
    if (name == "agent-key") return std::string(kKey);
    return Error::make("unknown_secret", "no secret " + name);
  });
  creds::Lease lease;
  lease.id = "99999999999999999999999999999999";
  auto target = provider.target(spec, lease);
  ASSERT_TRUE(target.ok());
  lease.target = *target;
  creds::LeaseContext context;
  context.agent = "agent";
  context.user_sub = "alice";
  context.max_ttl = seconds(60);

  context.user_token.clear();  // no user: nothing to exchange
  EXPECT_EQ(provider.issue(spec, lease, context).error().code, "credential_denied");
  context.user_token = "x" + user_token("alice");  // a broken user token: the upstream refuses it
  auto bad = provider.issue(spec, lease, context);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "credential_denied") << bad.error().message;
  EXPECT_EQ(bad.error().message.find(kKey), std::string::npos);

  context.user_token = user_token("alice");
  auto issued = provider.issue(spec, lease, context);
  ASSERT_TRUE(issued.ok()) << issued.error().message;
  EXPECT_EQ(issued->scopes, std::vector<std::string>{"echo"});
  EXPECT_LE(issued->expires_at, context.now + seconds(60));  // capped by max_ttl
  auto active = introspect(issued->value).json();
  EXPECT_EQ(active["active"], true);
  EXPECT_EQ(active["sub"], "alice");
  EXPECT_EQ(active["act"]["sub"], "agent");
  EXPECT_EQ(active["scope"], "echo");
  EXPECT_EQ(call_echo(kKey, issued->value).status, 200);

  ASSERT_TRUE(provider.revoke(lease, &issued->value).ok());
  EXPECT_EQ(introspect(issued->value).json(), kInactive);
  EXPECT_EQ(call_echo(kKey, issued->value).status, 401);
}

TEST_F(CredentialsToken, TheEndpointsAnswerOnlyPost) {
  EXPECT_EQ(http(daemon_->port, "GET", "/v1/token/introspect").status, 405);
  EXPECT_EQ(http(daemon_->port, "GET", "/v1/token/revoke").status, 405);
  auto json_body = http(daemon_->port, "POST", "/v1/token/introspect", "{\"token\": \"x\"}");
  EXPECT_EQ(json_body.status, 400) << json_body.body;  // a form, not JSON
}

}  // namespace
}  // namespace airlock::server::test
