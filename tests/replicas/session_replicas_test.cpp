// Issue #35: sessions behind several replicas (docs/sessions.md, "Replicas"). Two `airlock
// serve` processes on one PostgreSQL database, as behind a load balancer: a session lives on
// the replica that created it, and every request for it that reaches the other is forwarded
// there (the answer streamed back), for its owner only; a forwarded request is never
// forwarded again; a replica killed with SIGKILL has its sessions recorded as ended, aborted,
// once, by the other; the list through either replica shows the caller's sessions on both.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <random>
#include <set>

#include "common/digest.hpp"
#include "corp_issuer.hpp"
#include "replica_process.hpp"
#include "tls_test_support.hpp"

namespace airlock::replicas_test {
namespace {

using nlohmann::json;
using server::test::CorpIssuer;
using server::test::http_with;
using server::test::kKey;
using server::test::kOtherKey;
using server::test::Reply;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("not in the config: " + from);
  return text.replace(at, from.size(), to);
}

constexpr const char* kTemplates = R"(
sessionTemplates:
  - name: dev
    limits: {memory: 256Mi, pids: 64, idleTimeout: 1h, maxLifetime: 2h, output: 64Ki, disk: 64Mi}
  - name: keyed
    credentials:
      - env: REPORTS_TOKEN
        token: {audience: "https://reports.internal", ttl: 10m}
)";

using Headers = std::map<std::string, std::string>;

// `count` bytes that no DLP detector takes for anything (no digits, no capitals, no '@'),
// of every other value, binary included, in a fixed random order.
std::string file_content(std::size_t count) {
  std::string alphabet;
  for (int c = 0; c < 256; ++c)
    if (!std::isdigit(c) && !std::isupper(c) && c != '@') alphabet.push_back(static_cast<char>(c));
  std::mt19937 random(35);
  std::string out(count, '\0');
  for (auto& c : out) c = alphabet[random() % alphabet.size()];
  return out;
}

// A PUT whose body is sent chunked (no Content-Length: the receiver cannot know its size
// first); the answer's body.
std::string put_chunked(std::uint16_t port, const std::string& target, const Headers& headers, const std::string& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return "";
  std::string out = "PUT " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + kKey +
                    "\r\nTransfer-Encoding: chunked\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  for (std::size_t at = 0; at < body.size(); at += 100'000) {
    const std::string piece = body.substr(at, 100'000);
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
    out += size + piece + "\r\n";
  }
  out += "0\r\n\r\n";
  for (std::size_t sent = 0; sent < out.size();) {
    const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  const auto body_at = answer.find("\r\n\r\n");
  return body_at == std::string::npos ? answer : answer.substr(body_at + 4);
}

// The events of a Server-Sent Events body: (event, data as JSON), in order.
std::vector<std::pair<std::string, json>> events_of(const std::string& body) {
  std::vector<std::pair<std::string, json>> out;
  std::size_t at = 0;
  while ((at = body.find("event: ", at)) != std::string::npos) {
    const auto name_end = body.find('\n', at);
    const auto data_at = body.find("data: ", name_end);
    const auto data_end = body.find('\n', data_at);
    out.emplace_back(body.substr(at + 7, name_end - at - 7), json::parse(body.substr(data_at + 6, data_end - data_at - 6)));
    at = data_end;
  }
  return out;
}

// Two replicas, A and B, on one database, with session templates and a corporate issuer whose
// users (staff) may create sessions of `dev` with the agent.
class SessionReplicas : public ::testing::Test {
 protected:
  std::unique_ptr<Workspace> workspace() {
    auto ws = std::make_unique<Workspace>();
    if (!corp_) {
      auto corp = CorpIssuer::open(ws->dir());
      if (!corp) throw std::runtime_error(corp.error().message);
      corp_.emplace(std::move(*corp));
    }
    corp_->publish(ws->dir());
    ws->rewrite(server::test::corp_sections("echo"), "");
    std::string yaml = replaced(ws->config_text(), R"(actions: [invoke], tools: ["echo"]})",
                                R"(actions: [invoke, create_session], tools: ["echo"], sessionTemplates: [dev]})");
    ws->write_config(yaml + kTemplates);
    to_postgres(*ws, db_.url, db_.key_file);
    return ws;
  }
  void start(std::uint16_t a_port, std::uint16_t b_port) {
    a_ws_ = workspace();
    b_ws_ = workspace();
    a_.emplace(*a_ws_, a_port);
    b_.emplace(*b_ws_, b_port);
    ASSERT_TRUE(a_->serving()) << a_->log();
    ASSERT_TRUE(b_->serving()) << b_->log();
  }
  Headers as(const std::string& sub) const { return {{"airlock-subject-token", corp_->token(sub, {"staff"})}}; }

  Reply request(const Replica& r, const std::string& method, const std::string& path, const std::string& body = "",
                Headers h = {}, const std::string& key = kKey) const {
    return http_with(r.port, method, path, body, key, h);
  }
  std::string create(const Replica& r, const Headers& h) {
    auto created = request(r, "POST", "/v1/sessions", json{{"template", "dev"}}.dump(), h);
    if (created.status != 201) throw std::runtime_error("create: " + std::to_string(created.status) + " " + created.body);
    return created.json()["id"];
  }
  Reply exec_json(const Replica& r, const std::string& id, const json& command, Headers h) const {
    h.emplace("accept", "application/json");
    return request(r, "POST", "/v1/sessions/" + id + "/exec", json{{"command", command}}.dump(), h);
  }
  double forwards(const Replica& r, const std::string& kind = "request") const {
    return counter_sum(http(r.port, "GET", "/metrics").body, "airlock_session_forwards_total",
                       "kind=\"" + kind + "\"");
  }
  std::vector<json> session_records(const std::string& id, const std::string& event) const {
    std::vector<json> out;
    for (auto& r : db_.audit_records("airlock.session/v1"))
      if (r["session_id"] == id && r["event"] == event) out.push_back(r);
    return out;
  }

  Shared db_;
  std::optional<CorpIssuer> corp_;
  std::unique_ptr<Workspace> a_ws_, b_ws_;
  std::optional<Replica> a_, b_;
};

// Everything an owner does with a session on A, done through B, gives what A gives.
TEST_F(SessionReplicas, ASessionOnAIsUsedThroughBAsOnA) {
  start(33000, 34000);
  const Replica &a = *a_, &b = *b_;
  const Headers alice = as("alice");
  const std::string id = create(a, alice);
  EXPECT_EQ(db_.count("SELECT count(*) FROM sessions WHERE id = '" + id + "'"), 1u);

  auto got = request(b, "GET", "/v1/sessions/" + id, "", alice);
  ASSERT_EQ(got.status, 200) << got.body << b_->log();
  EXPECT_EQ(got.json()["id"], id);
  EXPECT_EQ(got.json()["owner"]["user"]["sub"], "alice");
  const double before = forwards(b);
  EXPECT_GE(before, 1) << "B answered without forwarding";

  // exec, one JSON answer: the same as A's for the same command.
  const json command = "echo out; echo err >&2; exit 3";
  auto on_a = exec_json(a, id, command, alice), on_b = exec_json(b, id, command, alice);
  ASSERT_EQ(on_b.status, 200) << on_b.body;
  for (const char* field : {"stdout", "stderr", "verdict", "exit_code"})
    EXPECT_EQ(on_b.json()[field], on_a.json()[field]) << field << ": " << on_b.body;
  EXPECT_EQ(on_b.json()["stdout"], "out\n");
  EXPECT_NE(on_b.json()["invocation_id"], on_a.json()["invocation_id"]);

  // exec as Server-Sent Events: the same events, in order.
  auto sse = request(b, "POST", "/v1/sessions/" + id + "/exec",
                     json{{"command", "echo one; sleep 0.2; echo two"}}.dump(), alice);
  ASSERT_EQ(sse.status, 200) << sse.body;
  EXPECT_EQ(sse.headers["content-type"], "text/event-stream");
  auto events = events_of(sse.body);
  ASSERT_GE(events.size(), 2u) << sse.body;
  std::string streamed;
  for (const auto& [name, data] : events)
    if (name == "stdout") streamed += data["data"].get<std::string>();
  EXPECT_EQ(streamed, "one\ntwo\n");
  EXPECT_EQ(events.back().first, "exit");
  EXPECT_EQ(events.back().second["verdict"], "ok");

  // Files of a few MiB, in through B (with a length, and chunked), out through B and A.
  const std::string content = file_content(3u << 20);
  Headers octets = alice;
  octets["content-type"] = "application/octet-stream";
  auto put = request(b, "PUT", "/v1/sessions/" + id + "/files/data/blob", content, octets);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.json()["size"], content.size());
  EXPECT_EQ(put.json()["sha256"], sha256_hex(content));
  auto chunked = json::parse(put_chunked(b.port, "/v1/sessions/" + id + "/files/data/chunked", alice, content), nullptr, false);
  EXPECT_EQ(chunked["sha256"], sha256_hex(content)) << chunked.dump();
  for (const Replica* r : {&b, &a})
    for (const char* name : {"blob", "chunked"}) {
      auto down = request(*r, "GET", "/v1/sessions/" + id + "/files/data/" + name, "", alice);
      ASSERT_EQ(down.status, 200) << down.body.substr(0, 300);
      EXPECT_EQ(down.headers["content-type"], "application/octet-stream");
      EXPECT_TRUE(down.body == content) << name << ": " << down.body.size() << " bytes";
    }
  auto small = request(b, "GET", "/v1/sessions/" + id + "/files/data/", "", alice);  // a listing, answered whole
  EXPECT_EQ(small.json()["type"], "directory") << small.body;
  EXPECT_EQ(request(b, "GET", "/v1/sessions/" + id + "/files/nothing", "", alice).json()["error"]["kind"],
            "file_not_found");

  // The terminal (a WebSocket) is not forwarded: B says where it is served.
  Headers upgrade = alice;
  upgrade.insert({{"connection", "Upgrade"}, {"upgrade", "websocket"}, {"sec-websocket-version", "13"},
                  {"sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="}});
  auto terminal = request(b, "GET", "/v1/sessions/" + id + "/terminal", "", upgrade);
  EXPECT_EQ(terminal.status, 421) << terminal.body;
  EXPECT_EQ(terminal.json()["error"]["kind"], "session_elsewhere") << terminal.body;

  // Pause and resume through B, seen on A.
  auto paused = request(b, "POST", "/v1/sessions/" + id + "/pause", "", alice);
  ASSERT_EQ(paused.status, 200) << paused.body;
  EXPECT_EQ(paused.json()["state"], "paused");
  EXPECT_EQ(request(a, "GET", "/v1/sessions/" + id, "", alice).json()["state"], "paused");
  auto refused = exec_json(b, id, "true", alice);
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(refused.json()["error"]["kind"], "session_paused");
  EXPECT_EQ(request(b, "POST", "/v1/sessions/" + id + "/resume", "", alice).json()["state"], "running");

  // DELETE through B: ended on A, its row gone, and 404 everywhere after.
  auto ended = request(b, "DELETE", "/v1/sessions/" + id, "", alice);
  ASSERT_EQ(ended.status, 200) << ended.body;
  EXPECT_EQ(ended.json()["state"], "ended");
  EXPECT_EQ(ended.json()["end_reason"], "deleted");
  EXPECT_EQ(request(a, "GET", "/v1/sessions/" + id, "", alice).status, 404);
  EXPECT_EQ(request(b, "GET", "/v1/sessions/" + id, "", alice).status, 404);
  EXPECT_EQ(db_.count("SELECT count(*) FROM sessions"), 0u);
  auto records = session_records(id, "ended");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["reason"], "deleted");
  EXPECT_EQ(session_records(id, "file_written").size(), 2u);
}

// Another principal, another user of the same agent, the agent without its user: each asking
// B for A's session gets what a session that does not exist gets, and B sends nothing to A.
TEST_F(SessionReplicas, NobodyButTheOwnerReachesItThroughB) {
  start(35000, 36000);
  const Replica &a = *a_, &b = *b_;
  const std::string id = create(a, as("alice"));
  const std::string none = "0123456789abcdef0123456789abcdef";
  const double before = forwards(b);
  struct Stranger {
    const char* who;
    std::string key;
    Headers headers;
  };
  const std::vector<Stranger> strangers = {
      {"another principal", kOtherKey, {}}, {"another user", kKey, as("bob")}, {"the agent alone", kKey, {}}};
  for (const auto& s : strangers)
    for (const auto& [method, suffix] : std::vector<std::pair<std::string, std::string>>{
             {"GET", ""}, {"DELETE", ""}, {"POST", "/exec"}, {"GET", "/files/x"}, {"POST", "/pause"}}) {
      auto theirs = request(b, method, "/v1/sessions/" + id + suffix, method == "POST" ? R"({"command": "true"})" : "",
                            s.headers, s.key);
      auto nobodys = request(b, method, "/v1/sessions/" + none + suffix, method == "POST" ? R"({"command": "true"})" : "",
                             s.headers, s.key);
      EXPECT_EQ(theirs.status, 404) << s.who << " " << method << suffix << ": " << theirs.body;
      EXPECT_EQ(theirs.status, nobodys.status) << s.who << " " << method << suffix;
      EXPECT_EQ(replaced(theirs.body, id, none), nobodys.body) << s.who << " " << method << suffix;
    }
  EXPECT_EQ(forwards(b), before) << "B forwarded a request that is not the owner's";
  // The owner still reaches it, through B, and it ran nothing of theirs.
  auto owner = request(b, "GET", "/v1/sessions/" + id, "", as("alice"));
  ASSERT_EQ(owner.status, 200) << owner.body;
  EXPECT_EQ(owner.json()["state"], "running");
  EXPECT_EQ(owner.json()["execs"], 0);
  EXPECT_EQ(forwards(b), before + 1);
  EXPECT_EQ(request(a, "GET", "/v1/sessions/" + id, "", as("alice")).json()["execs"], 0);
}

// A request that says it was forwarded already is answered where it lands, never sent on: a
// table that points two replicas at each other cannot make them ping-pong.
TEST_F(SessionReplicas, AForwardedRequestIsNotForwardedAgain) {
  start(37000, 38000);
  const Replica &a = *a_, &b = *b_;
  const Headers alice = as("alice");
  const std::string id = create(a, alice);
  Headers forwarded = alice;
  forwarded["airlock-forwarded-by"] = "some-replica";
  const double before = forwards(b);
  auto looped = exec_json(b, id, "touch /work/ran", forwarded);
  EXPECT_EQ(looped.status, 508) << looped.body;
  EXPECT_EQ(looped.json()["error"]["kind"], "forward_loop");
  EXPECT_EQ(request(b, "GET", "/v1/sessions/" + id, "", forwarded).status, 508);
  EXPECT_EQ(forwards(b), before) << "a forwarded request was forwarded again";
  // A forwarded list is the replica's own: B's has none of A's sessions.
  auto listed = request(b, "GET", "/v1/sessions", "", forwarded);
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_TRUE(listed.json()["sessions"].empty()) << listed.body;
  EXPECT_EQ(forwards(b, "list"), 0);
  // Nothing ran on A.
  auto on_a = exec_json(a, id, "test -e /work/ran && echo ran || echo clean", alice);
  EXPECT_EQ(on_a.json()["stdout"], "clean\n") << on_a.body;
  EXPECT_EQ(request(a, "GET", "/v1/sessions/" + id, "", alice).json()["execs"], 1);
}

// A is killed with SIGKILL holding two sessions, one with a credential (a token leased under
// the session's id): B takes them over after failoverAfter: each recorded ended, "aborted",
// exactly once, its row gone, its lease revoked, and requests for it answered 404. B's own
// session is untouched.
TEST_F(SessionReplicas, AKilledReplicasSessionsAreEndedAbortedOnceByTheOther) {
  start(39000, 40000);
  Replica& a = *a_;
  const Replica& b = *b_;
  auto keyed = request(a, "POST", "/v1/sessions", json{{"template", "keyed"}}.dump());
  ASSERT_EQ(keyed.status, 201) << keyed.body << a.log();
  const std::vector<std::string> on_a = {create(a, as("alice")), keyed.json()["id"]};
  const std::string on_b = create(b, as("alice"));
  const auto a_replica = db_.column("SELECT replica FROM sessions WHERE id = '" + on_a[0] + "'").at(0);
  const std::string lease_of_keyed = "SELECT state FROM leases WHERE invocation_id = '" + on_a[1] + "'";
  ASSERT_EQ(db_.column(lease_of_keyed).size(), 1u) << "the session's credential was not leased";
  ASSERT_NE(db_.column(lease_of_keyed).at(0), "revoked");

  a.stop(SIGKILL);
  ASSERT_TRUE(eventually([&] {
    return db_.count("SELECT count(*) FROM sessions WHERE replica = '" + a_replica + "'") == 0;
  })) << b_->log();
  for (const auto& id : on_a) {
    auto ended = session_records(id, "ended");
    ASSERT_EQ(ended.size(), 1u) << id;
    EXPECT_EQ(ended[0]["reason"], "aborted");
    EXPECT_NE(ended[0]["message"].get<std::string>().find(a_replica), std::string::npos) << ended[0];
    EXPECT_EQ(request(b, "GET", "/v1/sessions/" + id, "", id == on_a[0] ? as("alice") : Headers{}).status, 404);
  }
  EXPECT_EQ(db_.column(lease_of_keyed), std::vector<std::string>{"revoked"}) << b_->log();
  EXPECT_NE(b_->log().find("session " + on_a[1]), std::string::npos) << b_->log();
  auto mine = request(b, "GET", "/v1/sessions/" + on_b, "", as("alice"));
  EXPECT_EQ(mine.json()["state"], "running") << mine.body;
  EXPECT_EQ(db_.count("SELECT count(*) FROM sessions"), 1u);
  const std::string metrics = http(b.port, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("\nairlock_failover_sessions_aborted_total 2\n"), std::string::npos) << metrics;

  // A later round takes nothing again: still one record each.
  std::this_thread::sleep_for(1500ms);  // three heartbeat rounds
  for (const auto& id : on_a) EXPECT_EQ(session_records(id, "ended").size(), 1u) << id;
}

// The list through either replica is the caller's sessions on both, in their live state (a
// session paused on A is listed paused through B).
TEST_F(SessionReplicas, ALiveListThroughBShowsSessionsHeldByA) {
  start(41000, 42000);
  const Replica &a = *a_, &b = *b_;
  const Headers alice = as("alice"), bob = as("bob");
  const std::set<std::string> alices = {create(a, alice), create(a, alice), create(b, alice)};
  const std::string bobs = create(a, bob);
  const std::string paused = *alices.begin();
  ASSERT_EQ(request(b, "POST", "/v1/sessions/" + paused + "/pause", "", alice).status, 200);

  for (const Replica* r : {&a, &b}) {
    auto listed = request(*r, "GET", "/v1/sessions", "", alice);
    ASSERT_EQ(listed.status, 200) << listed.body;
    std::set<std::string> ids;
    const json sessions = listed.json()["sessions"];
    for (const auto& s : sessions) {
      ids.insert(s["id"].get<std::string>());
      EXPECT_EQ(s["state"], s["id"] == paused ? "paused" : "running") << s;
      EXPECT_EQ(s["owner"]["user"]["sub"], "alice") << s;
    }
    EXPECT_EQ(ids, alices) << listed.body;
  }
  auto bobs_list = request(b, "GET", "/v1/sessions", "", bob).json()["sessions"];
  ASSERT_EQ(bobs_list.size(), 1u) << bobs_list;
  EXPECT_EQ(bobs_list[0]["id"], bobs);
  EXPECT_TRUE(request(b, "GET", "/v1/sessions", "", {}, kOtherKey).json()["sessions"].empty());
  EXPECT_GE(forwards(b, "list"), 1);
}

// With server.tls the replicas talk TLS to each other and check the holder's certificate
// against server.tls.replicaCAFile for the name of its address: a replica whose CA did not
// issue the holder's certificate sends it nothing (503) and reaches nothing.
TEST(SessionReplicasTls, TheHoldersCertificateIsCheckedBeforeAnythingIsForwarded) {
  server::test::TestPki pki;
  Shared db;
  auto workspace = [&](const std::string& replica_ca) {
    auto ws = std::make_unique<Workspace>("server: {listen: 127.0.0.1:0, tls: {certFile: \"" + pki.file("server.pem") +
                                          "\", keyFile: \"" + pki.file("server.key") + "\", replicaCAFile: \"" +
                                          pki.file(replica_ca) + "\"}}");
    ws->write_config(ws->config_text() + kTemplates);
    to_postgres(*ws, db.url, db.key_file);
    return ws;
  };
  auto a_ws = workspace("ca.pem"), b_ws = workspace("ca.pem"), c_ws = workspace("other-ca.pem");
  // Over TLS the replicas' /healthz is not plain HTTP: wait for each one's row instead.
  Replica a(*a_ws, 43000, false);
  Replica b(*b_ws, 44000, false);
  Replica c(*c_ws, 45000, false);
  auto advertised = [&] {
    try {
      return db.count("SELECT count(*) FROM replicas WHERE address LIKE 'https://%'") == 3;
    } catch (const std::exception&) {  // no table yet: no replica has started
      return false;
    }
  };
  ASSERT_TRUE(eventually(advertised))
      << a.log() << b.log() << c.log();
  server::test::TlsClientOptions verified;
  verified.ca_file = pki.file("ca.pem");
  auto created = server::test::tls_request(a.port, verified, "POST", "/v1/sessions", R"({"template": "dev"})", kKey);
  ASSERT_EQ(created.status, 201) << created.error << created.body << a.log();
  const std::string id = json::parse(created.body)["id"];

  auto through_b = server::test::tls_request(b.port, verified, "POST", "/v1/sessions/" + id + "/exec",
                                             R"({"command": "echo over tls"})", kKey);
  ASSERT_EQ(through_b.status, 200) << through_b.error << through_b.body << b.log();
  EXPECT_NE(through_b.body.find("over tls"), std::string::npos) << through_b.body;

  auto through_c = server::test::tls_request(c.port, verified, "POST", "/v1/sessions/" + id + "/exec",
                                             R"({"command": "touch /work/from-c"})", kKey);
  EXPECT_EQ(through_c.status, 503) << through_c.body;
  EXPECT_EQ(json::parse(through_c.body, nullptr, false)["error"]["kind"], "replica_unavailable") << through_c.body;
  EXPECT_NE(c.log().find("its certificate is not one of a replica's"), std::string::npos) << c.log();
  auto on_a = server::test::tls_request(a.port, verified, "GET", "/v1/sessions/" + id, "", kKey);
  EXPECT_EQ(json::parse(on_a.body, nullptr, false)["execs"], 1) << on_a.body;
}

// `airlock serve --check` with `args`: its exit status and what it said.
std::pair<int, std::string> serve_check(const Workspace& ws, const std::vector<std::string>& args) {
  const std::string out = ws.dir() + "/check.out";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<std::string> all = {"airlock", "serve", "--check", "--config", ws.config_path()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(AIRLOCK_BINARY, argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_file(out)};
}

// With storage.postgres a replica needs an address the others reach: derived from a listen
// address that is not a wildcard, else server.advertiseUrl or --advertise-url, http or https
// as the server speaks.
TEST(SessionReplicasConfig, AReplicaNeedsAnAddressTheOthersReach) {
  Workspace ws;
  to_postgres(ws, "postgresql://airlock@db.internal/airlock", ws.dir() + "/key");
  const std::string base = ws.config_text();
  auto with_server = [&](const std::string& server, const std::vector<std::string>& args = {}) {
    const auto at = base.find("server: {listen: 127.0.0.1:0");
    ws.write_config(base.substr(0, at) + server + base.substr(base.find('\n', at)));
    return serve_check(ws, args);
  };
  auto loopback = with_server("server: {listen: 127.0.0.1:0}");
  EXPECT_EQ(loopback.first, 0) << loopback.second;
  auto wildcard = with_server("server: {listen: 0.0.0.0:8750}");
  EXPECT_EQ(wildcard.first, 1);
  EXPECT_NE(wildcard.second.find("wildcard address: set server.advertiseUrl"), std::string::npos) << wildcard.second;
  auto listen_flag = with_server("server: {listen: 127.0.0.1:8750}", {"--listen", "[::]:8750"});
  EXPECT_EQ(listen_flag.first, 1) << "--listen made it a wildcard: " << listen_flag.second;
  auto flag = with_server("server: {listen: 0.0.0.0:8750}", {"--advertise-url", "http://10.0.0.5:8750"});
  EXPECT_EQ(flag.first, 0) << flag.second;
  auto key = with_server("server: {listen: \"[::]:8750\", advertiseUrl: \"http://10.0.0.5:8750\"}");
  EXPECT_EQ(key.first, 0) << key.second;
  auto https = with_server("server: {listen: 0.0.0.0:8750, advertiseUrl: \"https://10.0.0.5:8750\"}");
  EXPECT_EQ(https.first, 1);
  EXPECT_NE(https.second.find("http://, as server.tls is not set"), std::string::npos) << https.second;
  auto https_flag = with_server("server: {listen: 0.0.0.0:8750}", {"--advertise-url", "https://10.0.0.5:8750"});
  EXPECT_EQ(https_flag.first, 1) << https_flag.second;
  auto path = with_server("server: {listen: 0.0.0.0:8750, advertiseUrl: \"http://10.0.0.5:8750/x\"}");
  EXPECT_EQ(path.first, 1) << path.second;
  // Without storage.postgres there is no other replica: a wildcard is fine.
  Workspace alone("server: {listen: 0.0.0.0:8750}");
  auto single = serve_check(alone, {});
  EXPECT_EQ(single.first, 0) << single.second;
}

// The address itself, derived: the scheme by server.tls, an IPv6 host in brackets.
TEST(SessionReplicasConfig, TheDerivedAddressIsTheListenAddressWithTheBoundPort) {
  policy::ServerConfig server;
  server.listen_host = "::1";
  EXPECT_EQ(*policy::advertised_url(server, 9000), "http://[::1]:9000");
  server.listen_host = "10.1.2.3";
  server.tls = policy::TlsConfig{};
  EXPECT_EQ(*policy::advertised_url(server, 8750), "https://10.1.2.3:8750");
  server.listen_host = "0.0.0.0";
  EXPECT_FALSE(policy::advertised_url(server, 8750));
  server.advertise_url = "https://airlock-0.internal:8750";
  EXPECT_EQ(*policy::advertised_url(server, 8750), "https://airlock-0.internal:8750");
}

}  // namespace
}  // namespace airlock::replicas_test
