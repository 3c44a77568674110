// Issue #38, the console: its sessions behind several replicas (storage.postgres). A browser
// signed in on one replica was signed out whenever a round-robin Service sent it to another.
// Now the sessions are in the shared table console_sessions: any replica serves them, with the
// same CSRF token; a sign-out through one is refused by all at once; the table holds the SHA-256
// of the id and the credential and CSRF token sealed (a database reader gets neither); an
// expired session is refused everywhere; a database away refuses, never signs in.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "common/digest.hpp"
#include "replica_process.hpp"

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

}  // namespace
}  // namespace airlock::replicas_test
