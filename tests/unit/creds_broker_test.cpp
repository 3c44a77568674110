// The credential broker's lifecycle (a lease stored before its credential exists, revoked
// whatever happens, recovered after a crash), the redaction of issued values, and the
// credentials config section. The providers themselves have their own tests.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "creds/broker.hpp"
#include "dlp/credential_redaction.hpp"
#include "pipeline/stages/credentials.hpp"
#include "policy/config.hpp"

namespace airlock::creds {
namespace {

namespace fs = std::filesystem;

// A provider that records what it is asked, and checks the broker's promise: the lease is in
// the store (state leasing) before issue() makes anything.
class RecordingProvider : public Provider {
 public:
  explicit RecordingProvider(LeaseStore& store) : store_(store) {}
  std::string_view kind() const override { return "secret"; }
  Result<nlohmann::json> target(const policy::CredentialSpec& spec, const Lease&) const override {
    return nlohmann::json{{"secret", std::get<policy::SecretCredential>(spec.source).name}};
  }
  Result<Issued> issue(const policy::CredentialSpec& spec, const Lease& lease, const LeaseContext& ctx) override {
    auto stored = store_.of_invocation(lease.invocation_id);
    stored_first = stored && !stored->empty() && stored->back().id == lease.id &&
                   stored->back().state == Lease::State::leasing;
    if (spec.env == "FAILS") return Error::make("credential_unavailable", "the upstream is down");
    return Issued{"value-of-" + spec.env + "-" + lease.id, {"secret:x"}, ctx.now + std::chrono::seconds(30)};
  }
  Status revoke(const Lease& lease, const std::string* value) override {
    revoked.push_back(lease.id);
    had_value.push_back(value != nullptr);
    if (fail_revoke) return Error::make("credential_unavailable", "cannot reach the server");
    return {};
  }
  LeaseStore& store_;
  bool stored_first = false;
  bool fail_revoke = false;
  std::vector<std::string> revoked;
  std::vector<bool> had_value;
};

policy::CredentialSpec secret_spec(const std::string& env) {
  policy::CredentialSpec s;
  s.env = env;
  s.source = policy::SecretCredential{"name"};
  return s;
}

class BrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("airlock-broker-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    auto opened = LeaseStore::open((dir_ / "state.db").string());
    ASSERT_TRUE(opened.ok());
    store_ = std::move(*opened);
    provider_ = std::make_shared<RecordingProvider>(*store_);
    broker_ = std::make_unique<Broker>(*store_, Providers{{"secret", provider_}});
    context_.invocation_id = "inv-1";
    context_.tool = "t";
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::unique_ptr<LeaseStore> store_;
  std::shared_ptr<RecordingProvider> provider_;
  std::unique_ptr<Broker> broker_;
  LeaseContext context_;
};

TEST_F(BrokerTest, ALeaseIsStoredBeforeItsCredentialIsMadeAndRevokedAfter) {
  auto leased = broker_->lease({secret_spec("A"), secret_spec("B")}, context_);
  ASSERT_TRUE(leased.ok()) << leased.error().message;
  EXPECT_TRUE(provider_->stored_first);
  ASSERT_EQ(leased->size(), 2u);
  EXPECT_NE((*leased)[0].lease.id, (*leased)[1].lease.id);
  EXPECT_NE((*leased)[0].value, (*leased)[1].value);
  EXPECT_EQ(store_->outstanding()->size(), 2u);
  auto stored = store_->of_invocation("inv-1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)[0].state, Lease::State::leasing);

  ASSERT_TRUE(broker_->revoke(*leased).ok());
  EXPECT_EQ(provider_->revoked.size(), 2u);
  EXPECT_EQ(provider_->had_value, (std::vector<bool>{true, true}));
  EXPECT_TRUE((*leased)[0].value.empty());  // wiped
  EXPECT_TRUE(store_->outstanding()->empty());
  // The stored rows never hold the value.
  auto rows = store_->of_invocation("inv-1");
  ASSERT_TRUE(rows.ok());
  for (const auto& l : *rows) EXPECT_EQ(l.state, Lease::State::revoked);
}

TEST_F(BrokerTest, WhenOneCredentialFailsTheOnesAlreadyMadeAreRevoked) {
  auto leased = broker_->lease({secret_spec("A"), secret_spec("FAILS")}, context_);
  ASSERT_FALSE(leased.ok());
  EXPECT_EQ(leased.error().code, "credential_unavailable");
  EXPECT_NE(leased.error().message.find("FAILS (secret)"), std::string::npos) << leased.error().message;
  EXPECT_EQ(provider_->revoked.size(), 2u);  // the half-made one, then A
  EXPECT_TRUE(store_->outstanding()->empty());
}

TEST_F(BrokerTest, ARevocationThatFailsStaysOutstandingAndIsRetriedAtTheNextStart) {
  auto leased = broker_->lease({secret_spec("A")}, context_);
  ASSERT_TRUE(leased.ok());
  provider_->fail_revoke = true;
  Status s = broker_->revoke(*leased);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("cannot reach the server"), std::string::npos);
  auto outstanding = store_->outstanding();
  ASSERT_EQ(outstanding->size(), 1u);
  EXPECT_EQ((*outstanding)[0].state, Lease::State::revoke_failed);

  provider_->fail_revoke = false;
  auto recovery = broker_->revoke_outstanding();
  EXPECT_EQ(recovery.revoked, 1);
  EXPECT_EQ(recovery.failed, 0);
  EXPECT_FALSE(provider_->had_value.back());  // a successor holds no value
  EXPECT_TRUE(store_->outstanding()->empty());
}

TEST_F(BrokerTest, LeasesLeftByAKilledDaemonAreRevokedByTheNextOne) {
  auto leased = broker_->lease({secret_spec("A"), secret_spec("B")}, context_);
  ASSERT_TRUE(leased.ok());
  // The daemon dies here: a new store and broker on the same file.
  auto reopened = LeaseStore::open((dir_ / "state.db").string());
  ASSERT_TRUE(reopened.ok());
  auto provider = std::make_shared<RecordingProvider>(**reopened);
  Broker successor(**reopened, Providers{{"secret", provider}});
  auto recovery = successor.revoke_outstanding();
  EXPECT_EQ(recovery.revoked, 2);
  EXPECT_EQ(provider->revoked.size(), 2u);
  EXPECT_TRUE((*reopened)->outstanding()->empty());
}

TEST_F(BrokerTest, AProviderThatDoesNotRunHereIsAnError) {
  policy::CredentialSpec token;
  token.env = "T";
  token.source = policy::TokenCredential{"https://reports", {}, std::chrono::seconds(60)};
  auto leased = broker_->lease({token}, context_);
  ASSERT_FALSE(leased.ok());
  EXPECT_NE(leased.error().message.find("no token provider"), std::string::npos);
}

}  // namespace
}  // namespace airlock::creds

namespace airlock::pipeline {
namespace {

TEST(CredentialRedaction, EveryEncodingOfAValueIsRedactedWhereverItWouldLeave) {
  auto scanner = dlp::Scanner::create(dlp::Policy::literals_only());
  ASSERT_TRUE(scanner.ok());
  const std::string value = "s3cr3t-Value/with+chars";
  const std::string b64 = "czNjcjN0LVZhbHVlL3dpdGgrY2hhcnM=";          // base64 of value
  const std::string hex = "73336372337430";                               // not the whole value: kept
  const std::string full_hex = "7333637233742d56616c75652f776974682b6368617273";
  const std::string url = "s3cr3t-Value%2Fwith%2Bchars";
  Invocation inv;
  inv.output = nlohmann::json{{"raw", value}, {"b64", b64}, {"nested", {{"hex", full_hex}, {"url", url}}},
                              {"partial", hex}};
  inv.tool_log = "debug: token=" + value + "\n";
  inv.error = fail(ErrorKind::tool_crashed, "failed with " + value);
  ASSERT_TRUE(redact_credentials(inv, *scanner, {value}).ok());
  const std::string out = inv.output->dump();
  EXPECT_EQ(out.find(value), std::string::npos) << out;
  EXPECT_EQ(out.find(b64), std::string::npos) << out;
  EXPECT_EQ(out.find(full_hex), std::string::npos) << out;
  EXPECT_EQ(out.find(url), std::string::npos) << out;
  EXPECT_EQ((*inv.output)["raw"], "[REDACTED:CREDENTIAL]");
  EXPECT_EQ((*inv.output)["partial"], hex);  // a prefix of the hex form is not the value
  EXPECT_EQ(inv.tool_log.find(value), std::string::npos);
  EXPECT_EQ(inv.error->message.find(value), std::string::npos);
  ASSERT_EQ(inv.redactions.size(), 2u);
  EXPECT_EQ(inv.redactions[0].detector, "credential");
  EXPECT_EQ(inv.redactions[0].where, "output");
  EXPECT_EQ(inv.redactions[1].where, "log");
}

TEST(CredentialRedaction, NothingIsListedWhenNoValueWasThere) {
  auto scanner = dlp::Scanner::create(dlp::Policy::literals_only());
  ASSERT_TRUE(scanner.ok());
  Invocation inv;
  inv.output = nlohmann::json{{"ok", true}, {"email", "jane@example.org"}};  // DLP's, not ours
  ASSERT_TRUE(redact_credentials(inv, *scanner, {"the-credential"}).ok());
  EXPECT_TRUE(inv.redactions.empty());
  EXPECT_EQ((*inv.output)["email"], "jane@example.org");
}

// A session's output is redacted as it streams (dlp::CredentialStream): wherever the chunks
// are cut (inside the value, inside its base64, between a base64 form and its last 1-3
// characters), the text that leaves is the one-shot redaction's.
TEST(CredentialRedaction, AStreamCutAnywhereRedactsAsTheWholeText) {
  auto scanner = dlp::make_credential_scanner();
  ASSERT_TRUE(scanner.ok());
  const std::string value = "s3cr3t-Value/with+chars";  // base64 "czNjcjN0LVZhbHVlL3dpdGgrY2hhcnM="
  auto literals = dlp::LiteralSet::compile({value});
  ASSERT_TRUE(literals.ok());
  const std::string text = "raw " + value + " b64 czNjcjN0LVZhbHVlL3dpdGgrY2hhcnM= and ...czNjcjN0LVZhbHVlL3dpdGgrY2hhcnM\n" +
                           value + value + "\nend";
  std::string whole = text;
  ASSERT_TRUE(dlp::redact_credential_text(whole, **scanner, {&*literals, dlp::JsonMode::off}));
  EXPECT_EQ(whole.find(value), std::string::npos);
  EXPECT_EQ(whole.find("hhcnM"), std::string::npos) << whole;  // the tails went with the markers
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    auto stream = dlp::CredentialStream::open(**scanner, *literals);
    ASSERT_TRUE(stream.ok());
    std::string out = stream->write(std::string_view(text).substr(0, cut)).text;
    out += stream->write(std::string_view(text).substr(cut)).text;
    out += stream->finish().text;
    ASSERT_EQ(out, whole) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace airlock::pipeline

namespace airlock::policy {
namespace {

constexpr const char* kHead = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
credentialServers:
  - name: orders
    postgres: {host: 127.0.0.1, port: 5432, database: shop, adminSecret: orders-admin}
tools:
  - name: orders-report
    runtime: {type: command, command: [/bin/true]}
    network: {forward: ["5432=127.0.0.1:5432"]}
)";

Result<Config> parse(const std::string& credentials) {
  return parse_config(std::string(kHead) + "    credentials:\n" + credentials, "test.yaml", "/tmp");
}

TEST(CredentialsConfig, TheIssueExampleParses) {
  auto c = parse(R"(      - env: ORDERS_DB_URL
        postgres: {server: orders, grant: {select: [orders, customers]}, ttl: 60s}
      - env: REPORTS_TOKEN
        token: {audience: https://reports.internal, scopes: [reports:write], ttl: 2m}
      - env: SLACK_TOKEN
        secret: slack-bot
        inject: {host: api.slack.example, header: Authorization, value: "Bearer ${SLACK_TOKEN}"}
      - env: UPSTREAM
        oauth-exchange: {tokenEndpoint: "https://sts.example/token", audience: api, scopes: [read], clientSecret: sts-client}
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto& tool = c->tools.at(0);
  ASSERT_EQ(tool.credentials.size(), 4u);
  EXPECT_EQ(tool.credentials[0].provider(), "postgres");
  const auto& pg = std::get<PostgresCredential>(tool.credentials[0].source);
  EXPECT_EQ(pg.grant.at("select"), (std::vector<std::string>{"orders", "customers"}));
  EXPECT_EQ(pg.ttl, std::chrono::seconds(60));
  EXPECT_EQ(std::get<TokenCredential>(tool.credentials[1].source).ttl, std::chrono::seconds(120));
  EXPECT_EQ(tool.credentials[2].provider(), "secret");
  ASSERT_TRUE(tool.credentials[2].inject);
  EXPECT_EQ(tool.credentials[3].provider(), "oauth-exchange");
  // The injected host is reachable, and only on its port.
  bool allowed = false;
  for (const auto& rule : tool.network.allow) allowed |= rule.host == "api.slack.example" && rule.port == 443;
  EXPECT_TRUE(allowed);
  ASSERT_NE(c->find_credential_server("orders"), nullptr);
  EXPECT_EQ(c->find_credential_server("orders")->postgres.admin_secret, "orders-admin");
}

void expect_refused(const std::string& credentials, const std::string& why) {
  auto c = parse(credentials);
  ASSERT_FALSE(c.ok()) << credentials;
  EXPECT_NE(c.error().message.find(why), std::string::npos) << c.error().message;
}

TEST(CredentialsConfig, MistakesAreRefusedWithTheReason) {
  expect_refused("      - env: T\n        token: {audience: airlock}\n", "Airlock's own API");
  expect_refused("      - env: T\n        postgres: {server: nope, grant: {select: [t]}}\n",
                 "no credentialServers entry is named 'nope'");
  expect_refused("      - env: T\n        postgres: {server: orders, grant: {drop: [t]}}\n", "not a table privilege");
  expect_refused("      - env: T\n        secret: a\n        token: {audience: x}\n", "exactly one of");
  expect_refused("      - env: T\n        secret: a\n        inject: {host: h.example, header: Authorization, value: Bearer}\n",
                 "must contain ${T}");
  expect_refused("      - env: T\n        token: {audience: x, ttl: 2h}\n", "credentials are short-lived");
  expect_refused("      - env: 9T\n        secret: a\n", "not a valid variable name");
  expect_refused("      - env: T\n        secret: a\n      - env: T\n        secret: b\n", "two credentials are given as T");
  expect_refused("      - env: T\n        oauth-exchange: {tokenEndpoint: 'http://sts.example/token', audience: a}\n",
                 "expected an https:// URL");
  expect_refused("      - env: T\n        secret: a\n        color: red\n", "color");
}

}  // namespace
}  // namespace airlock::policy
