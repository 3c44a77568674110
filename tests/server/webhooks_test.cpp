// Issue #19, webhooks (docs/webhooks.md), end to end: a daemon in this process, real tools in
// the local sandbox, and a real HTTP receiver on loopback that checks every delivery's
// signature the way a receiver would (OpenSSL's HMAC, computed here, not Airlock's code).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <limits>
#include <fstream>
#include <optional>
#include <thread>

#include "audit/log_reader.hpp"
#include "creds/secret_store.hpp"
#include "corp_issuer.hpp"
#include "creds/sealing_key.hpp"
#include "server/approvals/webhook_outbox.hpp"
#include "server/approvals/webhooks.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kApproverSecret = "whsec-approvers-5f2d9c0b7e4a1836";
constexpr const char* kOutcomeSecret = "whsec-outcomes-a41c77e09b3d2f58";
constexpr const char* kApiKeyValue = "sk-live-77c1e0d2a9b84f3365d0e1c2b3a49586";

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---- The receiver -------------------------------------------------------------------------

struct Received {
  std::string target;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  Clock::time_point at;
  json json_body() const { return json::parse(body, nullptr, false); }
};

// An HTTP/1.1 server on 127.0.0.1: one request per connection, answered with the next of
// `statuses` (200 once they are used up), after `delay`.
class Receiver {
 public:
  explicit Receiver(std::uint16_t port = 0, std::vector<int> statuses = {}, milliseconds delay = milliseconds(0))
      : statuses_(std::move(statuses)), delay_(delay) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 || ::listen(fd_, 16) != 0)
      throw std::runtime_error("Receiver: cannot listen on loopback");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~Receiver() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

  // The `n`th request received (0: the first) whose target is `target` ("": any), waiting
  // up to `wait` for it.
  std::optional<Received> nth(std::size_t n, const std::string& target = "", milliseconds wait = milliseconds(20000)) {
    std::unique_lock lock(mu_);
    std::optional<Received> found;
    cv_.wait_for(lock, wait, [&] {
      std::size_t seen = 0;
      for (const auto& r : received_)
        if (target.empty() || r.target == target) {
          if (seen++ == n) {
            found = r;
            return true;
          }
        }
      return false;
    });
    return found;
  }
  std::size_t count() {
    std::lock_guard lock(mu_);
    return received_.size();
  }

 private:
  void serve() {
    for (;;) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      auto request = read_request(c);
      int status = 200;
      {
        std::lock_guard lock(mu_);
        if (request) received_.push_back(std::move(*request));
        if (served_ < statuses_.size()) status = statuses_[served_];
        ++served_;
      }
      cv_.notify_all();
      std::this_thread::sleep_for(delay_);
      const std::string answer = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!::write(c, answer.data(), answer.size());
      ::close(c);
    }
  }

  static std::optional<Received> read_request(int c) {
    std::string data;
    char buf[8192];
    std::size_t need = std::string::npos, head = std::string::npos;
    for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;) {
      data.append(buf, static_cast<std::size_t>(n));
      if (head == std::string::npos && (head = data.find("\r\n\r\n")) == std::string::npos) continue;
      if (need == std::string::npos) need = head + 4 + content_length(data.substr(0, head));
      if (data.size() >= need) break;
    }
    if (head == std::string::npos) return std::nullopt;
    Received r;
    r.at = Clock::now();
    const auto first_end = data.find("\r\n");
    const std::string first = data.substr(0, first_end);
    r.target = first.substr(first.find(' ') + 1, first.rfind(' ') - first.find(' ') - 1);
    for (std::size_t pos = first_end + 2; pos < head;) {
      const auto end = data.find("\r\n", pos);
      const std::string line = data.substr(pos, end - pos);
      const auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
      pos = end + 2;
    }
    r.body = data.substr(head + 4);
    return r;
  }

  static std::size_t content_length(std::string head) {
    for (auto& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto at = head.find("content-length:");
    return at == std::string::npos ? 0 : std::stoul(head.substr(at + 15));
  }

  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::vector<int> statuses_;
  std::size_t served_ = 0;
  milliseconds delay_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Received> received_;
};

// What a receiver does (docs/webhooks.md, "Verifying a delivery"): HMAC-SHA256 of
// "<timestamp>.<body>" with the shared secret, compared in constant time with the v1= value
// of the signature header, and a timestamp no more than 5 minutes from `now`.
bool verify(const std::string& secret, const std::string& timestamp, const std::string& signature,
            const std::string& body, std::int64_t now = unix_now()) {
  if (timestamp.empty() || timestamp.find_first_not_of("0123456789") != std::string::npos) return false;
  if (std::llabs(now - std::stoll(timestamp)) > 300) return false;
  const std::string message = timestamp + "." + body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  std::string expected = "v1=";
  for (unsigned int i = 0; i < len; ++i) {
    static const char* digits = "0123456789abcdef";
    expected += digits[mac[i] >> 4];
    expected += digits[mac[i] & 15];
  }
  return expected.size() == signature.size() && CRYPTO_memcmp(expected.data(), signature.data(), expected.size()) == 0;
}

bool verify(const std::string& secret, const Received& r) {
  return verify(secret, r.headers.count("airlock-webhook-timestamp") ? r.headers.at("airlock-webhook-timestamp") : "",
                r.headers.count("airlock-webhook-signature") ? r.headers.at("airlock-webhook-signature") : "", r.body);
}

// ---- The daemon -----------------------------------------------------------------------------


// alice asks through the agent; bob approves.
const char* kTools = R"(
  - name: danger
    risk: critical
    approval: {approvers: 1, timeout: 60s}
    runtime: {type: python, file: tools/echo.py}
  - name: show-secret
    runtime: {type: python, file: tools/show_credential.py}
    credentials:
      - {env: API_KEY, secret: api-key}
)";

// Two webhooks on one receiver: approval.requested for the danger* tools (the approvers'
// bridge), invocation.completed for every tool; fast retries for the test.
std::string webhooks_yaml(std::uint16_t port, const std::string& retry = "{initial: 200ms, max: 2s}") {
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  return "webhooks:\n"
         "  approvers:\n"
         "    url: " + base + "/approvals\n"
         "    secret: {env: AIRLOCK_WEBHOOKS_TEST_SECRET}\n"
         "    events: [approval.requested]\n"
         "    tools: [\"danger*\"]\n"
         "    retry: " + retry + "\n"
         "  outcomes:\n"
         "    url: " + base + "/outcomes\n"
         "    secret: {file: outcomes.secret}\n"
         "    events: [invocation.completed]\n"
         "    timeout: 5s\n"
         "    retry: " + retry + "\n";
}

class Webhooks : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("AIRLOCK_WEBHOOKS_TEST_SECRET", kApproverSecret, 1);
    std::ofstream(ws_.dir() + "/outcomes.secret") << kOutcomeSecret << "\n";
    auto corp = CorpIssuer::open(ws_.dir());
    ASSERT_TRUE(corp.ok()) << corp.error().message;
    corp_.emplace(std::move(*corp));
    auto store = creds::SecretStore::open(ws_.dir() + "/data");
    ASSERT_TRUE(store.ok()) << store.error().message;
    ASSERT_TRUE((*store)->set("api-key", kApiKeyValue).ok());
  }

  // The configuration with `webhooks` (its YAML), and a daemon on it.
  void start(const std::string& webhooks) {
    ws_.rewrite(corp_sections("*"), kTools);
    ws_.write_config(with_local_critical_tier(ws_.config_text()) + webhooks);
    daemon_ = std::make_unique<RunningDaemon>(ws_);
  }
  void stop() { daemon_.reset(); }
  std::uint16_t port() const { return daemon_->port; }
  // The key the daemon seals the outbox's bodies with (the secret store's).
  std::shared_ptr<const creds::SealingKey> daemon_key() const {
    auto key = creds::SealingKey::load_or_create(creds::SealingKey::key_file_for(ws_.dir() + "/data"));
    EXPECT_TRUE(key.ok()) << key.error().message;
    return key.ok() ? *key : nullptr;
  }

  std::string token(const std::string& sub) const {
    json groups = json::array({"staff"});
    if (sub != "alice") groups.push_back("approvers");
    return corp_->token(sub, groups);
  }
  Reply request(const std::string& tool, const json& arguments) {
    return http_with(port(), "POST", "/v1/tools/" + tool + "/invoke", json{{"arguments", arguments}}.dump(), kKey,
                     {{"Airlock-Subject-Token", token("alice")}});
  }
  Reply approve(const std::string& approval) {
    return http_with(port(), "POST", "/v1/approvals/" + approval + "/approve", json{{"reason", "ok"}}.dump(),
                     token("bob"), {});
  }
  json invocation(const std::string& id, const std::string& wait = "") {
    auto r = http(port(), "GET", "/v1/invocations/" + id + (wait.empty() ? "" : "?wait=" + wait));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }

  Workspace ws_;
  std::optional<CorpIssuer> corp_;
  std::unique_ptr<RunningDaemon> daemon_;
};

TEST_F(Webhooks, ApprovalRequestedReachesTheApproversSignedWithWhatTheyDecideOn) {
  Receiver receiver;
  start(webhooks_yaml(receiver.port()));
  const auto asked = Clock::now();
  auto r = request("danger", {{"x", 1}});
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string approval = r.json()["approval"]["id"];
  const std::string id = r.json()["id"];

  auto got = receiver.nth(0, "/approvals");
  ASSERT_TRUE(got) << "no approval.requested delivery";
  EXPECT_LT(got->at - asked, milliseconds(4000)) << "released once the approval exists, not after kHeldFor";
  EXPECT_TRUE(verify(kApproverSecret, *got)) << got->body;
  EXPECT_EQ(got->headers["airlock-webhook-event"], "approval.requested");
  EXPECT_EQ(got->headers["content-type"], "application/json");
  const json body = got->json_body();
  EXPECT_EQ(body["event"], "approval.requested");
  EXPECT_EQ(body["id"], got->headers["airlock-webhook-id"]);
  const json& a = body["approval"];
  EXPECT_EQ(a["id"], approval);
  EXPECT_EQ(a["invocation_id"], id);
  EXPECT_EQ(a["tool"], "danger");
  EXPECT_EQ(a["risk"], "critical");
  EXPECT_EQ(a["status"], "pending");
  EXPECT_EQ(a["arguments"], (json{{"x", 1}}));
  EXPECT_EQ(a["approvers_required"], 1);
  EXPECT_EQ(a["expires_at"], r.json()["approval"]["expires_at"]);
  EXPECT_EQ(a["requested_by"]["principal"], "agent");
  EXPECT_EQ(a["requested_by"]["subject"]["sub"], "alice");
  EXPECT_EQ(a["url"], "/v1/approvals/" + approval);
  EXPECT_EQ(a["invocation_url"], "/v1/invocations/" + id);
  // What an approver sees through the API is what the webhook said.
  auto shown = http(port(), "GET", "/v1/approvals/" + approval, "", token("bob"));
  ASSERT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(shown.json()["arguments_sha256"], a["arguments_sha256"]);
  EXPECT_EQ(shown.json()["arguments"], a["arguments"]);

  // The verifier is real: a changed byte, another secret, a stale timestamp all fail.
  std::string tampered = got->body;
  tampered.replace(tampered.find("\"x\":1"), 5, "\"x\":2");
  const std::string ts = got->headers["airlock-webhook-timestamp"], sig = got->headers["airlock-webhook-signature"];
  EXPECT_TRUE(verify(kApproverSecret, ts, sig, got->body));
  EXPECT_FALSE(verify(kApproverSecret, ts, sig, tampered));
  EXPECT_FALSE(verify(kOutcomeSecret, ts, sig, got->body));
  EXPECT_FALSE(verify(kApproverSecret, ts, sig, got->body, std::stoll(ts) + 301)) << "a replay after 5 minutes";
  EXPECT_FALSE(verify(kApproverSecret, std::to_string(std::stoll(ts) + 1), sig, got->body));
  // Nothing else was sent: the call has not ended.
  EXPECT_FALSE(receiver.nth(0, "/outcomes", milliseconds(300)));
}

// Issue #33: the approval.requested delivery carries the pending call's arguments to the
// bridge; the outbox keeps its body sealed like the approval, so state.db holds them in plain
// neither before nor after the delivery. (Before: the body was plain text, kept after delivery.)
TEST_F(Webhooks, TheOutboxKeepsTheArgumentsItDeliversSealed) {
  Receiver receiver;
  start(webhooks_yaml(receiver.port()));
  auto r = request("danger", {{"note", "acct-zz-webhook-payee"}});
  ASSERT_EQ(r.status, 202) << r.body;
  auto got = receiver.nth(0, "/approvals");
  ASSERT_TRUE(got) << "no approval.requested delivery";
  EXPECT_NE(got->body.find("acct-zz-webhook-payee"), std::string::npos) << "the bridge gets them";
  stop();
  std::string bytes;
  for (const std::string file : {"/data/state.db", "/data/state.db-wal"}) {
    std::ifstream in(ws_.dir() + file, std::ios::binary);
    bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes.find("acct-zz-webhook-payee"), std::string::npos) << "state.db holds the arguments in plain";
  auto outbox = WebhookOutbox::open(ws_.dir() + "/data/state.db", daemon_key());
  ASSERT_TRUE(outbox.ok()) << outbox.error().message;
  auto row = (*outbox)->get(got->headers["airlock-webhook-id"]);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->body, got->body) << "the stored body opens to what was sent";
}

TEST_F(Webhooks, InvocationCompletedCarriesTheResultAsTheApiAnswersIt) {
  Receiver receiver;
  start(webhooks_yaml(receiver.port()));
  auto r = request("danger", {{"x", 7}});
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"];
  ASSERT_EQ(approve(r.json()["approval"]["id"]).status, 200);
  auto got = receiver.nth(0, "/outcomes");
  ASSERT_TRUE(got) << "no invocation.completed delivery";
  EXPECT_TRUE(verify(kOutcomeSecret, *got)) << got->body;
  EXPECT_FALSE(verify(kApproverSecret, *got)) << "each webhook signs with its own secret";
  EXPECT_EQ(got->headers["airlock-webhook-event"], "invocation.completed");
  const json body = got->json_body();
  EXPECT_EQ(body["invocation"]["id"], id);
  EXPECT_EQ(body["invocation"]["status"], "ok") << got->body;
  EXPECT_EQ(body["invocation"]["output"]["echo"], (json{{"x", 7}}));
  EXPECT_FALSE(body["invocation"].contains("principal"));
  EXPECT_EQ(body["invocation"], invocation(id)) << "exactly GET /v1/invocations/{id}";

  // A tool that is not critical: its completion goes to `outcomes` (every tool), and
  // `approvers` (danger* only, approval.requested only) hears nothing of it.
  auto low = request("show-secret", {{"vars", json::array()}});
  ASSERT_EQ(low.status, 200) << low.body;
  auto second = receiver.nth(1, "/outcomes");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->json_body()["invocation"]["id"], low.json()["id"]);
  EXPECT_EQ(receiver.count(), 3u) << "one approval.requested, two invocation.completed";
}

TEST_F(Webhooks, ADeniedCallEndsWithAnInvocationCompletedThatSaysSo) {
  Receiver receiver;
  start(webhooks_yaml(receiver.port()));
  auto r = request("danger", {{"x", 3}});
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"], approval = r.json()["approval"]["id"];
  auto denied = http_with(port(), "POST", "/v1/approvals/" + approval + "/deny", json{{"reason", "no"}}.dump(),
                          token("bob"), {});
  ASSERT_EQ(denied.status, 200) << denied.body;
  auto got = receiver.nth(0, "/outcomes");
  ASSERT_TRUE(got) << "no invocation.completed for a call that never ran";
  EXPECT_TRUE(verify(kOutcomeSecret, *got));
  const json body = got->json_body();
  EXPECT_EQ(body["invocation"]["id"], id);
  EXPECT_EQ(body["invocation"]["error"]["kind"], "approval_denied") << got->body;
  EXPECT_EQ(body["invocation"], invocation(id));
}

TEST_F(Webhooks, AFailingReceiverGetsTheSameDeliveryAgainAfterGrowingWaits) {
  Receiver receiver(0, {500, 500, 200});
  start(webhooks_yaml(receiver.port()));
  auto r = request("show-secret", {{"vars", json::array()}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto first = receiver.nth(0, "/outcomes"), second = receiver.nth(1, "/outcomes"),
       third = receiver.nth(2, "/outcomes");
  ASSERT_TRUE(first && second && third);
  EXPECT_FALSE(receiver.nth(3, "/outcomes", milliseconds(1500))) << "delivered at the third attempt: no fourth";
  EXPECT_EQ(first->body, second->body);
  EXPECT_EQ(second->body, third->body);
  EXPECT_EQ(first->headers["airlock-webhook-id"], third->headers["airlock-webhook-id"]);
  EXPECT_TRUE(verify(kOutcomeSecret, *third));
  const auto gap1 = std::chrono::duration_cast<milliseconds>(second->at - first->at);
  const auto gap2 = std::chrono::duration_cast<milliseconds>(third->at - second->at);
  EXPECT_GE(gap1.count(), 190) << "retry.initial is 200ms";
  EXPECT_GE(gap2.count(), 390) << "then doubled";
  EXPECT_GT(gap2, gap1);
  // The metrics count each attempt's outcome (the last one lands just after the answer).
  std::string metrics;
  for (int i = 0; i < 50 && metrics.find("result=\"delivered\"") == std::string::npos; ++i) {
    if (i) std::this_thread::sleep_for(milliseconds(100));
    metrics = http(port(), "GET", "/metrics", "", "").body;
  }
  EXPECT_NE(metrics.find("airlock_webhook_deliveries_total{result=\"retried\",webhook=\"outcomes\"} 2"),
            std::string::npos) << metrics;
  EXPECT_NE(metrics.find("airlock_webhook_deliveries_total{result=\"delivered\",webhook=\"outcomes\"} 1"),
            std::string::npos) << metrics;
  stop();
  auto outbox = WebhookOutbox::open(ws_.dir() + "/data/state.db", daemon_key());
  ASSERT_TRUE(outbox.ok());
  auto row = (*outbox)->get(third->headers["airlock-webhook-id"]);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->state, "delivered");
  EXPECT_EQ(row->attempts, 3u);
}

TEST_F(Webhooks, AnEventWhileTheReceiverIsDownIsDeliveredAfterADaemonRestart) {
  const std::uint16_t receiver_port = free_port(22000);
  start(webhooks_yaml(receiver_port));
  auto r = request("show-secret", {{"vars", json::array()}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string id = r.json()["id"];
  std::this_thread::sleep_for(milliseconds(500));  // an attempt or two fail: nothing listens
  stop();
  {
    auto outbox = WebhookOutbox::open(ws_.dir() + "/data/state.db", daemon_key());
    ASSERT_TRUE(outbox.ok());
    auto due = (*outbox)->due(std::numeric_limits<std::int64_t>::max(), 10);
    ASSERT_EQ(due.size(), 1u) << "kept while the daemon is down";
    EXPECT_EQ(due[0].subject, id);
    EXPECT_GE(due[0].attempts, 1u);
    EXPECT_NE(due[0].last_error.find("connect"), std::string::npos) << due[0].last_error;
  }
  Receiver receiver(receiver_port);
  start(webhooks_yaml(receiver_port));
  auto got = receiver.nth(0, "/outcomes");
  ASSERT_TRUE(got) << "not delivered after the restart";
  EXPECT_TRUE(verify(kOutcomeSecret, *got));
  EXPECT_EQ(got->json_body()["invocation"]["id"], id);
  EXPECT_EQ(got->json_body()["invocation"]["status"], "ok");
}

TEST_F(Webhooks, ARotatedSecretSignsTheNextAttemptAfterAReload) {
  constexpr const char* kRotated = "whsec-rotated-0e9d8c7b6a5f4e3d";
  const std::uint16_t receiver_port = free_port(23000);
  start(webhooks_yaml(receiver_port));
  auto r = request("show-secret", {{"vars", json::array()}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::this_thread::sleep_for(milliseconds(300));  // a failed attempt: nothing listens yet
  std::ofstream(ws_.dir() + "/outcomes.secret") << kRotated << "\n";
  auto reloaded = daemon_->daemon->reload(ws_.config());
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message;
  Receiver receiver(receiver_port);
  auto got = receiver.nth(0, "/outcomes");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->json_body()["invocation"]["id"], r.json()["id"]);
  EXPECT_TRUE(verify(kRotated, *got));
  EXPECT_FALSE(verify(kOutcomeSecret, *got));
}

TEST_F(Webhooks, ADeliveryThatNeverSucceedsIsFailedLoggedAndAudited) {
  Receiver receiver(0, {503, 503, 503, 503});
  start(webhooks_yaml(receiver.port(), "{initial: 100ms, max: 100ms, attempts: 2}"));
  auto r = request("show-secret", {{"vars", json::array()}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string id = r.json()["id"];
  ASSERT_TRUE(receiver.nth(1, "/outcomes"));
  EXPECT_FALSE(receiver.nth(2, "/outcomes", milliseconds(1000))) << "retry.attempts is 2";
  stop();
  bool audited = false;
  auto reader = audit::LogReader::open(ws_.audit_path());
  ASSERT_TRUE(reader.ok());
  (void)reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
    auto record = json::parse(text, nullptr, false);
    const json fields = record.contains("fields") ? record["fields"] : record;
    if (fields.value("event", "") == "webhook.failed" && fields.value("invocation_id", "") == id) {
      audited = true;
      EXPECT_EQ(fields["webhook"], "outcomes");
      EXPECT_EQ(fields["webhook_event"], "invocation.completed");
      EXPECT_EQ(fields["attempts"], 2);
      EXPECT_EQ(fields["error"], "HTTP 503");
    }
    return true;
  });
  EXPECT_TRUE(audited) << "no webhook.failed audit record";
}

TEST_F(Webhooks, ALeasedCredentialsValueIsInNoDeliveredBody) {
  Receiver receiver;
  start(webhooks_yaml(receiver.port()));
  auto r = request("show-secret", {{"vars", {"API_KEY"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json()["output"]["API_KEY"]["raw"], "[REDACTED:CREDENTIAL]") << r.body;
  auto got = receiver.nth(0, "/outcomes");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->body.find(kApiKeyValue), std::string::npos) << got->body;
  std::string hex;
  for (unsigned char c : std::string(kApiKeyValue)) {
    static const char* digits = "0123456789abcdef";
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  EXPECT_EQ(got->body.find(hex), std::string::npos);
  EXPECT_NE(got->body.find("[REDACTED:CREDENTIAL]"), std::string::npos);
  for (const auto& [name, value] : got->headers) EXPECT_EQ(value.find(kApiKeyValue), std::string::npos) << name;
}

TEST_F(Webhooks, ASlowReceiverNeverHoldsUpTheCall) {
  Receiver receiver(0, {}, milliseconds(4000));
  start(webhooks_yaml(receiver.port()));
  const auto before = Clock::now();
  auto r = request("show-secret", {{"vars", json::array()}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto second = request("show-secret", {{"vars", json::array()}});
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_LT(Clock::now() - before, milliseconds(3500)) << "the calls waited for the receiver";
  ASSERT_TRUE(receiver.nth(1, "/outcomes", milliseconds(30000)));
}

TEST_F(Webhooks, AHangingReceiverDelaysOnlyItsOwnWebhook) {
  Receiver slow(0, {}, milliseconds(5000)), fast;
  auto hook = [](const std::string& name, std::uint16_t port) {
    return "  " + name + ":\n    url: http://127.0.0.1:" + std::to_string(port) + "/" + name +
           "\n    secret: {file: outcomes.secret}\n    events: [invocation.completed]\n";
  };
  start("webhooks:\n" + hook("slow", slow.port()) + hook("fast", fast.port()));
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    auto r = request("show-secret", {{"vars", json::array()}});
    ASSERT_EQ(r.status, 200) << r.body;
    ids.push_back(r.json()["id"]);
  }
  auto first_slow = slow.nth(0, "/slow");
  auto second_fast = fast.nth(1, "/fast");
  ASSERT_TRUE(first_slow && second_fast);
  EXPECT_LT(second_fast->at - first_slow->at, milliseconds(4000))
      << "the fast receiver waited for the slow one's answer";
  EXPECT_EQ(second_fast->json_body()["invocation"]["id"], ids[1]);
  EXPECT_TRUE(verify(kOutcomeSecret, *second_fast));
}

// The URL the config's loopback check approved is the URL the sender connects to: one parser
// for both. `http://127.0.0.1:PORT?.attacker.invalid/hook` is the loopback address with a
// query; the sender read "127.0.0.1:PORT?.attacker.invalid" as its authority before (a host
// name to resolve, here a port that is no number), so nothing reached the receiver.
TEST_F(Webhooks, TheSenderConnectsToTheHostTheLoopbackCheckApproved) {
  Receiver receiver;
  start("webhooks:\n  tricky:\n    url: http://127.0.0.1:" + std::to_string(receiver.port()) +
        "?.attacker.invalid/hook\n    secret: {file: outcomes.secret}\n    events: [invocation.completed]\n"
        "    retry: {initial: 200ms, max: 1s}\n");
  auto r = request("show-secret", {{"vars", json::array()}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto got = receiver.nth(0, "/?.attacker.invalid/hook");
  ASSERT_TRUE(got) << "nothing reached the loopback receiver the config check approved";
  EXPECT_TRUE(verify(kOutcomeSecret, *got));
}

TEST_F(Webhooks, ADeliveryIsFailedOnceGiveUpAfterHasPassed) {
  Receiver receiver(0, std::vector<int>(200, 500));
  start(webhooks_yaml(receiver.port(), "{initial: 100ms, max: 100ms, giveUpAfter: 600ms}"));
  auto r = request("show-secret", {{"vars", json::array()}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto first = receiver.nth(0, "/outcomes");
  ASSERT_TRUE(first);
  std::this_thread::sleep_for(milliseconds(1500));
  const std::size_t attempts = receiver.count();
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_EQ(receiver.count(), attempts) << "still trying after giveUpAfter";
  stop();
  auto outbox = WebhookOutbox::open(ws_.dir() + "/data/state.db", daemon_key());
  ASSERT_TRUE(outbox.ok());
  auto row = (*outbox)->get(first->headers["airlock-webhook-id"]);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->state, "failed");
  EXPECT_EQ(row->attempts, attempts);
  EXPECT_GE(row->attempts, 3u) << "about every 100ms for 600ms";
  EXPECT_EQ(row->last_error, "HTTP 500");
}

TEST(WebhookBackoff, DoublesFromInitialUpToMax) {
  policy::WebhookRetry retry;  // 1s doubling, at most 5m
  EXPECT_EQ(webhook_backoff(retry, 1), std::chrono::seconds(1));
  EXPECT_EQ(webhook_backoff(retry, 2), std::chrono::seconds(2));
  EXPECT_EQ(webhook_backoff(retry, 5), std::chrono::seconds(16));
  EXPECT_EQ(webhook_backoff(retry, 9), std::chrono::seconds(256));
  EXPECT_EQ(webhook_backoff(retry, 10), std::chrono::minutes(5));
  EXPECT_EQ(webhook_backoff(retry, 4000000000u), std::chrono::minutes(5)) << "no overflow";
}

}  // namespace
}  // namespace airlock::server::test
