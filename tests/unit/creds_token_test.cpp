// The `token` and `oauth-exchange` providers and the revocation list, as a threat model: each
// defence has a test that tries the attack (a wider scope, a longer life, Airlock's own
// audience, a revocation lost at a restart) and asserts it failed. The minted tokens are
// checked with identity::Verifier against the signer's JWKS, as a downstream service would.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <thread>

#include "creds/providers/oauth_exchange_provider.hpp"
#include "creds/revoked_tokens.hpp"
#include "creds/providers/token_provider.hpp"
#include "identity/verifier.hpp"

namespace airlock::creds {
namespace {

using nlohmann::json;
using std::chrono::seconds;

std::int64_t epoch_s(Clock::time_point t) {
  return std::chrono::duration_cast<seconds>(t.time_since_epoch()).count();
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/creds-token-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

policy::CredentialSpec token_spec(std::string audience, std::vector<std::string> scopes, seconds ttl = seconds(60)) {
  policy::CredentialSpec spec;
  spec.env = "PAYMENTS_TOKEN";
  spec.source = policy::TokenCredential{std::move(audience), std::move(scopes), ttl};
  return spec;
}

Lease lease_with(const std::string& id) {
  Lease lease;
  lease.id = id;
  lease.invocation_id = "inv-1";
  lease.tool = "pay";
  lease.env = "PAYMENTS_TOKEN";
  lease.provider = "token";
  return lease;
}

LeaseContext alice_context() {
  LeaseContext c;
  c.invocation_id = "inv-1";
  c.tool = "pay";
  c.agent = "agent";
  c.user_issuer = "corp";
  c.user_sub = "alice";
  c.max_ttl = seconds(60);
  c.now = Clock::time_point(seconds(epoch_s(Clock::now())));  // whole seconds: exact claims
  return c;
}

class TokenProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto signer = identity::TokenSigner::load_or_create(dir_.file("token.key"));
    ASSERT_TRUE(signer.ok()) << signer.error().message;
    signer_.emplace(std::move(*signer));
    auto revoked = RevokedTokens::open(dir_.file("state.db"));
    ASSERT_TRUE(revoked.ok()) << revoked.error().message;
    revoked_ = std::move(*revoked);
    provider_ = std::make_unique<TokenProvider>(*signer_, "airlock", *revoked_);
  }

  // Verified as a downstream service for `audience` verifies it: the JWKS, the audience.
  Result<identity::VerifiedToken> verify(const std::string& token, const std::string& audience) const {
    identity::Verifier verifier;
    identity::IssuerConfig issuer;
    issuer.name = "airlock";
    issuer.issuer = "airlock";
    issuer.audiences = {audience};
    issuer.jwks_document = signer_->jwks().dump();
    if (auto added = verifier.add_issuer(issuer); !added) return added.error();
    return verifier.verify(token, {/*allow_act=*/true});
  }

  TempDir dir_;
  std::optional<identity::TokenSigner> signer_;
  std::unique_ptr<RevokedTokens> revoked_;
  std::unique_ptr<TokenProvider> provider_;
};

TEST_F(TokenProviderTest, TheClaimsAreExactlyTheseAndTheJwksVerifiesThem) {
  const auto spec = token_spec("payments", {"read", "write"});
  const auto context = alice_context();
  auto issued = provider_->issue(spec, lease_with("0123456789abcdef0123456789abcdef"), context);
  ASSERT_TRUE(issued.ok()) << issued.error().message;
  auto verified = verify(issued->value, "payments");
  ASSERT_TRUE(verified.ok()) << verified.error().message;
  const std::int64_t now = epoch_s(context.now);
  EXPECT_EQ(verified->claims, (json{{"iss", "airlock"},
                                    {"aud", "payments"},
                                    {"sub", "alice"},
                                    {"act", {{"sub", "agent"}}},
                                    {"airlock_user_issuer", "corp"},
                                    {"scope", "read write"},
                                    {"iat", now},
                                    {"nbf", now},
                                    {"exp", now + 60},
                                    {"jti", "0123456789abcdef0123456789abcdef"},
                                    {"airlock_invocation", "inv-1"},
                                    {"airlock_tool", "pay"}}));
  EXPECT_EQ(issued->scopes, (std::vector<std::string>{"read", "write"}));
  EXPECT_EQ(epoch_s(issued->expires_at), now + 60);
  // Another service (another audience) refuses it: it is not meant for them.
  auto elsewhere = verify(issued->value, "billing");
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_EQ(elsewhere.error().code, "wrong_audience");
}

TEST_F(TokenProviderTest, WithoutAUserTheSubjectIsTheAgentAndThereIsNoAct) {
  auto context = alice_context();
  context.user_sub.clear();
  context.user_issuer.clear();
  auto issued = provider_->issue(token_spec("payments", {"read"}), lease_with("a1"), context);
  ASSERT_TRUE(issued.ok()) << issued.error().message;
  auto verified = verify(issued->value, "payments");
  ASSERT_TRUE(verified.ok()) << verified.error().message;
  EXPECT_EQ(verified->sub, "agent");
  EXPECT_FALSE(verified->claims.contains("act"));
  EXPECT_FALSE(verified->claims.contains("airlock_user_issuer"));
}

TEST_F(TokenProviderTest, ScopesAreNarrowedToTheUsersOwn) {
  auto context = alice_context();
  context.user_scopes = std::vector<std::string>{"write", "admin"};
  auto issued = provider_->issue(token_spec("payments", {"read", "write"}), lease_with("a2"), context);
  ASSERT_TRUE(issued.ok()) << issued.error().message;
  EXPECT_EQ(verify(issued->value, "payments")->claims["scope"], "write");  // not read, not admin
  EXPECT_EQ(issued->scopes, std::vector<std::string>{"write"});
}

TEST_F(TokenProviderTest, AUserWithNoneOfTheScopesGetsNoToken) {
  auto context = alice_context();
  context.user_scopes = std::vector<std::string>{"admin"};
  auto issued = provider_->issue(token_spec("payments", {"read", "write"}), lease_with("a3"), context);
  ASSERT_FALSE(issued.ok());
  EXPECT_EQ(issued.error().code, "credential_denied");
  EXPECT_NE(issued.error().message.find("read write"), std::string::npos) << issued.error().message;
  context.user_scopes = std::vector<std::string>{};
  EXPECT_EQ(provider_->issue(token_spec("payments", {"read"}), lease_with("a4"), context).error().code,
            "credential_denied");
}

TEST_F(TokenProviderTest, TheLifetimeIsCappedByTheCallsMaxTtl) {
  auto context = alice_context();
  context.max_ttl = seconds(30);
  auto capped = provider_->issue(token_spec("payments", {}, seconds(3600)), lease_with("a5"), context);
  ASSERT_TRUE(capped.ok()) << capped.error().message;
  auto claims = verify(capped->value, "payments")->claims;
  EXPECT_EQ(claims["exp"].get<std::int64_t>() - claims["iat"].get<std::int64_t>(), 30);
  EXPECT_FALSE(claims.contains("scope"));  // none asked for: none granted
  auto shorter = provider_->issue(token_spec("payments", {}, seconds(10)), lease_with("a6"), context);
  claims = verify(shorter->value, "payments")->claims;
  EXPECT_EQ(claims["exp"].get<std::int64_t>() - claims["iat"].get<std::int64_t>(), 10);
}

TEST_F(TokenProviderTest, TheJtiIsTheLeaseIdAndTwoLeasesGetTwoTokens) {
  const auto spec = token_spec("payments", {"read"});
  auto first_lease = lease_with("11111111111111111111111111111111");
  auto second_lease = lease_with("22222222222222222222222222222222");
  EXPECT_EQ(*provider_->target(spec, first_lease), (json{{"jti", first_lease.id}}));
  auto first = provider_->issue(spec, first_lease, alice_context());
  auto second = provider_->issue(spec, second_lease, alice_context());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(first->value, second->value);
  EXPECT_EQ(verify(first->value, "payments")->jti, first_lease.id);
  EXPECT_EQ(verify(second->value, "payments")->jti, second_lease.id);
}

TEST_F(TokenProviderTest, AirlocksOwnAudienceIsRefused) {
  // A tool holding a token for aud "airlock" could call Airlock's API as the agent.
  for (const char* audience : {"airlock", ""}) {
    const auto spec = token_spec(audience, {"echo"});
    auto target = provider_->target(spec, lease_with("a7"));
    ASSERT_FALSE(target.ok()) << audience;
    auto issued = provider_->issue(spec, lease_with("a7"), alice_context());
    ASSERT_FALSE(issued.ok()) << audience;
    EXPECT_EQ(issued.error().code, "invalid_argument");
  }
}

TEST_F(TokenProviderTest, ARevocationSurvivesARestartAndExpiredOnesArePurged) {
  auto lease = lease_with("33333333333333333333333333333333");
  lease.target = {{"jti", lease.id}};
  lease.expires_at = Clock::now() + seconds(60);
  ASSERT_TRUE(provider_->revoke(lease, nullptr).ok());
  EXPECT_TRUE(revoked_->is_revoked(lease.id));
  EXPECT_FALSE(revoked_->is_revoked("44444444444444444444444444444444"));
  // Long expired: nothing to keep. Expired a moment ago: kept, verifiers allow a skew.
  ASSERT_TRUE(revoked_->revoke("long-gone", Clock::now() - std::chrono::hours(1)).ok());
  ASSERT_TRUE(revoked_->revoke("just-expired", Clock::now() - seconds(10)).ok());

  provider_.reset();
  revoked_.reset();
  auto reopened = RevokedTokens::open(dir_.file("state.db"));
  ASSERT_TRUE(reopened.ok()) << reopened.error().message;
  EXPECT_TRUE((*reopened)->is_revoked(lease.id));
  EXPECT_TRUE((*reopened)->is_revoked("just-expired"));
  EXPECT_FALSE((*reopened)->is_revoked("long-gone"));
  EXPECT_EQ((*reopened)->size(), 2u);
}

TEST_F(TokenProviderTest, TheStateDatabaseGetsOnlyItsTableAndRevocationsAreThreadSafe) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([this, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string jti = "t" + std::to_string(t) + "-" + std::to_string(i);
        EXPECT_TRUE(revoked_->revoke(jti, Clock::now() + seconds(60)).ok());
        EXPECT_TRUE(revoked_->is_revoked(jti));
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(revoked_->size(), 200u);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir_.file("state.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &stmt, nullptr);
  std::set<std::string> tables;
  while (sqlite3_step(stmt) == SQLITE_ROW) tables.insert(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  EXPECT_EQ(tables, std::set<std::string>{"revoked_tokens"});
}

// ---- oauth-exchange: what can be checked without an upstream (tests/server has one) ----

policy::CredentialSpec exchange_spec(const std::string& endpoint) {
  policy::CredentialSpec spec;
  spec.env = "UPSTREAM_TOKEN";
  policy::OAuthExchangeCredential oauth;
  oauth.token_endpoint = endpoint;
  oauth.revocation_endpoint = endpoint + "/revoke";
  oauth.audience = "upstream";
  oauth.scopes = {"read"};
  oauth.client_id = "airlock";
  oauth.client_secret = "upstream-client";
  spec.source = oauth;
  return spec;
}

constexpr const char* kClientSecret = "s3cr3t-client-value";
constexpr const char* kUserToken = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVl";

OAuthExchangeProvider exchange_provider(int* lookups = nullptr) {
  identity::FetchOptions fetch = OAuthExchangeProvider::default_fetch();
  fetch.timeout = std::chrono::milliseconds(2000);
  return OAuthExchangeProvider(
      [lookups](const std::string& name) -> Result<std::string> {
        if (lookups) ++*lookups;
        if (name == "upstream-client") return std::string(kClientSecret);
        return Error::make("unknown_secret", "no secret named " + name);
      },
      fetch);
}

TEST(OAuthExchangeProvider, ACallWithoutAUserGetsNothing) {
  auto provider = exchange_provider();
  auto context = alice_context();
  context.user_token.clear();
  auto issued = provider.issue(exchange_spec("http://127.0.0.1:9/token"), lease_with("b1"), context);
  ASSERT_FALSE(issued.ok());
  EXPECT_EQ(issued.error().code, "credential_denied");
  EXPECT_NE(issued.error().message.find("on behalf of a user"), std::string::npos);
}

TEST(OAuthExchangeProvider, TheTargetNamesTheSecretNeverItsValue) {
  int lookups = 0;
  auto provider = exchange_provider(&lookups);
  auto target = provider.target(exchange_spec("https://sts.example/token"), lease_with("b2"));
  ASSERT_TRUE(target.ok());
  EXPECT_EQ((*target)["token_endpoint"], "https://sts.example/token");
  EXPECT_EQ((*target)["revocation_endpoint"], "https://sts.example/token/revoke");
  EXPECT_EQ(target->dump().find(kClientSecret), std::string::npos);
  EXPECT_EQ(lookups, 0);
}

TEST(OAuthExchangeProvider, AFailingUpstreamsErrorQuotesNeitherTheTokenNorTheSecret) {
  auto provider = exchange_provider();
  auto context = alice_context();
  context.user_token = kUserToken;
  // Port 9 (discard) on loopback: nothing listens, the connection is refused.
  auto issued = provider.issue(exchange_spec("http://127.0.0.1:9/token"), lease_with("b3"), context);
  ASSERT_FALSE(issued.ok());
  EXPECT_EQ(issued.error().code, "credential_unavailable");
  EXPECT_NE(issued.error().message.find("the token endpoint"), std::string::npos) << issued.error().message;
  EXPECT_EQ(issued.error().message.find(kClientSecret), std::string::npos);
  EXPECT_EQ(issued.error().message.find("c2lnbmF0dXJl"), std::string::npos);
}

TEST(OAuthExchangeProvider, AfterACrashRevokingDoesNothingAndSucceeds) {
  auto provider = exchange_provider();
  auto lease = lease_with("b4");
  lease.target = *provider.target(exchange_spec("http://127.0.0.1:9/token"), lease);
  EXPECT_TRUE(provider.revoke(lease, nullptr).ok());  // no value: it expires upstream
  const std::string value = "upstream-token";
  auto revoked = provider.revoke(lease, &value);  // a value: the endpoint is asked (and is down)
  ASSERT_FALSE(revoked.ok());
  EXPECT_EQ(revoked.error().message.find(value), std::string::npos);
}

// An upstream on loopback that answers one request with `status` and `body`, and keeps what
// it was sent.
class OneShotUpstream {
 public:
  OneShotUpstream(int status, std::string body) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 1) != 0) return;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, status, body = std::move(body)] { serve(status, body); });
  }
  ~OneShotUpstream() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  const std::string& request() {  // after the call
    if (thread_.joinable()) thread_.join();
    return request_;
  }

 private:
  void serve(int status, const std::string& body) {
    const int conn = ::accept(fd_, nullptr, nullptr);
    if (conn < 0) return;
    char buf[4096];
    std::size_t want = std::string::npos;
    while (want == std::string::npos || request_.size() < want) {
      const ssize_t n = ::read(conn, buf, sizeof buf);
      if (n <= 0) break;
      request_.append(buf, static_cast<std::size_t>(n));
      const auto end = request_.find("\r\n\r\n");
      const auto length = request_.find("Content-Length: ");
      if (end != std::string::npos && length != std::string::npos)
        want = end + 4 + std::stoul(request_.substr(length + 16));
    }
    const std::string answer = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n"
                               "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    (void)::write(conn, answer.data(), answer.size());
    ::close(conn);
  }

  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::string request_;
};

policy::CredentialSpec basic_spec(const OneShotUpstream& upstream) {
  auto spec = exchange_spec("");
  auto& oauth = std::get<policy::OAuthExchangeCredential>(spec.source);
  oauth.token_endpoint = upstream.url("/token");
  oauth.revocation_endpoint = upstream.url("/revoke");
  oauth.client_id = "airlock client";
  return spec;
}

TEST(OAuthExchangeProvider, TheExchangeIsRfc8693WithHttpBasicAndTheLifetimeIsCapped) {
  OneShotUpstream upstream(200, R"({"access_token": "up-token", "token_type": "Bearer", "expires_in": 3600, "scope": "read"})");
  auto provider = exchange_provider();
  auto context = alice_context();
  context.user_token = kUserToken;
  auto issued = provider.issue(basic_spec(upstream), lease_with("b5"), context);
  ASSERT_TRUE(issued.ok()) << issued.error().message;
  EXPECT_EQ(issued->value, "up-token");
  EXPECT_EQ(issued->scopes, std::vector<std::string>{"read"});
  EXPECT_EQ(issued->expires_at, context.now + seconds(60));  // max_ttl, not the upstream's hour
  const std::string& sent = upstream.request();
  EXPECT_EQ(sent.rfind("POST /token HTTP/1.1\r\n", 0), 0u) << sent;
  // base64("airlock%20client:s3cr3t-client-value"): each part form-encoded (RFC 6749 2.3.1).
  EXPECT_NE(sent.find("Authorization: Basic YWlybG9jayUyMGNsaWVudDpzM2NyM3QtY2xpZW50LXZhbHVl\r\n"), std::string::npos) << sent;
  EXPECT_NE(sent.find("Content-Type: application/x-www-form-urlencoded\r\n"), std::string::npos);
  const std::string form = sent.substr(sent.find("\r\n\r\n") + 4);
  EXPECT_EQ(form, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=" +
                      std::string(kUserToken) +
                      "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&audience=upstream&scope=read");
}

TEST(OAuthExchangeProvider, AnUpstreamRefusalIsNamedButWhatItEchoesIsNot) {
  // An upstream whose error_description quotes the token it was sent.
  OneShotUpstream upstream(400, std::string(R"({"error": "invalid_grant", "error_description": "bad token )") +
                                    kUserToken + R"("})");
  auto provider = exchange_provider();
  auto context = alice_context();
  context.user_token = kUserToken;
  auto issued = provider.issue(basic_spec(upstream), lease_with("b6"), context);
  ASSERT_FALSE(issued.ok());
  EXPECT_EQ(issued.error().code, "credential_denied");
  EXPECT_NE(issued.error().message.find("HTTP 400 (invalid_grant)"), std::string::npos) << issued.error().message;
  EXPECT_EQ(issued.error().message.find("c2lnbmF0dXJl"), std::string::npos) << issued.error().message;
}

TEST(OAuthExchangeProvider, RevokingPostsTheTokenWithTheSameClientAuthentication) {
  OneShotUpstream upstream(200, "{}");
  auto provider = exchange_provider();
  auto lease = lease_with("b7");
  lease.target = *provider.target(basic_spec(upstream), lease);
  const std::string value = "up-token";
  ASSERT_TRUE(provider.revoke(lease, &value).ok());
  const std::string& sent = upstream.request();
  EXPECT_EQ(sent.rfind("POST /revoke HTTP/1.1\r\n", 0), 0u) << sent;
  EXPECT_NE(sent.find("Authorization: Basic YWlybG9jayUyMGNsaWVudDpzM2NyM3QtY2xpZW50LXZhbHVl\r\n"), std::string::npos);
  EXPECT_EQ(sent.substr(sent.find("\r\n\r\n") + 4), "token=up-token&token_type_hint=access_token");
}

TEST(FormEncoding, ReservedCharactersAreEscaped) {
  EXPECT_EQ(identity::form_urlencode({{"a b", "x&y=z+/"}, {"scope", "read write"}}),
            "a%20b=x%26y%3Dz%2B%2F&scope=read%20write");
}

}  // namespace
}  // namespace airlock::creds
