// Issue #38, the console: its sessions behind several replicas (storage.postgres). A browser
// signed in on one replica was signed out whenever a round-robin Service sent it to another.
// Now the sessions are in the shared table console_sessions: any replica serves them, with the
// same CSRF token; a sign-out through one is refused by all at once; the table holds the SHA-256
// of the id and the credential and CSRF token sealed (a database reader gets neither); an
// expired session is refused everywhere; a database away refuses, never signs in.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/digest.hpp"
#include "creds/sealing_key.hpp"
#include "identity/signer.hpp"
#include "replica_process.hpp"
#include "server/console/console_oidc.hpp"
#include "server/console/console_oidc_logins.hpp"
#include "server/console/console_session_store.hpp"

namespace airlock::replicas_test {
namespace {

using nlohmann::json;
using server::test::http_with;
using server::test::kKey;
using server::test::kOtherKey;
using server::test::Reply;

// A browser's same-origin request: Origin and Sec-Fetch-Site as Chromium sends them.
std::map<std::string, std::string> browser(const std::string& cookie, const std::string& csrf = "") {
  std::map<std::string, std::string> h = {{"Origin", "http://127.0.0.1"}, {"Sec-Fetch-Site", "same-origin"}};
  if (!cookie.empty()) h["Cookie"] = "airlock_console=" + cookie;
  if (!csrf.empty()) h["X-Airlock-CSRF"] = csrf;
  return h;
}

struct SignedIn {
  std::string cookie, csrf;
};

SignedIn sign_in(std::uint16_t port, const std::string& key = kKey) {
  auto r = http_with(port, "POST", "/console/session", json{{"credential", key}}.dump(), "", browser(""));
  EXPECT_EQ(r.status, 200) << r.body;
  const std::string set = r.headers["set-cookie"];
  const auto eq = set.find('='), semi = set.find(';');
  if (eq == std::string::npos || semi == std::string::npos) return {};
  return {set.substr(eq + 1, semi - eq - 1), r.json().value("csrf", "")};
}

Reply session_info(std::uint16_t port, const SignedIn& s) {
  return http_with(port, "GET", "/console/session", "", "", browser(s.cookie));
}

class ConsoleReplicas : public ::testing::Test {
 protected:
  // Both replicas seal with one key file, as deploy/kubernetes-postgres gives them (one Secret);
  // `b_key` another one for B.
  void start(const std::string& b_key = "") {
    for (auto* ws : {&a_ws_, &b_ws_}) {
      *ws = std::make_unique<Workspace>();
      to_postgres(**ws, db_.url, db_.key_file);
    }
    ::setenv("AIRLOCK_SECRETS_KEY_FILE", (db_.key_dir + "/secrets.key").c_str(), 1);
    a_.emplace(*a_ws_, 48000);
    if (!b_key.empty()) ::setenv("AIRLOCK_SECRETS_KEY_FILE", b_key.c_str(), 1);
    b_.emplace(*b_ws_, 49000);
    ::unsetenv("AIRLOCK_SECRETS_KEY_FILE");
    ASSERT_TRUE(a_->serving()) << a_->log();
    ASSERT_TRUE(b_->serving()) << b_->log();
  }
  std::size_t rows() const { return db_.count("SELECT count(*) FROM console_sessions"); }
  void sql(const std::string& statement) const {
    auto done = cluster().exec(statement, db_.database);
    ASSERT_TRUE(done.ok()) << done.error().message;
  }

  Shared db_;
  std::unique_ptr<Workspace> a_ws_, b_ws_;
  std::optional<Replica> a_, b_;
};

TEST_F(ConsoleReplicas, SignedInOnAServedByBWithItsCsrfTokenAndSignedOutThroughBForAll) {
  start();
  const auto s = sign_in(a_->port);
  ASSERT_FALSE(s.cookie.empty());
  EXPECT_EQ(rows(), 1u);

  auto info = session_info(b_->port, s);
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(info.json()["principal"], "agent");
  EXPECT_EQ(info.json()["csrf"], s.csrf) << "one session, one token, whichever replica answers";
  EXPECT_EQ(http_with(b_->port, "GET", "/console/api/invocations", "", "", browser(s.cookie)).status, 200);

  // A state change through B: refused without the token, through with it (the approval
  // service's own 404: there is no such approval).
  const std::string target = "/console/api/approvals/apr-x/approve", body = json{{"reason", "r"}}.dump();
  auto forged = http_with(b_->port, "POST", target, body, "", browser(s.cookie));
  EXPECT_EQ(forged.status, 403) << forged.body;
  EXPECT_EQ(forged.json()["error"]["kind"], "csrf");
  auto wrong = http_with(b_->port, "POST", target, body, "", browser(s.cookie, std::string(64, 'a')));
  EXPECT_EQ(wrong.status, 403) << wrong.body;
  auto through = http_with(b_->port, "POST", target, body, "", browser(s.cookie, s.csrf));
  EXPECT_EQ(through.status, 404) << through.body;
  EXPECT_NE(through.body.find("no approval apr-x"), std::string::npos) << through.body;

  // Sign-out through B: a forged one is refused; the real one ends it on A as well.
  EXPECT_EQ(http_with(b_->port, "DELETE", "/console/session", "{}", "", browser(s.cookie)).status, 403);
  EXPECT_EQ(session_info(a_->port, s).status, 200);
  auto out = http_with(b_->port, "DELETE", "/console/session", "{}", "", browser(s.cookie, s.csrf));
  EXPECT_EQ(out.status, 200) << out.body;
  EXPECT_EQ(session_info(a_->port, s).status, 401) << "a copied cookie is worthless on every replica";
  EXPECT_EQ(http_with(a_->port, "GET", "/console/api/invocations", "", "", browser(s.cookie)).status, 401);
  EXPECT_EQ(session_info(b_->port, s).status, 401);
  EXPECT_EQ(rows(), 0u);
}

TEST_F(ConsoleReplicas, TheTableHoldsNeitherTheIdNorTheCredentialNorTheCsrfToken) {
  start();
  const auto s = sign_in(a_->port);
  ASSERT_FALSE(s.cookie.empty());
  const auto whole = db_.column("SELECT t::text FROM console_sessions t");
  ASSERT_EQ(whole.size(), 1u);
  for (const std::string& secret : {s.cookie, s.csrf, std::string(kKey)})
    EXPECT_EQ(whole[0].find(secret), std::string::npos) << "in plain in the table: " << secret;
  EXPECT_EQ(db_.count("SELECT count(*) FROM console_sessions WHERE id_sha256 = '" + sha256_hex(s.cookie) + "'"), 1u)
      << "kept under the SHA-256 of the id";
}

// A database writer moves the sealed credential of one session into another's row (the other
// user's session would then act as the first): it does not open there, and nobody is signed in.
TEST_F(ConsoleReplicas, ASealedValueCopiedIntoAnotherRowDoesNotOpen) {
  start();
  const auto agent = sign_in(a_->port, kKey), other = sign_in(a_->port, kOtherKey);
  ASSERT_FALSE(agent.cookie.empty());
  ASSERT_FALSE(other.cookie.empty());
  ASSERT_EQ(session_info(b_->port, other).json()["principal"], "other");
  sql("UPDATE console_sessions SET credential_sealed = (SELECT credential_sealed FROM console_sessions WHERE "
      "id_sha256 = '" + sha256_hex(agent.cookie) + "'), csrf_sealed = (SELECT csrf_sealed FROM console_sessions "
      "WHERE id_sha256 = '" + sha256_hex(agent.cookie) + "') WHERE id_sha256 = '" + sha256_hex(other.cookie) + "'");
  for (auto port : {a_->port, b_->port}) {
    auto r = session_info(port, other);
    EXPECT_EQ(r.status, 500) << r.body;
    EXPECT_EQ(r.body.find("\"agent\""), std::string::npos) << r.body;
    EXPECT_EQ(r.json()["error"]["kind"], "sealed_corrupt") << r.body;
    EXPECT_EQ(http_with(port, "GET", "/console/api/invocations", "", "", browser(other.cookie)).status, 500);
  }
  EXPECT_EQ(session_info(b_->port, agent).status, 200) << "the row it came from still opens";
}

// A replica sealing with another key cannot open the others' sessions, and says why.
TEST_F(ConsoleReplicas, AReplicaWithAnotherKeyRefusesAndSaysWhy) {
  start(db_.key_dir + "/another-secrets.key");
  const auto s = sign_in(a_->port);
  ASSERT_FALSE(s.cookie.empty());
  auto r = session_info(b_->port, s);
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_EQ(r.json()["error"]["kind"], "sealed_other_key") << r.body;
  EXPECT_NE(r.body.find("not this one"), std::string::npos) << r.body;
  EXPECT_EQ(session_info(a_->port, s).status, 200);
}

// Idle (15 minutes) and absolute (8 hours) timeouts, by the rows' times: aged in the table,
// the session is refused by both replicas and its row deleted.
TEST_F(ConsoleReplicas, AnExpiredSessionIsRefusedOnBothAndItsRowDeleted) {
  start();
  const auto idle = sign_in(a_->port);
  ASSERT_EQ(session_info(b_->port, idle).status, 200);
  sql("UPDATE console_sessions SET used_ms = used_ms - 15 * 60 * 1000 - 1000, created_ms = created_ms - 15 * 60 * "
      "1000 - 1000 WHERE id_sha256 = '" + sha256_hex(idle.cookie) + "'");
  EXPECT_EQ(session_info(b_->port, idle).status, 401);
  EXPECT_EQ(session_info(a_->port, idle).status, 401);
  EXPECT_EQ(rows(), 0u);

  const auto old = sign_in(b_->port);
  sql("UPDATE console_sessions SET created_ms = created_ms - 8 * 3600 * 1000 - 1000");
  EXPECT_EQ(http_with(a_->port, "GET", "/console/api/invocations", "", "", browser(old.cookie)).status, 401)
      << "used just now, but signed in more than 8 hours ago";
  EXPECT_EQ(session_info(b_->port, old).status, 401);
  EXPECT_EQ(rows(), 0u);

  // Used within the idle time: still there, on both.
  const auto used = sign_in(a_->port);
  sql("UPDATE console_sessions SET used_ms = used_ms - 14 * 60 * 1000, created_ms = created_ms - 14 * 60 * 1000");
  EXPECT_EQ(session_info(b_->port, used).status, 200);
  EXPECT_EQ(session_info(a_->port, used).status, 200);
}

// The database away: no request is taken as signed in, and the refusal says what failed.
TEST_F(ConsoleReplicas, TheDatabaseAwayRefusesAndSaysWhy) {
  start();
  const auto s = sign_in(a_->port);
  ASSERT_FALSE(s.cookie.empty());
  cluster().stop_server();
  auto info = session_info(b_->port, s);
  auto api = http_with(a_->port, "GET", "/console/api/invocations", "", "", browser(s.cookie));
  auto again = http_with(a_->port, "POST", "/console/session", json{{"credential", kKey}}.dump(), "", browser(""));
  ASSERT_TRUE(cluster().restart_server());
  EXPECT_EQ(info.status, 503) << info.body;
  EXPECT_NE(info.body.find("console's sessions"), std::string::npos) << info.body;
  EXPECT_EQ(api.status, 503) << api.body;
  EXPECT_EQ(again.status, 503) << again.body;
  EXPECT_EQ(again.headers.count("set-cookie"), 0u);
}

// ---- the stores themselves, on a fake clock -------------------------------------------

std::shared_ptr<const creds::SealingKey> test_key(unsigned char fill) {
  std::array<unsigned char, creds::SealingKey::kKeySize> bytes{};
  bytes.fill(fill);
  return creds::SealingKey::from_bytes(bytes);
}

struct FakeWall {
  std::int64_t ms = 1'800'000'000'000;
  server::console::WallMs fn() {
    return [this] { return ms; };
  }
};

class ConsoleStoresPg : public ::testing::Test {
 protected:
  std::shared_ptr<server::console::SessionStore> sessions(server::console::SessionOptions options = {}) {
    auto opened = server::console::open_postgres_session_store({url_, ""}, key_, options, clock_.fn());
    EXPECT_TRUE(opened.ok()) << opened.error().message;
    return opened.ok() ? *opened : nullptr;
  }
  std::string database_ = fresh_database("console");
  std::string url_ = url_of(database_);
  std::shared_ptr<const creds::SealingKey> key_ = test_key(7);
  FakeWall clock_;
};

TEST_F(ConsoleStoresPg, IdleAndAbsoluteExpiryAsInMemory) {
  server::console::SessionOptions options;
  options.idle = std::chrono::seconds(60);
  options.absolute = std::chrono::seconds(300);
  auto store = sessions(options);
  ASSERT_TRUE(store);
  auto a = store->create("key");
  ASSERT_TRUE(a.ok()) << a.error().message;
  for (int i = 0; i < 4; ++i) {  // used every 50 s: alive until the absolute limit
    clock_.ms += 50'000;
    auto used = store->use(a->id);
    ASSERT_TRUE(used.ok()) << used.error().message;
    EXPECT_TRUE(*used) << i;
  }
  clock_.ms += 100'000;  // 300 s after sign-in
  EXPECT_FALSE(*store->use(a->id));
  auto b = store->create("key");
  clock_.ms += 60'000;  // idle for the whole idle time
  EXPECT_FALSE(*store->use(b->id));
  EXPECT_EQ(*store->size(), 0u) << "expired rows are deleted when used";
}

// A use within the touch interval (a tenth of a 60 s idle time: 6 s) is a read only; past it
// the row's last use is written, so the session lives on.
TEST_F(ConsoleStoresPg, AUseTouchesTheRowAtMostEveryFewSeconds) {
  server::console::SessionOptions options;
  options.idle = std::chrono::seconds(60);
  auto store = sessions(options);
  ASSERT_TRUE(store);
  auto a = store->create("key");
  ASSERT_TRUE(a.ok());
  auto used_ms = [&] {
    return cluster().column("SELECT used_ms FROM console_sessions", database_)->at(0);
  };
  const std::string created = used_ms();
  clock_.ms += 5'000;
  ASSERT_TRUE(*store->use(a->id));
  EXPECT_EQ(used_ms(), created) << "not written within 6 s";
  clock_.ms += 2'000;
  ASSERT_TRUE(*store->use(a->id));
  EXPECT_EQ(used_ms(), std::to_string(clock_.ms));
  clock_.ms += 59'000;  // 59 s after the touch: alive
  EXPECT_TRUE(*store->use(a->id));
}

TEST_F(ConsoleStoresPg, AFullTableEndsTheLeastRecentlyUsedAcrossStores) {
  server::console::SessionOptions options;
  options.max_sessions = 2;
  auto one = sessions(options), two = sessions(options);  // two replicas' stores, one table
  ASSERT_TRUE(one && two);
  auto a = one->create("a");
  clock_.ms += 20'000;
  auto b = two->create("b");
  clock_.ms += 20'000;
  ASSERT_TRUE(*two->use(a->id));  // a is now the more recently used
  auto c = one->create("c");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(*two->use(a->id));
  EXPECT_FALSE(*one->use(b->id));
  EXPECT_TRUE(*two->use(c->id));
  ASSERT_TRUE(one->remove(c->id));
  EXPECT_FALSE(*two->use(c->id));
  EXPECT_EQ(*one->size(), 1u);
}

// Sign-ins at once through two replicas never hold more than max_sessions: each creation makes
// room and records its row under a lock both take (without it, two that each counted one
// short of full both inserted).
TEST_F(ConsoleStoresPg, ConcurrentSignInsAcrossStoresNeverExceedTheBound) {
  server::console::SessionOptions options;
  options.max_sessions = 3;
  auto one = sessions(options), two = sessions(options);
  ASSERT_TRUE(one && two);
  std::atomic<int> failures{0}, over{0};
  std::vector<std::thread> signing_in;
  for (int t = 0; t < 8; ++t)
    signing_in.emplace_back([&, store = t % 2 ? one : two] {
      for (int i = 0; i < 15; ++i) {
        if (!store->create("c").ok()) ++failures;
        if (*store->size() > options.max_sessions) ++over;
      }
    });
  for (auto& t : signing_in) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(over.load(), 0) << "the table held more than max_sessions";
  EXPECT_LE(*one->size(), options.max_sessions);
}

TEST_F(ConsoleStoresPg, ASessionSealedWithAnotherKeyDoesNotOpen) {
  auto store = sessions();
  ASSERT_TRUE(store);
  auto a = store->create("key");
  ASSERT_TRUE(a.ok());
  auto other = server::console::open_postgres_session_store({url_, ""}, test_key(8), {}, clock_.fn());
  ASSERT_TRUE(other.ok());
  auto refused = (*other)->use(a->id);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "sealed_other_key");
  EXPECT_EQ((*store->use(a->id))->credential, "key");
}

TEST_F(ConsoleStoresPg, APendingLoginIsTakenOnceAndNotAfterTenMinutes) {
  auto opened = server::console::open_postgres_pending_logins({url_, ""}, key_, clock_.fn());
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  auto& logins = **opened;
  const server::console::PendingLogin login{"nonce", "verifier", "https://idp/token", "binding", "client", "https://x"};
  ASSERT_TRUE(logins.put("state-1", login));
  ASSERT_TRUE(logins.put("state-2", login));
  EXPECT_EQ(logins.take("state-1", "other-binding").error().code, "oidc_state");
  auto taken = logins.take("state-1", "binding");
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_EQ(taken->verifier, "verifier");
  EXPECT_EQ(taken->nonce, "nonce");
  EXPECT_NE(logins.take("state-1", "binding").error().message.find("used already"), std::string::npos);
  clock_.ms += 10 * 60'000;
  auto late = logins.take("state-2", "binding");
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.error().message.find("longer than 10 minutes"), std::string::npos);
  EXPECT_EQ(*logins.size(), 0u);
}

// ---- "Sign in with <issuer>" across replicas ------------------------------------------

// The value of `name` in the query string of `url` (or in a form body), "" when absent. The
// values this test reads (hex, base64url, "code-N") need no decoding.
std::string param_of(const std::string& url, const std::string& name) {
  const auto q = url.find('?');
  std::string rest = q == std::string::npos ? url : url.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string pair = rest.substr(0, amp);
    if (pair.rfind(name + "=", 0) == 0) return pair.substr(name.size() + 1);
    rest = amp == std::string::npos ? "" : rest.substr(amp + 1);
  }
  return "";
}

// An OpenID provider's stand-in on loopback: its discovery document and a token endpoint that
// gives, for a code the test "authorized" (as the provider's login page would), an ID token
// for bob with that login's nonce, only when the code verifier sent is the one whose S256
// challenge the authorization request carried (RFC 7636: what proves that the replica doing the
// exchange holds the login's verifier).
class OidcStandIn {
 public:
  explicit OidcStandIn(const std::string& key_file) : signer_(*identity::TokenSigner::load_or_create(key_file)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("the provider's stand-in cannot listen");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~OidcStandIn() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::string issuer() const { return "http://127.0.0.1:" + std::to_string(port_); }
  nlohmann::json jwks() const { return signer_.jwks(); }
  // The provider's login page said yes: `code` for the login whose authorization URL is `url`.
  void authorize(const std::string& code, const std::string& url) {
    std::lock_guard lock(mu_);
    codes_[code] = {param_of(url, "nonce"), param_of(url, "code_challenge")};
  }
  std::vector<std::string> verifiers() {
    std::lock_guard lock(mu_);
    return verifiers_;
  }

 private:
  void serve() {
    for (;;) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      const std::string request = read_request(c);
      const std::string body = request.substr(request.find("\r\n\r\n") + 4);
      const auto [status, answer] = request.rfind("GET /.well-known/openid-configuration", 0) == 0
                                        ? std::pair<int, std::string>{200, discovery().dump()}
                                        : token(body);
      const std::string reply = "HTTP/1.1 " + std::to_string(status) +
                                " X\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                                std::to_string(answer.size()) + "\r\n\r\n" + answer;
      (void)!::write(c, reply.data(), reply.size());
      ::close(c);
    }
  }
  static std::string read_request(int c) {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;) {
      text.append(buf, static_cast<std::size_t>(n));
      const auto end = text.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      const auto at = text.find("Content-Length: ");
      const std::size_t length = at == std::string::npos || at > end ? 0 : std::stoul(text.substr(at + 16));
      if (text.size() >= end + 4 + length) break;
    }
    return text.find("\r\n\r\n") == std::string::npos ? text + "\r\n\r\n" : text;
  }
  nlohmann::json discovery() const {
    return {{"issuer", issuer()},
            {"authorization_endpoint", issuer() + "/authorize"},
            {"token_endpoint", issuer() + "/token"},
            {"code_challenge_methods_supported", {"S256"}}};
  }
  std::pair<int, std::string> token(const std::string& form) {
    std::lock_guard lock(mu_);
    const std::string verifier = param_of(form, "code_verifier");
    verifiers_.push_back(verifier);
    auto it = codes_.find(param_of(form, "code"));
    if (it == codes_.end() || server::console::s256_challenge(verifier) != it->second.second)
      return {400, json{{"error", "invalid_grant"}, {"error_description", "unknown code or wrong verifier"}}.dump()};
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto id_token = signer_.issue({{"iss", issuer()}, {"aud", "airlock-console"}, {"sub", "bob"}, {"nonce", it->second.first},
                                   {"iat", now}, {"exp", now + 300}});
    codes_.erase(it);  // a code is used once
    return {200, json{{"id_token", *id_token}, {"token_type", "Bearer"}}.dump()};
  }

  identity::TokenSigner signer_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, std::pair<std::string, std::string>> codes_;  // code: nonce, challenge
  std::vector<std::string> verifiers_;
};

class ConsoleOidcReplicas : public ConsoleReplicas {
 protected:
  void SetUp() override {
    for (auto* ws : {&a_ws_, &b_ws_}) {
      *ws = std::make_unique<Workspace>();
      to_postgres(**ws, db_.url, db_.key_file);
      std::ofstream((*ws)->dir() + "/oidc-jwks.json") << idp_.jwks().dump();
      std::string yaml = (*ws)->config_text();
      const std::string sections =
          "identity:\n  issuers:\n    - {name: corp-oidc, issuer: \"" + idp_.issuer() +
          "\", audiences: [airlock-console], jwksFile: oidc-jwks.json}\n"
          "  console: {issuer: corp-oidc, clientId: airlock-console, redirectUri: "
          "\"http://console.example/console/oidc/callback\"}\n";
      yaml.replace(yaml.find("tiers:\n"), 7, sections + "tiers:\n");
      (*ws)->write_config(yaml);
    }
    ::setenv("AIRLOCK_SECRETS_KEY_FILE", (db_.key_dir + "/secrets.key").c_str(), 1);
    a_.emplace(*a_ws_, 50000);
    b_.emplace(*b_ws_, 51000);
    ::unsetenv("AIRLOCK_SECRETS_KEY_FILE");
    ASSERT_TRUE(a_->serving()) << a_->log();
    ASSERT_TRUE(b_->serving()) << b_->log();
  }

  struct Login {
    std::string url, binding;
  };
  Login start_login(std::uint16_t port) {
    auto r = http_with(port, "POST", "/console/oidc/login", "{}", "", browser(""));
    EXPECT_EQ(r.status, 200) << r.body;
    const std::string set = r.headers["set-cookie"];
    const auto eq = set.find('='), semi = set.find(';');
    if (r.status != 200 || eq == std::string::npos) return {};
    return {r.json().value("authorization_url", ""), set.substr(eq + 1, semi - eq - 1)};
  }
  // The callback as the browser follows the provider's redirect. Its answer raw: it sets two
  // cookies (the session's, and the login's cleared), which Reply's header map would merge.
  struct Callback {
    int status = 0;
    std::string text, session_cookie;
  };
  Callback callback(std::uint16_t port, const Login& login, const std::string& code, const std::string& binding) {
    const std::string request = "GET /console/oidc/callback?code=" + code + "&state=" + param_of(login.url, "state") +
                                " HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: airlock_console_oidc=" + binding +
                                "\r\nConnection: close\r\n\r\n";
    Callback out;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    if (out.text.size() > 12) out.status = std::atoi(out.text.substr(9, 3).c_str());
    const auto at = out.text.find("Set-Cookie: airlock_console=");
    if (at != std::string::npos) out.session_cookie = out.text.substr(at + 28, out.text.find(';', at) - at - 28);
    return out;
  }

  std::string idp_key_dir_ = [] {
    std::string tmpl = "/tmp/airlock-oidc-idp-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
    return tmpl;
  }();
  OidcStandIn idp_{idp_key_dir_ + "/idp.key"};
};

// Started on A, the provider's callback lands on B: B completes it (it holds the login's
// verifier and nonce through the database), and the session it makes is served by A.
TEST_F(ConsoleOidcReplicas, ALoginStartedOnACompletesOnB) {
  const auto login = start_login(a_->port);
  ASSERT_FALSE(login.url.empty());
  EXPECT_EQ(login.url.rfind(idp_.issuer() + "/authorize?", 0), 0u) << login.url;
  EXPECT_EQ(db_.count("SELECT count(*) FROM console_oidc_logins"), 1u);
  idp_.authorize("code-1", login.url);
  auto done = callback(b_->port, login, "code-1", login.binding);
  ASSERT_EQ(done.status, 303) << done.text;
  const std::string cookie = done.session_cookie;
  ASSERT_EQ(cookie.size(), 64u) << done.text;
  auto info = session_info(a_->port, {cookie, ""});
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(info.json()["subject"]["sub"], "bob");
  EXPECT_EQ(db_.count("SELECT count(*) FROM console_oidc_logins"), 0u) << "a login ends at its callback";

  // The same callback replayed, to either replica: the state was used.
  for (auto port : {a_->port, b_->port}) {
    auto replay = callback(port, login, "code-1", login.binding);
    EXPECT_EQ(replay.status, 400) << replay.text;
    EXPECT_NE(replay.text.find("\"oidc_state\""), std::string::npos) << replay.text;
    EXPECT_TRUE(replay.session_cookie.empty());
  }
}

// A callback from another browser (its binding cookie missing or another) is refused on the
// replica it reaches, and leaves the login to its own browser, which completes it elsewhere.
TEST_F(ConsoleOidcReplicas, ACallbackFromAnotherBrowserIsRefusedOnEveryReplica) {
  const auto login = start_login(a_->port), other = start_login(b_->port);
  ASSERT_FALSE(login.url.empty());
  ASSERT_FALSE(other.url.empty());
  idp_.authorize("code-2", login.url);
  for (const std::string& binding : {std::string(), other.binding, std::string(64, 'f')}) {
    auto stolen = callback(b_->port, login, "code-2", binding);
    EXPECT_EQ(stolen.status, 400) << stolen.text;
    EXPECT_TRUE(stolen.session_cookie.empty());
  }
  auto mine = callback(b_->port, login, "code-2", login.binding);
  EXPECT_EQ(mine.status, 303) << mine.text;
  EXPECT_EQ(mine.session_cookie.size(), 64u) << mine.text;
}

// The table holds neither the state, the browser binding, the nonce nor the PKCE verifier.
TEST_F(ConsoleOidcReplicas, TheTableHoldsNoneOfTheLoginsSecrets) {
  const auto login = start_login(a_->port);
  ASSERT_FALSE(login.url.empty());
  const auto whole = db_.column("SELECT t::text FROM console_oidc_logins t");
  ASSERT_EQ(whole.size(), 1u);
  idp_.authorize("code-3", login.url);
  ASSERT_EQ(callback(b_->port, login, "code-3", login.binding).status, 303);
  ASSERT_EQ(idp_.verifiers().size(), 1u);
  for (const std::string& secret : {param_of(login.url, "state"), param_of(login.url, "nonce"), login.binding,
                                    idp_.verifiers()[0]}) {
    ASSERT_GE(secret.size(), 43u);
    EXPECT_EQ(whole[0].find(secret), std::string::npos) << "in plain in the table: " << secret;
  }
}

}  // namespace
}  // namespace airlock::replicas_test
