// Issue #35: credentials leased for a session (docs/sessions.md, "Credentials"), against a real
// daemon. Each test runs the attack or the accident for real: an exec printing its credential
// raw, encoded, on stderr and split across two writes; a file or a file name holding it; the
// audit log; a session deleted, left idle, or its daemon SIGKILLed mid-exec (its leases must
// die with it: the token provider's introspection says so); a lease that cannot be made; and
// renewal, which must give later execs a fresh value and end the old one.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "audit/log_reader.hpp"
#include "common/digest.hpp"
#include "creds/lease_store.hpp"
#include "creds/secret_store.hpp"
#include "dlp/credential_redaction.hpp"
#include "sandbox/cgroup.hpp"
#include "server/sessions/session_credentials.hpp"
#include "server_test_support.hpp"
#include "websocket_client.hpp"

namespace airlock::server::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kApiKey = "sk-live-7d3f0a9b2c4e6f8a1b3c5d7e9f0a2b4c";

constexpr const char* kTemplates = R"(
sessionTemplates:
  - name: creds
    limits: {idleTimeout: 1h, maxLifetime: 2h}
    credentials:
      - {env: API_KEY, secret: api-key}
      - env: REPORTS_TOKEN
        token: {audience: "https://reports.internal", scopes: ["reports:read"], ttl: 10m}
  - name: idle
    limits: {idleTimeout: 2s, maxLifetime: 1h}
    credentials:
      - env: REPORTS_TOKEN
        token: {audience: "https://reports.internal", ttl: 10m}
  - name: rotating
    credentials:
      - env: REPORTS_TOKEN
        token: {audience: "https://reports.internal", ttl: 4s}
  - name: half-made
    credentials:
      - {env: API_KEY, secret: api-key}
      - {env: NOPE, secret: never-set}
)";

// Prints the credential raw, in each encoding redaction knows, inside text, on stderr, and split
// across two writes half a second apart (so no chunk the daemon reads holds it whole).
constexpr const char* kLeaky = R"(import base64, os, sys, time
v = os.environ["API_KEY"]
print(v)
print(base64.b64encode(v.encode()).decode())
print(base64.urlsafe_b64encode(b"xy" + v.encode()).decode())
print(v.encode().hex())
print(v.encode().hex().upper())
print("the key is", v, "ok")
sys.stderr.write(v + "\n")
sys.stdout.flush()
sys.stdout.write(v[:20]); sys.stdout.flush(); time.sleep(0.5)
sys.stdout.write(v[20:] + "\n")
)";

// The exec prints its token reversed: a form no redaction knows (docs/credentials.md says so),
// which is how a test learns the value a session holds.
constexpr const char* kReversedToken = R"(import os; print(os.environ["REPORTS_TOKEN"][::-1]))";

std::string reversed(std::string s) { return {s.rbegin(), s.rend()}; }

std::string base64(const std::string& in) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += table[(v >> k) & 63];
  }
  return out;  // the whole groups are enough to look for
}

std::string hex(const std::string& in) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : in) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// A JWT's `jti` (its payload decoded from base64url).
std::string jti_of(const std::string& jwt) {
  const auto a = jwt.find('.'), b = jwt.find('.', a + 1);
  if (a == std::string::npos || b == std::string::npos) return "";
  std::string payload;
  unsigned bits = 0, acc = 0;
  for (char c : jwt.substr(a + 1, b - a - 1)) {
    const auto at = std::string_view("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_").find(c);
    if (at == std::string_view::npos) break;
    acc = (acc << 6) | static_cast<unsigned>(at);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      payload += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  auto claims = json::parse(payload, nullptr, false);
  return claims.is_object() ? claims.value("jti", "") : "";
}

// `value` in none of the forms a careless exec would print it in.
void expect_nowhere(const std::string& text, const std::string& value, const std::string& where) {
  EXPECT_EQ(text.find(value), std::string::npos) << where << " holds the value";
  EXPECT_EQ(text.find(base64(value)), std::string::npos) << where << " holds its base64";
  EXPECT_EQ(text.find(hex(value)), std::string::npos) << where << " holds its hex";
}

class SessionCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = std::make_unique<Workspace>("", std::string("\n") + kTemplates);
    auto store = creds::SecretStore::open(ws_->dir() + "/data");
    ASSERT_TRUE(store.ok()) << store.error().message;
    ASSERT_TRUE((*store)->set("api-key", kApiKey).ok());
  }
  void TearDown() override {
    daemon_.reset();
    ws_.reset();
  }
  void start() { daemon_ = std::make_unique<RunningDaemon>(*ws_); }
  std::uint16_t port() const { return daemon_->port; }

  Reply create(const std::string& tmpl) { return http(port(), "POST", "/v1/sessions", json{{"template", tmpl}}.dump()); }
  std::string created(const std::string& tmpl) {
    auto r = create(tmpl);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json().value("id", "");
  }
  json exec(const std::string& id, const json& body) {
    auto r = http_with(port(), "POST", "/v1/sessions/" + id + "/exec", body.dump(), kKey,
                       {{"accept", "application/json"}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  std::string token_of(const std::string& id) {
    auto r = exec(id, {{"command", json::array({"python3", "-c", kReversedToken})}});
    std::string out = r.value("stdout", "");
    while (!out.empty() && out.back() == '\n') out.pop_back();
    EXPECT_FALSE(out.empty()) << r.dump();
    return reversed(out);
  }
  json introspect(const std::string& token) {
    return http_with(port(), "POST", "/v1/token/introspect", "token=" + token, kKey,
                     {{"Content-Type", "application/x-www-form-urlencoded"}})
        .json();
  }
  std::vector<json> records(const std::string& schema) const {
    std::vector<json> out;
    auto reader = audit::LogReader::open(ws_->audit_path());
    if (!reader) return out;
    auto size = reader->size();
    for (std::uint64_t i = 0; size && i < *size; ++i)
      if (auto text = reader->record(i); text) {
        auto r = json::parse(*text, nullptr, false);
        if (r.is_object() && r.value("schema", "") == schema) out.push_back(r);
      }
    return out;
  }
  std::string audit_text() const {
    std::string all;
    for (const char* schema : {"airlock.session/v1", "airlock.invocation/v1"})
      for (const auto& r : records(schema)) all += r.dump() + "\n";
    return all;
  }
  // The session's first record of `event`, waiting for it up to 30 s.
  std::optional<json> wait_for_record(const std::string& id, const std::string& event) const {
    for (int i = 0; i < 300; ++i) {
      for (const auto& r : records("airlock.session/v1"))
        if (r["session_id"] == id && r["event"] == event) return r;
      std::this_thread::sleep_for(100ms);
    }
    return std::nullopt;
  }
  // The leases issued to the session, in order: its created record's, then each renewal's.
  std::vector<std::string> issued_leases(const std::string& id) const {
    std::vector<std::string> out;
    for (const auto& r : records("airlock.session/v1"))
      if (r["session_id"] == id)
        for (const auto& c : r.value("credentials", json::array())) out.push_back(c["lease_id"]);
    return out;
  }
  // Whether a record of the session says `lease` was revoked, waiting for one up to 30 s.
  bool wait_for_revocation(const std::string& id, const std::string& lease) const {
    for (int i = 0; i < 300; ++i) {
      for (const auto& r : records("airlock.session/v1"))
        if (r["session_id"] == id)
          for (const auto& l : r.value("credentials_revoked", json::array()))
            if (l["lease_id"] == lease && l["state"] == "revoked") return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  std::vector<creds::Lease> leases_of(const std::string& id) const {
    auto store = creds::LeaseStore::open(ws_->dir() + "/data/state.db");
    if (!store) return {};
    auto leases = (*store)->of_invocation(id);
    return leases ? *leases : std::vector<creds::Lease>{};
  }
  void expect_all_revoked(const std::string& id, std::size_t count) const {
    const auto leases = leases_of(id);
    EXPECT_EQ(leases.size(), count);
    for (const auto& l : leases) EXPECT_EQ(l.state, creds::Lease::State::revoked) << l.env << " " << l.id;
  }

  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
};

TEST_F(SessionCredentialsTest, AnExecHasItsCredentialsAndNoOutputShowsThem) {
  start();
  const std::string id = created("creds");
  ASSERT_FALSE(id.empty());
  // It has them, as its variables, over a variable of the same name in the request.
  auto held = exec(id, {{"command", "printf %s \"$API_KEY\" | sha256sum | cut -c1-64"}, {"env", {{"API_KEY", "mine"}}}});
  EXPECT_EQ(held["stdout"], sha256_hex(kApiKey) + "\n") << held.dump();
  const std::string token = token_of(id);
  auto live = introspect(token);
  EXPECT_EQ(live["active"], true) << live.dump();
  EXPECT_EQ(live["aud"], "https://reports.internal");
  EXPECT_EQ(live["scope"], "reports:read");
  EXPECT_EQ(live["sub"], "agent");

  auto leaked = exec(id, {{"command", json::array({"python3", "-c", kLeaky})}});
  const std::string out = leaked.value("stdout", ""), err = leaked.value("stderr", "");
  expect_nowhere(out, kApiKey, "stdout");
  expect_nowhere(err, kApiKey, "stderr");
  EXPECT_EQ(out.find(std::string(kApiKey).substr(0, 20)), std::string::npos) << out;  // the split write's half
  EXPECT_NE(out.find("the key is [REDACTED:CREDENTIAL] ok"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("\n[REDACTED:CREDENTIAL]\n")) << out;  // the two halves, found as one
  EXPECT_EQ(err, "[REDACTED:CREDENTIAL]\n");
  std::set<std::string> where;
  for (const auto& r : leaked["redactions"])
    if (r["detector"] == "credential") where.insert(r["where"]);
  EXPECT_EQ(where, (std::set<std::string>{"stdout", "stderr"})) << leaked["redactions"].dump();
  // The token is kept out the same way.
  auto printed = exec(id, {{"command", "printenv REPORTS_TOKEN; printenv REPORTS_TOKEN | base64 -w0"}});
  expect_nowhere(printed.value("stdout", ""), token, "stdout");
}

TEST_F(SessionCredentialsTest, NoDownloadedFileNorFileNameShowsThem) {
  start();
  const std::string id = created("creds");
  ASSERT_FALSE(id.empty());
  // A small file (answered whole), its base64, a large one with the key across a 64 KiB read
  // (streamed), and a file named by the key.
  auto wrote = exec(id, {{"command",
                          "printenv API_KEY > key.txt && printenv API_KEY | base64 -w0 > key.b64 && "
                          "python3 -c 'import os; k = os.environ[\"API_KEY\"]; "
                          "open(\"big\", \"w\").write(\"a\" * 65526 + k + \"b\" * 2000000)' && "
                          "touch \"$API_KEY\""}});
  ASSERT_EQ(wrote["verdict"], "ok") << wrote.dump();
  for (const char* file : {"key.txt", "key.b64", "big"}) {
    auto got = http(port(), "GET", std::string("/v1/sessions/") + id + "/files/" + file);
    ASSERT_EQ(got.status, 200) << file;
    expect_nowhere(got.body, kApiKey, file);
    EXPECT_NE(got.body.find("[REDACTED:CREDENTIAL]"), std::string::npos) << file;
  }
  auto listing = http(port(), "GET", "/v1/sessions/" + id + "/files/");
  ASSERT_EQ(listing.status, 200) << listing.body;
  expect_nowhere(listing.body, kApiKey, "the listing");
  EXPECT_NE(listing.body.find("[REDACTED:CREDENTIAL]"), std::string::npos) << listing.body;
  bool credential_redaction = false;
  for (const auto& r : records("airlock.session/v1"))
    if (r["event"] == "file_read" && r["file"]["path"] == "key.txt")
      credential_redaction = r["file"]["redactions"].dump().find("credential") != std::string::npos;
  EXPECT_TRUE(credential_redaction);
}

std::string percent_encoded(const std::string& text) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

TEST_F(SessionCredentialsTest, ATerminalHasThemAndNeverShowsThem) {
  start();
  const std::string id = created("creds");
  ASSERT_FALSE(id.empty());
  const std::string line = "printenv API_KEY; printenv API_KEY | base64 -w0; echo; "
                           "printf %s \"$API_KEY\" | sha256sum | cut -c1-64; echo DONE-$((40+2))";
  int status = 0;
  std::string body;
  auto terminal = WebSocketClient::open(port(), "/v1/sessions/" + id + "/terminal?command=" + percent_encoded(line),
                                        {{"authorization", std::string("Bearer ") + kKey}}, &status, &body);
  ASSERT_TRUE(terminal) << status << " " << body;
  const std::string shown = terminal->read_until("DONE-42", 20s);
  ASSERT_NE(shown.find("DONE-42"), std::string::npos) << shown;
  EXPECT_NE(shown.find(sha256_hex(kApiKey)), std::string::npos) << "the shell did not have the credential";
  expect_nowhere(shown, kApiKey, "the terminal");
  EXPECT_NE(shown.find("[REDACTED:CREDENTIAL]"), std::string::npos) << shown;
  EXPECT_TRUE(terminal->read_to_close(20s));
  bool listed = false;
  for (const auto& m : terminal->texts())
    if (m.value("type", "") == "exit") listed = m["redactions"].dump().find("credential") != std::string::npos;
  EXPECT_TRUE(listed);
}

TEST_F(SessionCredentialsTest, TheAuditLogListsTheLeasesAndNeverAValue) {
  start();
  const std::string id = created("creds");
  ASSERT_FALSE(id.empty());
  const std::string token = token_of(id);
  exec(id, {{"command", json::array({"python3", "-c", kLeaky})}});
  const std::string printed = exec(id, {{"command", "printenv API_KEY"}})["invocation_id"];
  ASSERT_EQ(http(port(), "DELETE", "/v1/sessions/" + id).status, 200);

  auto made = wait_for_record(id, "created");
  ASSERT_TRUE(made);
  ASSERT_EQ((*made)["credentials"].size(), 2u) << made->dump();
  std::set<std::string> issued;
  for (const auto& c : (*made)["credentials"]) {
    EXPECT_EQ(c["lease_id"].get<std::string>().size(), 32u);
    EXPECT_EQ(c["hmac_sha256"].get<std::string>().size(), 64u);
    issued.insert(c["lease_id"]);
  }
  EXPECT_EQ((*made)["credentials"][0]["name"], "API_KEY");
  EXPECT_EQ((*made)["credentials"][0]["provider"], "secret");
  EXPECT_EQ((*made)["credentials"][1]["provider"], "token");
  // Each exec's record names the leases it was given.
  for (const auto& r : records("airlock.invocation/v1")) {
    if (r.value("session", "") != id) continue;
    EXPECT_EQ(r["credentials"].size(), 2u) << r.dump();
  }
  auto ended = wait_for_record(id, "ended");
  ASSERT_TRUE(ended);
  std::set<std::string> revoked;
  for (const auto& l : (*ended)["credentials_revoked"]) {
    EXPECT_EQ(l["state"], "revoked") << l.dump();
    revoked.insert(l["lease_id"]);
  }
  EXPECT_EQ(revoked, issued);
  // The output's digest is of what was sent: a digest of the value alone would let a reader of
  // the log test guesses of it.
  for (const auto& r : records("airlock.invocation/v1")) {
    if (r["invocation_id"] != printed) continue;
    EXPECT_NE(r["output"]["sha256"], sha256_hex(std::string(kApiKey) + "\n"));
    EXPECT_EQ(r["output"]["sha256"], sha256_hex("[REDACTED:CREDENTIAL]\n"));
  }
  const std::string log = audit_text();
  expect_nowhere(log, kApiKey, "the audit log");
  expect_nowhere(log, token, "the audit log");
}

TEST_F(SessionCredentialsTest, DeleteAndIdleTimeoutRevokeTheLeases) {
  start();
  const std::string deleted = created("creds");
  const std::string idle = created("idle");
  ASSERT_FALSE(deleted.empty());
  ASSERT_FALSE(idle.empty());
  const std::string deleted_token = token_of(deleted), idle_token = token_of(idle);
  ASSERT_EQ(introspect(deleted_token)["active"], true);
  ASSERT_EQ(introspect(idle_token)["active"], true);

  ASSERT_EQ(http(port(), "DELETE", "/v1/sessions/" + deleted).status, 200);
  EXPECT_EQ(introspect(deleted_token), json({{"active", false}}));  // its exp is minutes away
  expect_all_revoked(deleted, 2);

  auto ended = wait_for_record(idle, "ended");
  ASSERT_TRUE(ended) << "the idle session never ended";
  EXPECT_EQ((*ended)["reason"], "idle_timeout");
  EXPECT_EQ(introspect(idle_token), json({{"active", false}}));
  expect_all_revoked(idle, 1);
}

TEST_F(SessionCredentialsTest, RenewalGivesLaterExecsAFreshValueAndEndsTheOldAtItsExpiry) {
  start();
  const std::string id = created("rotating");
  ASSERT_FALSE(id.empty());
  const std::string first = token_of(id);
  const std::string first_lease = jti_of(first);  // a token's jti is its lease's id
  ASSERT_EQ(first_lease.size(), 32u);
  // Its 4 s lease is renewed: a lease issued after the one the first exec got.
  std::string later;
  for (int i = 0; i < 300 && later.empty(); ++i) {
    const auto issued = issued_leases(id);
    const auto at = std::find(issued.begin(), issued.end(), first_lease);
    if (at != issued.end() && at + 1 != issued.end()) later = *(at + 1);
    else std::this_thread::sleep_for(100ms);
  }
  ASSERT_FALSE(later.empty()) << "the session's credential was never renewed";
  const std::string second = token_of(id);
  EXPECT_NE(second, first);
  EXPECT_NE(jti_of(second), first_lease);
  // The first is revoked at its own expiry: recorded, in the lease store, and dead to its provider.
  ASSERT_TRUE(wait_for_revocation(id, first_lease)) << "the replaced lease was never revoked";
  EXPECT_EQ(introspect(first), json({{"active", false}}));
  bool first_revoked = false;
  for (const auto& l : leases_of(id))
    if (l.id == first_lease) first_revoked = l.state == creds::Lease::State::revoked;
  EXPECT_TRUE(first_revoked);
}

TEST_F(SessionCredentialsTest, ALeaseThatCannotBeMadeFailsTheCreationAndLeavesNothing) {
  start();
  auto r = create("half-made");
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.json()["error"]["kind"], "credential_unavailable");
  const std::string message = r.json()["error"]["message"];
  EXPECT_NE(message.find("NOPE"), std::string::npos) << message;
  EXPECT_NE(message.find("never-set"), std::string::npos) << message;
  EXPECT_EQ(http(port(), "GET", "/v1/sessions").json()["sessions"], json::array());
  EXPECT_TRUE(records("airlock.session/v1").empty());
  // API_KEY was leased first: revoked when NOPE failed.
  auto store = creds::LeaseStore::open(ws_->dir() + "/data/state.db");
  ASSERT_TRUE(store.ok());
  auto outstanding = (*store)->outstanding();
  ASSERT_TRUE(outstanding.ok());
  EXPECT_TRUE(outstanding->empty()) << outstanding->size() << " lease(s) left";
}

// --- The class alone, with a provider that fails on demand and a clock the test moves -----

class FakeProvider : public creds::Provider {
 public:
  FakeProvider(std::string kind, std::chrono::seconds lifetime) : ttl(lifetime), kind_(std::move(kind)) {}
  std::string_view kind() const override { return kind_; }
  Result<json> target(const policy::CredentialSpec&, const creds::Lease&) const override { return json::object(); }
  Result<creds::Issued> issue(const policy::CredentialSpec&, const creds::Lease& lease,
                              const creds::LeaseContext& context) override {
    std::lock_guard lock(mu_);
    if (failing) return Error::make("credential_unavailable", "the upstream is down");
    return creds::Issued{kind_ + "-value-" + lease.id, {}, context.now + ttl};
  }
  Status revoke(const creds::Lease& lease, const std::string*) override {
    std::lock_guard lock(mu_);
    revoked.insert(lease.id);
    return {};
  }
  std::chrono::seconds ttl;  // of what it issues next
  bool failing = false;
  std::set<std::string> revoked;

 private:
  std::mutex mu_;
  std::string kind_;
};

class SessionCredentialsUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("airlock-session-creds-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    auto store = creds::LeaseStore::open((dir_ / "state.db").string());
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(*store);
    broker_ = std::make_shared<creds::Broker>(*store_, creds::Providers{{"token", token_}, {"secret", secret_}});
  }
  void TearDown() override {
    broker_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }
  std::unique_ptr<SessionCredentials> lease(bool with_secret = false) {
    SessionCredentials::Setup setup;
    setup.broker = broker_;
    setup.specs.push_back({"TOKEN", policy::TokenCredential{"https://x.example", {}, 10s}, std::nullopt, "t.yaml:1"});
    if (with_secret) setup.specs.push_back({"KEY", policy::SecretCredential{"key"}, std::nullopt, "t.yaml:2"});
    setup.context.invocation_id = "session-1";
    setup.context.tool = "session/test";
    auto leased = SessionCredentials::lease(std::move(setup));
    EXPECT_TRUE(leased.ok()) << (leased.ok() ? "" : leased.error().message);
    return leased.ok() ? std::move(*leased) : nullptr;
  }
  // Whether the session's redaction takes `value` out of a text.
  static bool redacted(const SessionCredentials& c, const std::string& value) {
    const auto r = c.redaction();
    if (!r.literals) return false;
    std::string text = "before " + value + " after";
    return dlp::redact_credential_text(text, *r.scanner, {r.literals.get(), dlp::JsonMode::off}) &&
           text.find(value) == std::string::npos;
  }
  SessionCredentials::Maintenance maintain(SessionCredentials& c, std::chrono::seconds later) {
    SessionCredentials::Maintenance seen;
    c.maintain(SessionCredentials::Clock::now() + later, [&](const auto& m) { seen = m; });
    return seen;
  }

  fs::path dir_;
  std::unique_ptr<creds::LeaseStore> store_;
  std::shared_ptr<FakeProvider> token_ = std::make_shared<FakeProvider>("token", 10s);
  std::shared_ptr<FakeProvider> secret_ = std::make_shared<FakeProvider>("secret", 3600s);
  std::shared_ptr<creds::Broker> broker_;
};

TEST_F(SessionCredentialsUnit, ARenewalReplacesTheValueAndTheReplacedOneEndsAtItsExpiry) {
  auto c = lease();
  ASSERT_TRUE(c);
  const std::string first = c->for_exec().env.at("TOKEN");
  EXPECT_TRUE(maintain(*c, 1s).empty());  // two thirds of its 10 s are not over
  token_->ttl = 100s;  // the next is not due again within this test's leaps of the clock
  auto renewed = maintain(*c, 7s);
  ASSERT_EQ(renewed.issued.size(), 1u);
  EXPECT_TRUE(renewed.revoked.empty());
  const std::string second = c->for_exec().env.at("TOKEN");
  EXPECT_NE(second, first);
  EXPECT_TRUE(redacted(*c, first)) << "an exec started before the renewal may still print it";
  EXPECT_TRUE(redacted(*c, second));
  EXPECT_TRUE(token_->revoked.empty());
  auto expired = maintain(*c, 11s);  // the first lease's expiry
  ASSERT_EQ(expired.revoked.size(), 1u);
  EXPECT_EQ(expired.revoked[0].state, "revoked");
  EXPECT_EQ(token_->revoked.size(), 1u);
  EXPECT_FALSE(redacted(*c, first)) << "a revoked token stays in the literals";
  EXPECT_TRUE(redacted(*c, second));
  auto ended = c->revoke_all();
  EXPECT_EQ(ended.size(), 1u);
  EXPECT_EQ(token_->revoked.size(), 2u);
  EXPECT_TRUE(c->for_exec().env.empty());
  auto left = store_->outstanding();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

TEST_F(SessionCredentialsUnit, ARenewalThatFailsEndsEveryLeaseAndGivesNoMore) {
  auto c = lease(/*with_secret=*/true);
  ASSERT_TRUE(c);
  const auto before = c->for_exec().env;
  ASSERT_EQ(before.size(), 2u);
  token_->failing = true;
  auto failed = maintain(*c, 7s);
  ASSERT_TRUE(failed.failed);
  EXPECT_EQ(failed.failed->code, "credential_unavailable");
  EXPECT_NE(failed.failed->message.find("TOKEN"), std::string::npos) << failed.failed->message;
  EXPECT_EQ(failed.revoked.size(), 2u);  // the token and the secret, at once
  EXPECT_TRUE(c->for_exec().env.empty());
  EXPECT_FALSE(c->next_due());
  EXPECT_TRUE(maintain(*c, 3600s).empty());  // never again
  // A revoked token is dead; a secret's value outlives its lease, so it stays redacted.
  EXPECT_FALSE(redacted(*c, before.at("TOKEN")));
  EXPECT_TRUE(redacted(*c, before.at("KEY")));
  auto left = store_->outstanding();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

TEST_F(SessionCredentialsUnit, ALeaseThatFailsLeavesNothingOutstanding) {
  secret_->failing = true;
  SessionCredentials::Setup setup;
  setup.broker = broker_;
  setup.specs.push_back({"TOKEN", policy::TokenCredential{"https://x.example", {}, 10s}, std::nullopt, "t.yaml:1"});
  setup.specs.push_back({"KEY", policy::SecretCredential{"key"}, std::nullopt, "t.yaml:2"});
  setup.context.invocation_id = "session-2";
  auto leased = SessionCredentials::lease(std::move(setup));
  ASSERT_FALSE(leased.ok());
  EXPECT_EQ(leased.error().code, "credential_unavailable");
  EXPECT_NE(leased.error().message.find("KEY"), std::string::npos) << leased.error().message;
  EXPECT_EQ(token_->revoked.size(), 1u);  // the one made before
  auto left = store_->outstanding();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

// --- A daemon SIGKILLed while an exec of a session with credentials runs -----------------

std::vector<pid_t> pids_with(const std::string& needle) {
  std::vector<pid_t> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int fd = ::open((e.path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string cmd;
    char buffer[4096];
    for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) > 0;) cmd.append(buffer, static_cast<std::size_t>(got));
    ::close(fd);
    if (cmd.find(needle) != std::string::npos) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

int processes_with(const std::string& needle) { return static_cast<int>(pids_with(needle).size()); }

std::string mount_namespace(const std::string& pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + pid + "/ns/mnt", ec).string();
}

// The processes whose mount namespace is `ns`: what keeps a sandbox's mounts alive.
int processes_in(const std::string& ns) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") == std::string::npos && mount_namespace(name) == ns) ++n;
  }
  return n;
}

// The sandbox cgroups a daemon process made ("airlock-<pid>-<n>").
std::set<std::string> cgroups_of(pid_t owner) {
  const std::string prefix = "airlock-" + std::to_string(owner) + "-";
  std::set<std::string> out;
  const auto& cg = sandbox::cgroup_support();
  for (const std::string& base : {cg.v2_base, cg.v1_memory, cg.v1_pids, cg.v1_cpuacct, cg.v1_cpu, cg.v1_freezer}) {
    if (base.empty()) continue;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(base, ec))
      if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) out.insert(e.path().string());
  }
  return out;
}

pid_t serve(const Workspace& ws, std::uint16_t port, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 2);
    const std::string listen = "127.0.0.1:" + std::to_string(port);
    ::execl(AIRLOCK_BINARY, "airlock", "serve", "--config", ws.config_path().c_str(), "--listen", listen.c_str(),
            nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 300 && http(port, "GET", "/healthz", "", "").status != 200; ++i) std::this_thread::sleep_for(20ms);
  return pid;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SessionCredentialsRestart, ASigkillMidExecLeavesNothingAndTheNextStartRevokesTheLeases) {
  Workspace ws("", std::string("\n") + kTemplates);
  {
    auto store = creds::SecretStore::open(ws.dir() + "/data");
    ASSERT_TRUE(store.ok()) << store.error().message;
    ASSERT_TRUE((*store)->set("api-key", kApiKey).ok());
  }
  const std::uint16_t port = free_port(25000);
  const std::string log = ws.dir() + "/daemon.log";
  const pid_t daemon = serve(ws, port, log);
  auto made = http(port, "POST", "/v1/sessions", R"({"template": "creds"})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string id = made.json()["id"];
  auto reversed_token = http_with(port, "POST", "/v1/sessions/" + id + "/exec",
                                  json{{"command", json::array({"python3", "-c", kReversedToken})}}.dump(), kKey,
                                  {{"accept", "application/json"}});
  std::string out = reversed_token.json().value("stdout", "");
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const std::string token = reversed(out);
  auto asked = http_with(port, "POST", "/v1/token/introspect", "token=" + token, kKey,
                         {{"Content-Type", "application/x-www-form-urlencoded"}});
  ASSERT_EQ(asked.json()["active"], true) << asked.body;
  // An exec that holds the credentials, running when the daemon dies.
  auto running = std::async(std::launch::async, [&] {
    return http(port, "POST", "/v1/sessions/" + id + "/exec", R"({"command": ["/bin/sleep", "61.75"]})");
  });
  for (int i = 0; i < 300 && processes_with("61.75") == 0; ++i) std::this_thread::sleep_for(20ms);
  ASSERT_GT(processes_with("61.75"), 0) << "the exec never started";
  ASSERT_FALSE(cgroups_of(daemon).empty());
  // The session's mounts live in its own mount namespace, as long as a process is in it.
  const std::string mounts = mount_namespace(std::to_string(pids_with("61.75").front()));
  ASSERT_FALSE(mounts.empty());
  ASSERT_NE(mounts, mount_namespace("self"));

  ::kill(daemon, SIGKILL);
  ::waitpid(daemon, nullptr, 0);
  EXPECT_EQ(running.get().status, 0);
  for (int i = 0; i < 250 && processes_with("61.75") > 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(processes_with("61.75"), 0) << "a session's process outlived its daemon";
  for (int i = 0; i < 250 && processes_in(mounts) > 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(processes_in(mounts), 0) << "a process keeps the session's mounts";

  const pid_t second = serve(ws, port, log);
  ASSERT_EQ(http(port, "GET", "/healthz", "", "").status, 200);
  for (const auto& dir : cgroups_of(daemon)) ADD_FAILURE() << dir << " was left";
  // The provider's side: the token, minutes from its exp, is dead.
  auto after = http_with(port, "POST", "/v1/token/introspect", "token=" + token, kKey,
                         {{"Content-Type", "application/x-www-form-urlencoded"}});
  EXPECT_EQ(after.json(), json({{"active", false}})) << after.body;
  ::kill(second, SIGTERM);
  ::waitpid(second, nullptr, 0);

  auto store = creds::LeaseStore::open(ws.dir() + "/data/state.db");
  ASSERT_TRUE(store.ok());
  auto leases = (*store)->of_invocation(id);
  ASSERT_TRUE(leases.ok());
  EXPECT_EQ(leases->size(), 2u);
  for (const auto& l : *leases) EXPECT_EQ(l.state, creds::Lease::State::revoked) << l.env;
  const std::string text = file_text(log);
  EXPECT_NE(text.find("1 aborted session(s), revoked 2 credential lease(s)"), std::string::npos) << text;
  expect_nowhere(text, kApiKey, "the daemon's log");
  expect_nowhere(text, token, "the daemon's log");
  bool aborted = false;
  auto reader = audit::LogReader::open(ws.audit_path());
  ASSERT_TRUE(reader.ok());
  for (std::uint64_t i = 0; i < *reader->size(); ++i) {
    auto record = json::parse(*reader->record(i));
    aborted |= record["schema"] == "airlock.session/v1" && record["session_id"] == id && record["event"] == "ended" &&
               record["reason"] == "aborted";
  }
  EXPECT_TRUE(aborted);
}

}  // namespace
}  // namespace airlock::server::test
