// Credentials through the daemon, end to end (docs/credentials.md): a tool gets its credential
// as an environment variable only, every attempt to leak it through the output fails, other
// sandboxes never see it, a minted token is live during the call and dead after it, and no
// issued value is anywhere in the data directory afterwards.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "audit/log_reader.hpp"
#include "creds/secret_store.hpp"
#include "pg_cluster.hpp"
#include "tls_fixtures.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string tools_yaml(std::uint16_t collector_port) {
  const std::string forward = "\"7000=127.0.0.1:" + std::to_string(collector_port) + "\"";
  return R"(  - name: show-secret
    runtime: {type: python, file: tools/show_credential.py}
    credentials:
      - {env: API_KEY, secret: api-key}
  - name: show-token
    runtime: {type: python, file: tools/show_credential.py}
    credentials:
      - env: REPORTS_TOKEN
        token: {audience: "https://reports.internal", scopes: ["reports:write", "reports:read"], ttl: 2m}
  - name: send-token
    runtime: {type: python, file: tools/send_credential.py}
    network: {forward: [)" + forward + R"(]}
    credentials:
      - env: REPORTS_TOKEN
        token: {audience: "https://reports.internal", scopes: ["reports:write"], ttl: 2m}
  - name: hold-secret
    runtime: {type: python, file: tools/show_credential.py}
    credentials:
      - {env: TARGET, secret: snoop-target}
  - name: proc-snoop
    runtime: {type: python, file: tools/proc_snoop.py}
  - name: missing-secret
    runtime: {type: python, file: tools/show_credential.py}
    credentials:
      - {env: NOPE, secret: never-set}
)";
}

constexpr const char* kApiKeyValue = "sk-live-4f9a0c1d2e3b4a5968778695a4b3c2d1";
constexpr const char* kSnoopValue = "snoop-target-value-0a1b2c3d4e5f";

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = std::make_unique<Workspace>("", tools_yaml(collector_.port()));
    auto store = creds::SecretStore::open(ws_->dir() + "/data");
    ASSERT_TRUE(store.ok()) << store.error().message;
    ASSERT_TRUE((*store)->set("api-key", kApiKeyValue).ok());
    ASSERT_TRUE((*store)->set("snoop-target", kSnoopValue).ok());
    daemon_ = std::make_unique<RunningDaemon>(*ws_);
  }
  void TearDown() override {
    daemon_.reset();
    ws_.reset();
  }
  std::uint16_t port() const { return daemon_->port; }
  json introspect(const std::string& token) {
    auto r = http_with(port(), "POST", "/v1/token/introspect", "token=" + token, kKey,
                       {{"Content-Type", "application/x-www-form-urlencoded"}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  // Every file under the data directory, as bytes.
  std::string data_dir_bytes() const {
    std::string all;
    for (const auto& e : fs::recursive_directory_iterator(ws_->dir() + "/data")) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      all.append(std::istreambuf_iterator<char>(in), {});
    }
    return all;
  }

  Collector collector_;
  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
};

void expect_no_encoding_of(const std::string& text, const std::string& value) {
  EXPECT_EQ(text.find(value), std::string::npos);
  std::string hex;
  for (unsigned char c : value) {
    static const char* digits = "0123456789abcdef";
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  EXPECT_EQ(text.find(hex), std::string::npos);
}

TEST_F(CredentialsTest, AToolThatPrintsItsSecretInEveryEncodingLeaksNone) {
  auto r = invoke(port(), "show-secret", {{"vars", {"API_KEY"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto body = r.json();
  ASSERT_EQ(body["status"], "ok") << r.body;
  const auto& shown = body["output"]["API_KEY"];
  for (const char* form : {"raw", "base64", "base64url", "hex", "HEX", "url"})
    EXPECT_EQ(shown[form], "[REDACTED:CREDENTIAL]") << form << ": " << shown.dump();
  EXPECT_EQ(shown["in_text"], "the credential is [REDACTED:CREDENTIAL], use it well");
  expect_no_encoding_of(r.body, kApiKeyValue);
  bool listed = false;
  for (const auto& red : body["redactions"]) listed |= red["detector"] == "credential";
  EXPECT_TRUE(listed) << body["redactions"].dump();
  // The stored invocation and its log are redacted too.
  auto stored = http(port(), "GET", "/v1/invocations/" + body["id"].get<std::string>());
  expect_no_encoding_of(stored.body, kApiKeyValue);
}

TEST_F(CredentialsTest, TheAuditRecordHoldsTheLeaseAndAnHmacNeverTheValue) {
  auto r = invoke(port(), "show-secret", {{"vars", json::array()}});
  ASSERT_EQ(r.json()["status"], "ok") << r.body;
  daemon_.reset();  // the log is closed and checkpointed
  auto reader = audit::LogReader::open(ws_->audit_path());
  ASSERT_TRUE(reader.ok());
  json record;
  const json* found = nullptr;
  ASSERT_TRUE(reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
    auto parsed = json::parse(text, nullptr, false);
    const json& fields = parsed.contains("fields") ? parsed["fields"] : parsed;
    if (fields.value("tool", "") == "show-secret") record = fields;
    return true;
  }).ok());
  if (!record.is_null()) found = &record;
  ASSERT_NE(found, nullptr);
  ASSERT_EQ((*found)["credentials"].size(), 1u) << found->dump();
  const auto& c = (*found)["credentials"][0];
  EXPECT_EQ(c["name"], "API_KEY");
  EXPECT_EQ(c["provider"], "secret");
  EXPECT_EQ(c["lease_id"].get<std::string>().size(), 32u);
  EXPECT_EQ(c["hmac_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(c["scopes"], json::array({"secret:api-key"}));
  EXPECT_GT(c["expires_at"].get<std::int64_t>(), 0);
  expect_no_encoding_of(found->dump(), kApiKeyValue);
}

TEST_F(CredentialsTest, AMintedTokenIsLiveDuringTheCallAndDeadAfterIt) {
  auto call = std::async(std::launch::async, [&] {
    return invoke(port(), "send-token", {{"var", "REPORTS_TOKEN"}, {"port", 7000}, {"sleep", 3}});
  });
  const std::string token = collector_.next();
  ASSERT_FALSE(token.empty());
  auto live = introspect(token);
  EXPECT_EQ(live["active"], true) << live.dump();
  EXPECT_EQ(live["aud"], "https://reports.internal");
  EXPECT_EQ(live["scope"], "reports:write");
  EXPECT_EQ(live["sub"], "agent");  // no user: the agent itself
  auto r = call.get();
  ASSERT_EQ(r.json()["status"], "ok") << r.body;
  EXPECT_EQ(introspect(token), json({{"active", false}}));
  // A tool's token is no key to Airlock's own API.
  EXPECT_EQ(invoke(port(), "echo", json::object(), token).status, 401);
}

TEST_F(CredentialsTest, TwoConcurrentCallsGetDifferentCredentials) {
  auto a = std::async(std::launch::async, [&] {
    return invoke(port(), "send-token", {{"var", "REPORTS_TOKEN"}, {"port", 7000}, {"sleep", 1}});
  });
  auto b = std::async(std::launch::async, [&] {
    return invoke(port(), "send-token", {{"var", "REPORTS_TOKEN"}, {"port", 7000}, {"sleep", 1}});
  });
  const std::string first = collector_.next(), second = collector_.next();
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  EXPECT_NE(first, second);
  EXPECT_EQ(a.get().json()["status"], "ok");
  EXPECT_EQ(b.get().json()["status"], "ok");
}

TEST_F(CredentialsTest, ASandboxCannotReadAnotherSandboxsCredentialThroughProc) {
  auto holder = std::async(std::launch::async, [&] {
    return invoke(port(), "hold-secret", {{"vars", json::array()}, {"sleep", 3}});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the holder is running now
  auto snoop = invoke(port(), "proc-snoop", {{"needle", kSnoopValue}});
  ASSERT_EQ(snoop.json()["status"], "ok") << snoop.body;
  EXPECT_EQ(snoop.json()["output"]["found"], json::array()) << snoop.body;
  EXPECT_EQ(holder.get().json()["status"], "ok");
}

TEST_F(CredentialsTest, AMissingSecretFailsTheCallBeforeTheToolRuns) {
  auto r = invoke(port(), "missing-secret", {{"vars", {"NOPE"}}});
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.json()["error"]["kind"], "credential_unavailable") << r.body;
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("never-set"), std::string::npos);
}

TEST_F(CredentialsTest, NoIssuedValueIsAnywhereInTheDataDirectoryAfterwards) {
  std::vector<std::string> tokens;
  for (int i = 0; i < 3; ++i) {
    auto call = std::async(std::launch::async, [&] {
      return invoke(port(), "send-token", {{"var", "REPORTS_TOKEN"}, {"port", 7000}});
    });
    tokens.push_back(collector_.next());
    ASSERT_EQ(call.get().json()["status"], "ok");
  }
  ASSERT_EQ(invoke(port(), "show-secret", {{"vars", {"API_KEY"}}}).json()["status"], "ok");
  // Nor in the metrics.
  const std::string metrics = http(port(), "GET", "/metrics").body;
  ASSERT_NE(metrics.find("airlock_invocations_total"), std::string::npos);
  expect_no_encoding_of(metrics, kApiKeyValue);
  for (const auto& t : tokens) expect_no_encoding_of(metrics, t);
  daemon_.reset();
  const std::string bytes = data_dir_bytes();
  ASSERT_GT(bytes.size(), 0u);
  expect_no_encoding_of(bytes, kApiKeyValue);
  for (const auto& t : tokens) {
    ASSERT_FALSE(t.empty());
    expect_no_encoding_of(bytes, t);
  }
}

// A postgres credential through the daemon: a real cluster, a tool that reaches it through its
// port forward with the URL it was given, and the role gone once the call is over.
class PostgresCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = airlock::test::PgCluster::start();
    ASSERT_TRUE(cluster.ok()) << cluster.error().message;
    pg_ = std::move(*cluster);
    ASSERT_TRUE(pg_->exec("CREATE ROLE shop_admin LOGIN CREATEROLE PASSWORD 'admin-pw-7f3a'").ok());
    ASSERT_TRUE(pg_->exec("CREATE DATABASE shop OWNER shop_admin").ok());
    ASSERT_TRUE(pg_->exec("SET ROLE shop_admin; CREATE TABLE orders (id int); CREATE TABLE customers (id int);"
                          " CREATE TABLE payroll (salary int); INSERT INTO orders VALUES (1), (2), (3)",
                          "shop").ok());
    const std::string port = std::to_string(pg_->port());
    ws_ = std::make_unique<Workspace>("", R"(  - name: orders-report
    runtime: {type: python, file: tools/orders_report.py}
    network: {forward: ["5432=127.0.0.1:)" + port + R"("]}
    credentials:
      - env: ORDERS_DB_URL
        postgres: {server: orders, grant: {select: [orders, customers]}, ttl: 60s}
  - name: outlive-call
    runtime: {type: python, file: tools/outlive_call.py}
    limits: {pids: 64}
    network: {forward: ["5432=127.0.0.1:)" + port + R"("]}
    credentials:
      - env: ORDERS_DB_URL
        postgres: {server: orders, grant: {select: [orders]}, ttl: 60s}
credentialServers:
  - name: orders
    postgres: {host: 127.0.0.1, port: )" + port + R"(, database: shop, adminSecret: orders-admin}
)");
    auto store = creds::SecretStore::open(ws_->dir() + "/data");
    ASSERT_TRUE(store.ok()) << store.error().message;
    ASSERT_TRUE((*store)->set("orders-admin", pg_->url("shop_admin", "admin-pw-7f3a", "shop")).ok());
    daemon_ = std::make_unique<RunningDaemon>(*ws_);
  }
  void TearDown() override {
    daemon_.reset();
    ws_.reset();
    pg_.reset();
  }
  // The roles leases make (airlock_<lease id>), not the fixture's airlock_super.
  std::vector<std::string> airlock_roles() {
    auto roles = pg_->column("SELECT rolname FROM pg_roles WHERE rolname ~ '^airlock_[0-9a-f]{32}$'");
    EXPECT_TRUE(roles.ok());
    return roles.ok() ? *roles : std::vector<std::string>{"?"};
  }
  std::vector<std::string> airlock_sessions() {
    auto s = pg_->column("SELECT usename FROM pg_stat_activity WHERE usename ~ '^airlock_[0-9a-f]{32}$'");
    return s.ok() ? *s : std::vector<std::string>{"?"};
  }

  std::unique_ptr<airlock::test::PgCluster> pg_;
  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
};

TEST_F(PostgresCredentialsTest, TheRoleReadsWhatItWasGrantedNothingElseAndIsGoneAfterTheCall) {
  auto r = invoke(daemon_->port, "orders-report", json::object());
  const json body = r.json();
  ASSERT_EQ(body["status"], "ok") << r.body;
  const json& out = body["output"];
  EXPECT_EQ(out["orders"], "3") << out.dump();
  EXPECT_NE(out["payroll_error"].get<std::string>().find("permission denied"), std::string::npos) << out.dump();
  EXPECT_NE(out["insert_error"].get<std::string>().find("permission denied"), std::string::npos) << out.dump();
  const std::string role = out["user"];
  EXPECT_EQ(role.rfind("airlock_", 0), 0u) << out.dump();
  EXPECT_TRUE(airlock_roles().empty());  // dropped at teardown
  EXPECT_TRUE(airlock_sessions().empty());
  // The URL never left: the password is redacted wherever the tool might have put it.
  EXPECT_EQ(r.body.find("postgresql://airlock_"), std::string::npos) << r.body;
}

TEST_F(PostgresCredentialsTest, AChildThatOutlivesTheCallAndRetriesTheCredentialGetsNowhere) {
  auto r = invoke(daemon_->port, "outlive-call", {{"var", "ORDERS_DB_URL"}});
  ASSERT_EQ(r.json()["status"], "ok") << r.body;
  EXPECT_EQ(r.json()["output"]["orders"], "3") << r.body;
  // The detached child died with the sandbox, and its role is gone: for two seconds no
  // session of an Airlock role appears.
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(airlock_sessions().empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(airlock_roles().empty());
}

// Egress injection through the daemon: the sandbox holds the placeholder, the verified upstream
// gets the secret, and no other host does.
class InjectedCredentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    ::setenv("SSL_CERT_FILE", pki_.ca_file().c_str(), 1);  // the daemon's trust store
    upstream_ = std::make_unique<egress::fixtures::TlsServer>(pki_.server("api.slack.example", "ca"));
    other_ = std::make_unique<egress::fixtures::TlsServer>(pki_.server("other.example", "ca"));
    const std::string up = std::to_string(upstream_->port()), other = std::to_string(other_->port());
    ws_ = std::make_unique<Workspace>("", R"(  - name: call-api
    runtime: {type: python, file: tools/call_api.py}
    network:
      allow: ["other.example:)" + other + R"("]
      resolve: {api.slack.example: 127.0.0.1, other.example: 127.0.0.1}
    credentials:
      - env: SLACK_TOKEN
        secret: slack-bot
        inject: {host: api.slack.example, port: )" + up + R"(, header: Authorization, value: "Bearer ${SLACK_TOKEN}"}
)");
    auto store = creds::SecretStore::open(ws_->dir() + "/data");
    ASSERT_TRUE(store.ok()) << store.error().message;
    ASSERT_TRUE((*store)->set("slack-bot", kSlackValue).ok());
    daemon_ = std::make_unique<RunningDaemon>(*ws_);
  }
  void TearDown() override {
    daemon_.reset();
    ws_.reset();
    ::unsetenv("SSL_CERT_FILE");
  }
  static constexpr const char* kSlackValue = "xoxb-1111-2222-aaaabbbbccccdddd";
  egress::fixtures::TestPki pki_;
  std::unique_ptr<egress::fixtures::TlsServer> upstream_, other_;
  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
};

TEST_F(InjectedCredentialTest, TheSandboxSeesAPlaceholderAndOnlyTheUpstreamGetsTheSecret) {
  auto r = invoke(daemon_->port, "call-api", {{"host", "api.slack.example"}, {"port", upstream_->port()}});
  const json body = r.json();
  ASSERT_EQ(body["status"], "ok") << r.body;
  EXPECT_EQ(body["output"]["env"], "airlock-injected-by-egress-proxy:SLACK_TOKEN") << r.body;
  EXPECT_EQ(body["output"]["status"], 200) << r.body;
  auto requests = upstream_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_NE(requests[0].find(std::string("\r\nAuthorization: Bearer ") + kSlackValue + "\r\n"), std::string::npos)
      << requests[0];
  EXPECT_EQ(r.body.find(kSlackValue), std::string::npos);

  // Another host the tool may reach gets the placeholder it sent, never the secret.
  auto o = invoke(daemon_->port, "call-api", {{"host", "other.example"}, {"port", other_->port()}, {"unverified", true}});
  ASSERT_EQ(o.json()["status"], "ok") << o.body;
  auto elsewhere = other_->requests();
  ASSERT_EQ(elsewhere.size(), 1u) << o.body;
  EXPECT_EQ(elsewhere[0].find(kSlackValue), std::string::npos) << elsewhere[0];
  EXPECT_NE(elsewhere[0].find("airlock-injected-by-egress-proxy:SLACK_TOKEN"), std::string::npos);

  // A host it was not allowed is refused outright.
  auto denied = invoke(daemon_->port, "call-api", {{"host", "evil.example"}, {"port", 443}});
  EXPECT_EQ(denied.json()["output"]["status"], 0) << denied.body;
}

}  // namespace
}  // namespace airlock::server::test
