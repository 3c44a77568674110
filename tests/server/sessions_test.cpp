// Issue #35 end to end: sessions against a real daemon (docs/sessions.md). Each test runs the
// attack or the misuse for real: another agent or user reaching a session, a secret split
// across two chunks of output, a session left idle or past its life, a quota, a reload that
// takes an owner's access away, a fork bomb beside another session.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "audit/log_reader.hpp"
#include "common/digest.hpp"
#include "corp_issuer.hpp"
#include "server_test_support.hpp"
#include "websocket_client.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("not in the config: " + from);
  return text.replace(at, from.size(), to);
}

constexpr const char* kTemplates = R"(
sessionTemplates:
  - name: dev
    description: A workspace
    limits: {memory: 256Mi, pids: 64, idleTimeout: 1h, maxLifetime: 2h, output: 64Ki}
    validation: {allowImports: [sys, matplotlib, matplotlib.pyplot]}
  - name: brief
    limits: {idleTimeout: 2s, maxLifetime: 1h}
  - name: mortal
    limits: {idleTimeout: 3s, maxLifetime: 3s}
  - name: quarter
    limits: {cpus: 0.25}
  - name: small
    limits: {disk: 64Mi}
)";

// This process's resident memory (the daemon runs in it), in KiB.
std::uint64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

// Sends a PUT with a chunked body of `total` bytes, generated as it goes (never held), and
// stops early when the daemon answers first; returns the answer's head and body.
std::string put_chunked(std::uint16_t port, const std::string& target, std::uint64_t total, std::uint64_t* sent) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return "";
  const std::string head = "PUT " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + kKey +
                           "\r\nTransfer-Encoding: chunked\r\nContent-Type: application/octet-stream\r\n\r\n";
  (void)::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  const std::string piece(1u << 20, 'z');
  char size_line[32];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", piece.size());
  *sent = 0;
  for (; *sent < total; *sent += piece.size()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) break;  // the daemon has answered
    const std::string chunk = size_line + piece + "\r\n";
    if (::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(chunk.size())) break;
  }
  if (*sent >= total) (void)::send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return answer;
}

class Sessions : public ::testing::Test {
 protected:
  void SetUp() override {
    auto corp = CorpIssuer::open(ws_.dir());
    ASSERT_TRUE(corp) << corp.error().message;
    corp_.emplace(std::move(*corp));
    ws_.rewrite(corp_sections("echo"), "");
    base_ = ws_.config_text();
    write();
  }
  // The workspace's config with the session templates and who may use them: `agent` every
  // template, `other` only dev; staff users dev and brief; the role `session-admin` manages.
  void write() {
    std::string yaml = base_;
    yaml = replaced(yaml, "    tools: [\"echo\"]\n", "    tools: [\"echo\"]\n    sessionTemplates: [dev]\n");
    yaml = replaced(yaml, "roles:\n", "roles:\n  - name: session-admin\n    rules:\n"
                                      "      - {effect: allow, actions: [manage_sessions], tools: [\"*\"]}\n");
    yaml = replaced(yaml, R"(actions: [invoke], tools: ["echo"]})",
                    R"(actions: [invoke, create_session], tools: ["echo"], sessionTemplates: [dev, brief, mortal, small]})");
    yaml = replaced(yaml, "bindings:\n", "bindings:\n  - role: session-admin\n    users: [{issuer: corp, claim: groups, value: admins}]\n");
    ws_.write_config(yaml + kTemplates + extra_);
  }
  void start() { daemon_.emplace(ws_); }
  // A session of `template_name` from its warm pool, which fills in the background after the
  // start: creations that came cold are ended and retried.
  Reply create_warm(const std::string& template_name) {
    for (int i = 0; i < 100; ++i) {
      auto made = create(template_name);
      if (made.status != 201 || made.json()["start"] == "warm") return made;
      EXPECT_EQ(made.json()["start"], "cold") << made.body;
      (void)http(port(), "DELETE", "/v1/sessions/" + std::string(made.json()["id"]));
      std::this_thread::sleep_for(100ms);
    }
    return Reply{};
  }
  Reply put_file(const std::string& id, const std::string& path, const std::string& content) {
    return http_with(port(), "PUT", "/v1/sessions/" + id + "/files/" + path, content, kKey,
                     {{"content-type", "application/octet-stream"}});
  }
  Reply get_file(const std::string& id, const std::string& path) {
    return http(port(), "GET", "/v1/sessions/" + id + "/files/" + path);
  }
  std::vector<json> file_records(const std::string& id, const std::string& event) const {
    std::vector<json> out;
    for (const auto& r : records("airlock.session/v1"))
      if (r["session_id"] == id && r["event"] == event) out.push_back(r["file"]);
    return out;
  }
  std::uint16_t port() const { return daemon_->port; }

  std::map<std::string, std::string> as_user(const std::string& sub, const json& groups = {"staff"}) const {
    return {{"airlock-subject-token", corp_->token(sub, groups)}};
  }
  Reply create(const std::string& tmpl, const std::string& key = kKey, const std::map<std::string, std::string>& h = {}) {
    return http_with(port(), "POST", "/v1/sessions", json{{"template", tmpl}}.dump(), key, h);
  }
  Reply exec(const std::string& id, const json& body, const std::string& key = kKey,
             std::map<std::string, std::string> h = {}) {
    h.emplace("accept", "application/json");
    return http_with(port(), "POST", "/v1/sessions/" + id + "/exec", body.dump(), key, h);
  }
  Reply code(const std::string& id, const std::string& cell, const std::string& timeout = "") {
    json body = {{"code", cell}};
    if (!timeout.empty()) body["timeout"] = timeout;
    return http_with(port(), "POST", "/v1/sessions/" + id + "/code", body.dump(), kKey, {});
  }
  // Every audit record's text, one after another.
  std::string audit_text() const {
    std::string out;
    auto reader = audit::LogReader::open(ws_.audit_path());
    if (!reader) return out;
    auto size = reader->size();
    for (std::uint64_t i = 0; size && i < *size; ++i)
      if (auto text = reader->record(i)) out += *text;
    return out;
  }
  // The audit records of this schema, oldest first.
  std::vector<json> records(const std::string& schema) const {
    std::vector<json> out;
    auto reader = audit::LogReader::open(ws_.audit_path());
    if (!reader) return out;
    auto size = reader->size();
    for (std::uint64_t i = 0; size && i < *size; ++i) {
      auto text = reader->record(i);
      if (!text) continue;
      auto r = json::parse(*text, nullptr, false);
      if (r.is_object() && r.value("schema", "") == schema) out.push_back(r);
    }
    return out;
  }
  struct Terminal {
    int status = 0;
    std::string body;  // a refusal's
    std::unique_ptr<WebSocketClient> socket;
  };
  Terminal open_terminal(const std::string& id, const std::string& key = kKey,
                         std::map<std::string, std::string> h = {}, const std::string& query = "") {
    h.emplace("authorization", "Bearer " + key);
    Terminal t;
    t.socket = WebSocketClient::open(port(), "/v1/sessions/" + id + "/terminal" + query, h, &t.status, &t.body);
    return t;
  }
  std::vector<json> terminal_records(const std::string& id, const std::string& event) const {
    std::vector<json> out;
    for (const auto& r : records("airlock.session/v1"))
      if (r["session_id"] == id && r["event"] == event) out.push_back(r["terminal"]);
    return out;
  }
  std::optional<json> ended_record(const std::string& id) const {
    for (const auto& r : records("airlock.session/v1"))
      if (r["session_id"] == id && r["event"] == "ended") return r;
    return std::nullopt;
  }

  Workspace ws_;
  std::optional<CorpIssuer> corp_;
  std::string base_;   // the workspace's config before write() adds sessions to it
  std::string extra_;  // sections after the templates
  std::optional<RunningDaemon> daemon_;
};

TEST_F(Sessions, StateLivesAcrossExecsAndDeleteEndsEverything) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  EXPECT_EQ(created.json()["state"], "running");
  EXPECT_EQ(created.json()["template"], "dev");

  auto wrote = exec(id, {{"command", "echo kept > /work/note && cd /tmp && sleep 60 > /dev/null 2>&1 &"}});
  ASSERT_EQ(wrote.status, 200) << wrote.body;
  EXPECT_EQ(wrote.json()["verdict"], "ok") << wrote.body;
  auto read = exec(id, {{"command", json::array({"cat", "/work/note"})}});
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(read.json()["stdout"], "kept\n");
  EXPECT_EQ(read.json()["exit_code"], 0);
  ASSERT_TRUE(read.json().contains("audit")) << read.body;
  auto background = exec(id, {{"command", "pgrep -x sleep >/dev/null && echo alive"}});
  EXPECT_EQ(background.json()["stdout"], "alive\n") << background.body;
  auto failing = exec(id, {{"command", "echo oops >&2; exit 3"}});
  EXPECT_EQ(failing.json()["verdict"], "exit_nonzero");
  EXPECT_EQ(failing.json()["exit_code"], 3);
  EXPECT_EQ(failing.json()["stderr"], "oops\n");

  auto ended = http(port(), "DELETE", "/v1/sessions/" + id);
  ASSERT_EQ(ended.status, 200) << ended.body;
  EXPECT_EQ(ended.json()["state"], "ended");
  EXPECT_EQ(ended.json()["end_reason"], "deleted");
  EXPECT_EQ(http(port(), "GET", "/v1/sessions/" + id).status, 404);
  EXPECT_EQ(exec(id, {{"command", "true"}}).status, 404);

  // The life in the audit log: created, each exec naming the session, ended with its reason.
  auto ended_rec = ended_record(id);
  ASSERT_TRUE(ended_rec);
  EXPECT_EQ((*ended_rec)["reason"], "deleted");
  EXPECT_EQ((*ended_rec)["usage"]["execs"], 4);
  int execs = 0;
  for (const auto& r : records("airlock.invocation/v1")) execs += r.value("session", "") == id;
  EXPECT_EQ(execs, 4);
}

// A template of risk high runs on the high tier's backend, gVisor here (docs/sessions.md): the
// session's execs see the Sentry's kernel, keep state in the workspace, and its end leaves
// nothing in the gVisor state directory.
TEST_F(Sessions, AHighRiskSessionRunsInGvisor) {
  if (::access("/usr/bin/runsc", X_OK) != 0) GTEST_SKIP() << "runsc is not installed: no gVisor tier here";
  extra_ = "  - name: sandboxed\n    risk: high\n    limits: {memory: 256Mi}\n"
           "  - name: netted\n    risk: high\n    limits: {memory: 256Mi}\n    network: {allow: [\"127.0.0.1:9\"]}\n";
  write();
  start();
  auto created = create("sandboxed");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  auto wrote = exec(id, {{"command", "echo kept > /work/note && uname -r"}});
  ASSERT_EQ(wrote.status, 200) << wrote.body;
  EXPECT_EQ(wrote.json()["verdict"], "ok") << wrote.body;
  EXPECT_EQ(wrote.json()["stdout"], "4.4.0\n") << "the Sentry's kernel, not the host's: " << wrote.body;
  auto read = exec(id, {{"command", json::array({"cat", "/work/note"})}});
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(read.json()["stdout"], "kept\n") << read.body;
  EXPECT_EQ(get_file(id, "note").body, "kept\n");
  EXPECT_EQ(put_file(id, "in", "from the api\n").status / 100, 2);
  EXPECT_EQ(exec(id, {{"command", "cat in"}}).json()["stdout"], "from the api\n");
  // A template with egress rules runs on --network=host: a snapshot with memory is refused
  // with the reason runsc gives (docs/sessions.md, "Checkpoint and restore on this machine").
  auto netted = create("netted");
  ASSERT_EQ(netted.status, 201) << netted.body;
  const std::string netted_id = netted.json()["id"];
  auto memory = http(port(), "POST", "/v1/sessions/" + netted_id + "/snapshot", json{{"memory", true}}.dump());
  EXPECT_EQ(memory.status, 501) << memory.body;
  EXPECT_EQ(memory.json()["error"]["kind"], "memory_snapshot_unsupported") << memory.body;
  EXPECT_NE(memory.body.find("checkpoint not supported when using hostinet"), std::string::npos) << memory.body;
  EXPECT_EQ(exec(netted_id, {{"command", "echo on"}}).json()["stdout"], "on\n");
  EXPECT_EQ(http(port(), "DELETE", "/v1/sessions/" + netted_id).status, 200);
  auto ended = http(port(), "DELETE", "/v1/sessions/" + id);
  ASSERT_EQ(ended.status, 200) << ended.body;
  EXPECT_EQ(ended.json()["end_reason"], "deleted");
  const std::string gvisor_dir = ws_.dir() + "/data/gvisor";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(gvisor_dir, ec))
    ADD_FAILURE() << "left after the end: " << entry.path();
}

// A gVisor session without egress rules snapshotted with memory: a new session from it has the
// original's processes with their memory (a token the process never wrote down) and its files;
// the original runs on; an image changed on disk is refused (snapshot_corrupt) and starts
// nothing; nothing is left once the sessions end. AIRLOCK_CKPT_MIB: the process also holds that
// many MiB, and the two calls' times are printed (bench/gvisor/session_checkpoint.sh).
TEST_F(Sessions, AGvisorSessionsMemoryComesBackInANewSession) {
  if (::access("/usr/bin/runsc", X_OK) != 0) GTEST_SKIP() << "runsc is not installed: no gVisor tier here";
  extra_ = "  - name: sandboxed\n    risk: high\n    limits: {memory: 256Mi}\n";
  write();
  start();
  auto created = create("sandboxed");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  const std::string holder =
      "cd /work && (python3 -c 'import os, secrets, time\nt = secrets.token_hex(16)\nb = bytearray(os.urandom(" +
      std::string(std::getenv("AIRLOCK_CKPT_MIB") ? std::getenv("AIRLOCK_CKPT_MIB") : "0") + " << 20))\nwhile True:\n"
      "    if os.path.exists(\"ask\"):\n        os.remove(\"ask\"); open(\"a.tmp\", \"w\").write(t); os.rename(\"a.tmp\", \"answer\")\n"
      "    time.sleep(0.05)' >/dev/null 2>&1 &) && echo kept > note && echo held";
  ASSERT_EQ(exec(id, {{"command", holder}}).json()["stdout"], "held\n");
  auto token_of = [&](const std::string& session) {
    return exec(session, {{"command", "cd /work && rm -f answer && touch ask && for i in $(seq 200); do test -s answer "
                                      "&& break; sleep 0.05; done; cat answer"}})
        .json()["stdout"].get<std::string>();
  };
  const std::string token = token_of(id);
  ASSERT_EQ(token.size(), 32u) << token;

  auto t0 = std::chrono::steady_clock::now();
  auto snap = http(port(), "POST", "/v1/sessions/" + id + "/snapshot", json{{"memory", true}}.dump());
  const auto snapshot_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  ASSERT_EQ(snap.status, 201) << snap.body;
  const std::string snap_id = snap.json()["id"];
  EXPECT_EQ(snap.json()["memory"], true) << snap.body;
  EXPECT_EQ(snap.json()["image_sha256"].get<std::string>().size(), 64u) << snap.body;
  const std::string image = ws_.dir() + "/data/snapshots/" + snap_id + ".image";
  EXPECT_EQ(std::filesystem::status(image).permissions(), std::filesystem::perms::owner_all);
  EXPECT_EQ(http(port(), "GET", "/v1/snapshots/" + snap_id).json()["memory"], true);

  t0 = std::chrono::steady_clock::now();
  auto restored = http(port(), "POST", "/v1/sessions", json{{"fromSnapshot", snap_id}}.dump());
  const auto restore_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  ASSERT_EQ(restored.status, 201) << restored.body;
  std::printf("api: snapshot with memory %lld ms, a session from it %lld ms\n", static_cast<long long>(snapshot_ms.count()),
              static_cast<long long>(restore_ms.count()));
  const std::string restored_id = restored.json()["id"];
  EXPECT_NE(restored_id, id);
  EXPECT_EQ(token_of(restored_id), token) << "the process came back with its memory";
  EXPECT_EQ(exec(restored_id, {{"command", "cat /work/note"}}).json()["stdout"], "kept\n");
  EXPECT_EQ(token_of(id), token) << "the original runs on";

  // An image changed on disk: refused, and no session starts.
  auto second = http(port(), "POST", "/v1/sessions/" + id + "/snapshot", json{{"memory", true}}.dump());
  ASSERT_EQ(second.status, 201) << second.body;
  const std::string tampered = second.json()["id"];
  {
    std::fstream img(ws_.dir() + "/data/snapshots/" + tampered + ".image/checkpoint.img",
                     std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(img.is_open());
    img.seekp(100);
    img.write("x", 1);
  }
  const auto open_before = http(port(), "GET", "/v1/sessions").json()["sessions"].size();
  auto refused = http(port(), "POST", "/v1/sessions", json{{"fromSnapshot", tampered}}.dump());
  EXPECT_EQ(refused.status, 500) << refused.body;
  EXPECT_EQ(refused.json()["error"]["kind"], "snapshot_corrupt") << refused.body;
  EXPECT_EQ(http(port(), "GET", "/v1/sessions").json()["sessions"].size(), open_before);

  EXPECT_EQ(http(port(), "DELETE", "/v1/sessions/" + restored_id).status, 200);
  EXPECT_EQ(http(port(), "DELETE", "/v1/sessions/" + id).status, 200);
  EXPECT_EQ(http(port(), "DELETE", "/v1/snapshots/" + snap_id).status, 200);
  EXPECT_FALSE(std::filesystem::exists(image)) << "a deleted snapshot's image goes with it";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(ws_.dir() + "/data/gvisor", ec))
    ADD_FAILURE() << "left after the end: " << entry.path();
}

// Another agent, another user of the same agent, the agent without its user, and a user
// calling directly: every one gets 404 on every endpoint, as for a session that does not exist.
TEST_F(Sessions, NobodyButItsOwnerReachesASession) {
  start();
  auto created = create("dev", kKey, as_user("alice"));
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  struct Intruder {
    const char* who;
    std::string key;
    std::map<std::string, std::string> headers;
  };
  std::vector<Intruder> intruders = {{"another agent", kOtherKey, {}},
                                     {"another agent, same user", kOtherKey, as_user("alice")},
                                     {"the agent for another user", kKey, as_user("bob")},
                                     {"the agent alone", kKey, {}},
                                     {"the user directly", corp_->token("alice", {"staff"}), {}}};
  for (const auto& in : intruders) {
    SCOPED_TRACE(in.who);
    EXPECT_EQ(http_with(port(), "GET", "/v1/sessions/" + id, "", in.key, in.headers).status, 404);
    EXPECT_EQ(exec(id, {{"command", "true"}}, in.key, in.headers).status, 404);
    EXPECT_EQ(http_with(port(), "DELETE", "/v1/sessions/" + id, "", in.key, in.headers).status, 404);
    EXPECT_EQ(http_with(port(), "GET", "/v1/sessions/" + id + "/files/", "", in.key, in.headers).status, 404);
    EXPECT_EQ(http_with(port(), "PUT", "/v1/sessions/" + id + "/files/x", "planted", in.key, in.headers).status, 404);
    EXPECT_EQ(open_terminal(id, in.key, in.headers).status, 404);
    EXPECT_EQ(http_with(port(), "POST", "/v1/sessions/" + id + "/code", R"({"code": "1"})", in.key, in.headers).status, 404);
    EXPECT_EQ(http_with(port(), "POST", "/v1/sessions/" + id + "/code/interrupt", "", in.key, in.headers).status, 404);
    auto list = http_with(port(), "GET", "/v1/sessions", "", in.key, in.headers);
    EXPECT_EQ(list.status, 200);
    EXPECT_TRUE(list.json()["sessions"].empty()) << list.body;
  }
  // The owner still has it, untouched.
  auto mine = http_with(port(), "GET", "/v1/sessions/" + id, "", kKey, as_user("alice"));
  ASSERT_EQ(mine.status, 200);
  EXPECT_EQ(mine.json()["owner"]["user"]["sub"], "alice");
  EXPECT_EQ(mine.json()["state"], "running");
  // A session manager lists and ends it, but cannot exec in it.
  const std::string admin = corp_->token("root", {"admins"});
  auto all = http_with(port(), "GET", "/v1/sessions", "", admin, {});
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(all.json()["sessions"].size(), 1u) << all.body;
  EXPECT_EQ(exec(id, {{"command", "true"}}, admin).status, 404);
  EXPECT_EQ(http_with(port(), "GET", "/v1/sessions/" + id + "/files/", "", admin, {}).status, 404);
  EXPECT_EQ(open_terminal(id, admin, {}).status, 404);
  EXPECT_EQ(http_with(port(), "POST", "/v1/sessions/" + id + "/code", R"({"code": "1"})", admin, {}).status, 404);
  EXPECT_EQ(http_with(port(), "DELETE", "/v1/sessions/" + id, "", admin, {}).status, 200);
}

TEST_F(Sessions, AccessAndTheSessionsQuotaDecideWhoCreates) {
  extra_ = "quotas: {default: {sessions: 2}}\n";
  write();
  start();
  EXPECT_EQ(create("no-such").status, 404);
  auto forbidden = create("brief", kOtherKey);  // other's sessionTemplates: [dev]
  EXPECT_EQ(forbidden.status, 403) << forbidden.body;
  auto user_forbidden = create("dev", kKey, as_user("mallory", {"guests"}));  // no role
  EXPECT_EQ(user_forbidden.status, 403) << user_forbidden.body;
  ASSERT_EQ(create("dev").status, 201);
  ASSERT_EQ(create("dev").status, 201);
  auto third = create("dev");
  EXPECT_EQ(third.status, 429) << third.body;
  EXPECT_EQ(third.json()["error"]["kind"], "quota_exceeded");
  EXPECT_EQ(third.json()["error"]["quota"], "sessions");
  EXPECT_EQ(create("dev", kOtherKey).status, 201);  // another principal's count
}

// `printf` writes the key in two chunks half a second apart: each chunk alone holds no whole
// key, and the stream scan still redacts it.
TEST_F(Sessions, ASecretSplitAcrossTwoChunksIsRedactedInTheStream) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201);
  const std::string id = created.json()["id"];
  auto streamed = http_with(port(), "POST", "/v1/sessions/" + id + "/exec",
                            json{{"command", "printf 'key AKIAZ7Q3PL'; sleep 0.5; printf 'DX4RS6TB2V done\\n'"}}.dump(),
                            kKey, {});
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(streamed.headers["content-type"], "text/event-stream");
  EXPECT_EQ(streamed.body.find("AKIAZ7Q3PL"), std::string::npos) << streamed.body;
  EXPECT_EQ(streamed.body.find("DX4RS6TB2V"), std::string::npos) << streamed.body;
  EXPECT_NE(streamed.body.find("event: stdout"), std::string::npos) << streamed.body;
  EXPECT_NE(streamed.body.find("REDACTED"), std::string::npos) << streamed.body;
  EXPECT_NE(streamed.body.find("done"), std::string::npos) << streamed.body;
  const auto exit_at = streamed.body.find("event: exit\ndata: ");
  ASSERT_NE(exit_at, std::string::npos) << streamed.body;
  auto exit = json::parse(streamed.body.substr(exit_at + 18, streamed.body.find('\n', exit_at + 18) - exit_at - 18));
  EXPECT_EQ(exit["verdict"], "ok");
  ASSERT_FALSE(exit["redactions"].empty()) << exit;
  EXPECT_EQ(exit["redactions"][0]["where"], "stdout");
}

TEST_F(Sessions, IdleTimeoutAndMaximumLifetimeEndThem) {
  start();
  auto idle = create("brief");
  auto mortal = create("mortal");
  ASSERT_EQ(idle.status, 201);
  ASSERT_EQ(mortal.status, 201);
  const std::string idle_id = idle.json()["id"], mortal_id = mortal.json()["id"];
  // An exec that runs past the session's life is ended with it.
  auto long_exec = std::async(std::launch::async, [&] { return exec(mortal_id, {{"command", "sleep 30"}, {"timeout", "60s"}}); });
  for (int i = 0; i < 100 && (http(port(), "GET", "/v1/sessions/" + idle_id).status != 404 ||
                              http(port(), "GET", "/v1/sessions/" + mortal_id).status != 404); ++i)
    std::this_thread::sleep_for(100ms);
  EXPECT_EQ(http(port(), "GET", "/v1/sessions/" + idle_id).status, 404);
  EXPECT_EQ(http(port(), "GET", "/v1/sessions/" + mortal_id).status, 404);
  auto cut = long_exec.get();
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(cut.json()["verdict"], "session_ended") << cut.body;
  ASSERT_TRUE(ended_record(idle_id));
  EXPECT_EQ((*ended_record(idle_id))["reason"], "idle_timeout");
  ASSERT_TRUE(ended_record(mortal_id));
  EXPECT_EQ((*ended_record(mortal_id))["reason"], "max_lifetime");
}

TEST_F(Sessions, AReloadThatTakesAwayAccessEndsTheOwnersSessions) {
  start();
  auto mine = create("brief");  // agent: every template
  auto others = create("dev", kOtherKey);
  auto users = create("dev", kKey, as_user("alice"));  // allowed by her group, not her sub
  ASSERT_EQ(mine.status, 201);
  ASSERT_EQ(others.status, 201);
  ASSERT_EQ(users.status, 201);
  ws_.write_config(replaced(ws_.config_text(), "    sessionTemplates: [\"*\"]\n", "    sessionTemplates: [dev]\n"));
  auto reloaded = daemon_->daemon->reload(policy::load_config(ws_.config_path()));
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  EXPECT_EQ(http(port(), "GET", "/v1/sessions/" + std::string(mine.json()["id"])).status, 404);
  ASSERT_TRUE(ended_record(mine.json()["id"]));
  EXPECT_EQ((*ended_record(mine.json()["id"]))["reason"], "access_revoked");
  EXPECT_EQ(http(port(), "GET", "/v1/sessions/" + std::string(others.json()["id"]), "", kOtherKey).status, 200);
  EXPECT_EQ(http_with(port(), "GET", "/v1/sessions/" + std::string(users.json()["id"]), "", kKey, as_user("alice")).status,
            200);
}

// A fork bomb in one session is stopped by its own process limit; the other session's execs
// all go through meanwhile, and a session cannot see another's files or processes.
TEST_F(Sessions, OneSessionsForkBombMemoryHogAndFilesStayItsOwn) {
  start();
  auto a = create("dev"), b = create("dev");
  ASSERT_EQ(a.status, 201) << a.body;
  ASSERT_EQ(b.status, 201);
  const std::string ida = a.json()["id"], idb = b.json()["id"];
  ASSERT_EQ(exec(ida, {{"command", "echo secret > /tmp/a-only; echo secret > /work/a-only"}}).json()["verdict"], "ok");
  auto bomb = std::async(std::launch::async, [&] {
    return exec(ida, {{"command", "bomb() { bomb | bomb & }; bomb; sleep 3"}, {"timeout", "10s"}});
  });
  for (int i = 0; i < 20; ++i) {
    auto r = exec(idb, {{"command", "ls /tmp /work; pgrep -c -x sh || true"}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["verdict"], "ok") << r.body;
    EXPECT_EQ(r.json()["stdout"].get<std::string>().find("a-only"), std::string::npos) << r.body;
  }
  bomb.get();
  // The bomb's session lives on: its processes were held at its limit, not the daemon's.
  EXPECT_EQ(http(port(), "GET", "/v1/sessions/" + ida).status, 200);

  // A memory hog in a third session (its template: 256Mi; not A, whose bomb still holds every
  // pid it may have) meets its own limit; B's execs go on meanwhile.
  auto c = create("dev");
  ASSERT_EQ(c.status, 201) << c.body;
  const std::string idc = c.json()["id"];
  auto hog = std::async(std::launch::async, [&] {
    return exec(idc, {{"command", json::array({"python3", "-c", "x = [bytearray(1 << 20) for _ in range(4096)]"})},
                      {"timeout", "30s"}});
  });
  for (int i = 0; i < 10; ++i) {
    auto r = exec(idb, {{"command", "echo fine"}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["stdout"], "fine\n") << r.body;
  }
  auto hogged = hog.get();
  ASSERT_EQ(hogged.status, 200) << hogged.body;
  EXPECT_NE(hogged.json()["verdict"], "ok") << hogged.body;  // killed (or failed) at C's limit
  EXPECT_EQ(exec(idb, {{"command", "echo still"}}).json()["stdout"], "still\n");
}

std::uint64_t cpu_ms(const Reply& r) {
  const auto usage = r.json()["usage"];
  return usage["cpu_user_ms"].get<std::uint64_t>() + usage["cpu_sys_ms"].get<std::uint64_t>();
}

// A session spinning in the background is paused: its CPU stops, execs are refused, the idle
// clock stops; resumed, it spins again.
TEST_F(Sessions, APausedSessionUsesNoCpu) {
  start();
  auto a = create("dev");
  ASSERT_EQ(a.status, 201) << a.body;
  const std::string id = a.json()["id"], path = "/v1/sessions/" + id;
  ASSERT_EQ(exec(id, {{"command", "sh -c 'while :; do :; done' >/dev/null 2>&1 &"}}).json()["verdict"], "ok");
  std::this_thread::sleep_for(300ms);
  auto paused = http(port(), "POST", path + "/pause");
  ASSERT_EQ(paused.status, 200) << paused.body;
  EXPECT_EQ(paused.json()["state"], "paused");
  const auto before = cpu_ms(http(port(), "GET", path));
  std::this_thread::sleep_for(1500ms);
  const auto after = cpu_ms(http(port(), "GET", path));
  EXPECT_LE(after - before, 20u) << "a frozen session kept running";
  auto refused = exec(id, {{"command", "true"}});
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.json()["error"]["kind"], "session_paused");
  EXPECT_EQ(http(port(), "POST", path + "/pause").status, 409);
  auto resumed = http(port(), "POST", path + "/resume");
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  std::this_thread::sleep_for(1000ms);
  EXPECT_GE(cpu_ms(http(port(), "GET", path)) - after, 300u) << "the resumed session does not run";
  EXPECT_EQ(exec(id, {{"command", "true"}}).json()["verdict"], "ok");
  // Paused again, it is still ended (thawed first) by DELETE.
  ASSERT_EQ(http(port(), "POST", path + "/pause").status, 200);
  EXPECT_EQ(http(port(), "DELETE", path).status, 200);
  std::vector<std::string> events;
  for (const auto& r : records("airlock.session/v1"))
    if (r["session_id"] == id) events.push_back(r["event"]);
  EXPECT_EQ(events, (std::vector<std::string>{"created", "paused", "resumed", "paused", "ended"}));
}

// limits.cpus: a busy loop for two seconds of wall time gets about a quarter of a core.
TEST_F(Sessions, TheCpuLimitThrottlesASession) {
  start();
  auto a = create("quarter");
  ASSERT_EQ(a.status, 201) << a.body;
  auto spun = exec(a.json()["id"], {{"command", "timeout 2 sh -c 'while :; do :; done'; true"}});
  ASSERT_EQ(spun.status, 200) << spun.body;
  const auto used = spun.json()["usage"]["cpu_user_ms"].get<std::uint64_t>() + spun.json()["usage"]["cpu_sys_ms"].get<std::uint64_t>();
  EXPECT_GT(used, 100u) << spun.body;
  EXPECT_LT(used, 1000u) << "2 s of spinning at 0.25 cpus: " << spun.body;
}

// This process's children named airlock-init: the inits of the sandboxes the daemon in it
// started (sessions and the warm pool's), not other tests' running beside it.
int own_session_inits() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    if (!std::getline(stat, text)) continue;
    const auto close = text.rfind(')');
    const auto open = text.find('(');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    std::string state;
    pid_t parent = 0;
    rest >> state >> parent;
    count += text.substr(open + 1, close - open - 1) == "airlock-init" && parent == ::getpid();
  }
  return count;
}

// A template's warm pool: a creation takes a sandbox started ahead of demand ("start": "warm"),
// never one another session used (its files, /tmp and processes are not there), never one
// started under a configuration a reload replaced, and nothing of the pool outlives the daemon.
TEST_F(Sessions, AWarmPoolHandsOutFreshSandboxesOfTheCurrentTemplate) {
  extra_ = "  - name: pooled\n    warmPool: 2\n    env: {FLAVOUR: first}\n";
  write();
  start();
  auto a = create_warm("pooled");
  ASSERT_EQ(a.status, 201) << a.body;
  const std::string a_id = a.json()["id"];
  auto dirtied = exec(a_id, {{"command", "echo a > /work/mark; echo a > /tmp/mark; sleep 300 > /dev/null 2>&1 &"}});
  ASSERT_EQ(dirtied.json()["verdict"], "ok") << dirtied.body;
  ASSERT_EQ(http(port(), "DELETE", "/v1/sessions/" + a_id).status, 200);

  auto b = create_warm("pooled");
  ASSERT_EQ(b.status, 201) << b.body;
  const std::string b_id = b.json()["id"];
  EXPECT_NE(b_id, a_id);
  auto looked = exec(b_id, {{"command", "ls -A /work /tmp; pgrep -x sleep; echo \"$FLAVOUR\""}});
  EXPECT_EQ(looked.json()["stdout"], "/tmp:\n\n/work:\nfirst\n") << looked.body;

  // A reload changes the template: every session from now on is of the new one, warm or not.
  ws_.write_config(replaced(ws_.config_text(), "FLAVOUR: first", "FLAVOUR: second"));
  auto reloaded = daemon_->daemon->reload(policy::load_config(ws_.config_path()));
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  for (int i = 0; i < 3; ++i) {
    auto c = create("pooled");
    ASSERT_EQ(c.status, 201) << c.body;
    auto flavour = exec(c.json()["id"], {{"command", "echo \"$FLAVOUR\""}});
    EXPECT_EQ(flavour.json()["stdout"], "second\n") << c.body;
  }
  EXPECT_EQ(create_warm("pooled").json()["start"], "warm");  // the new pool fills too

  daemon_.reset();  // its sessions and its ready sandboxes end with it
  EXPECT_EQ(own_session_inits(), 0);
}

// The code interpreter (issue #36): a cell's variables live on; a failing cell says what
// failed and where; the last expression's value comes back as JSON; a figure as a PNG.
TEST_F(Sessions, CodeCellsKeepTheirStateAndSayWhatWentWrong) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  auto first = code(id, "x = 41\nprint('hi')\nx + 1");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.json()["verdict"], "ok") << first.body;
  EXPECT_EQ(first.json()["stdout"], "hi\n");
  EXPECT_EQ(first.json()["result"]["json"], 42) << first.body;
  EXPECT_EQ(first.json()["interpreter"]["state"], "new");
  ASSERT_TRUE(first.json().contains("audit")) << first.body;

  auto again = code(id, "import sys\nsys.stderr.write('to stderr\\n')\n{'x': x}");
  EXPECT_EQ(again.json()["result"]["json"], json({{"x", 41}})) << again.body;
  EXPECT_EQ(again.json()["stderr"], "to stderr\n") << again.body;
  EXPECT_EQ(again.json()["interpreter"]["state"], "kept");

  auto failing = code(id, "def f():\n    return 1 / 0\nf()");
  ASSERT_EQ(failing.status, 200) << failing.body;
  EXPECT_EQ(failing.json()["verdict"], "exception");
  EXPECT_EQ(failing.json()["error"]["name"], "ZeroDivisionError") << failing.body;
  EXPECT_EQ(failing.json()["error"]["value"], "division by zero");
  EXPECT_NE(failing.json()["error"]["traceback"].dump().find("line 2, in f"), std::string::npos) << failing.body;
  EXPECT_EQ(failing.json()["error"]["traceback"].dump().find("airlock_interpreter"), std::string::npos) << failing.body;
  auto syntax = code(id, "x = 1\nif True print(1)");  // the validator parses it first: nothing runs
  EXPECT_EQ(syntax.status, 422) << syntax.body;
  EXPECT_NE(syntax.json()["error"]["message"].get<std::string>().find("syntax-error at line 2"), std::string::npos)
      << syntax.body;

  auto figure = code(id, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nNone");
  ASSERT_EQ(figure.json()["verdict"], "ok") << figure.body.substr(0, 2000);
  ASSERT_EQ(figure.json()["images"].size(), 1u) << figure.body.substr(0, 2000);
  EXPECT_EQ(figure.json()["images"][0]["type"], "image/png");
  EXPECT_EQ(figure.json()["images"][0]["data"].get<std::string>().rfind("iVBORw0KGgo", 0), 0u);  // the PNG signature

  int cells = 0;
  for (const auto& r : records("airlock.invocation/v1"))
    cells += r.value("session", "") == id && r["command"] == json::array({"python3", "<code cell>"});
  EXPECT_EQ(cells, 4);  // the rejected one ran nothing
}

// Each cell passes the validator first, and DLP never rewrites code: an e-mail address in a
// cell refuses it (the default), or it runs as written (its length is 14, not the 16 of
// [REDACTED:EMAIL]) and is reported (spec.code.onFinding: report).
TEST_F(Sessions, ACellIsValidatedFirstAndDlpNeverRewritesIt) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  auto rejected = code(id, "x = 1\neval('x')");
  ASSERT_EQ(rejected.status, 422) << rejected.body;
  EXPECT_EQ(rejected.json()["error"]["kind"], "code_rejected");
  EXPECT_NE(rejected.json()["error"]["message"].get<std::string>().find("line 2"), std::string::npos) << rejected.body;
  auto obfuscated = code(id, "getattr(__builtins__, 'ev' + 'al')('1')");
  EXPECT_EQ(obfuscated.status, 422) << obfuscated.body;

  // By default a finding in code refuses it, naming the detector and the line, never the value.
  auto refused = code(id, "x = 1\nlen('jane@corp.test')");
  ASSERT_EQ(refused.status, 422) << refused.body;
  EXPECT_EQ(refused.json()["error"]["kind"], "dlp_blocked");
  EXPECT_NE(refused.body.find("email (line 2)"), std::string::npos) << refused.body;
  EXPECT_EQ(refused.body.find("jane@corp.test"), std::string::npos) << refused.body;
  // spec.code.onFinding: report: it runs as written, and the finding comes back.
  std::ofstream(ws_.dir() + "/dlp.yaml") << "apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n  code: {onFinding: report}\n";
  ws_.write_config(ws_.config_text() + "dlp: {policy: dlp.yaml}\n");
  auto reloaded = daemon_->daemon->reload(policy::load_config(ws_.config_path()));
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  auto literal = code(id, "len('jane@corp.test')");
  ASSERT_EQ(literal.status, 200) << literal.body;
  EXPECT_EQ(literal.json()["result"]["json"], 14) << literal.body;
  ASSERT_EQ(literal.json()["dlp_findings"].size(), 1u) << literal.body;
  EXPECT_EQ(literal.json()["dlp_findings"][0]["detector"], "email");
  EXPECT_EQ(literal.json()["dlp_findings"][0]["where"], "code");
  EXPECT_EQ(literal.json()["dlp_findings"][0]["line"], 1);
  auto printed = code(id, "print('jane@corp.test')");
  EXPECT_EQ(printed.json()["stdout"].get<std::string>().find("jane@corp.test"), std::string::npos) << printed.body;
  // The record of the cell that ran with a finding names it (the detector and the line), never the datum.
  bool recorded = false;
  for (const auto& r : records("airlock.invocation/v1"))
    if (r.value("invocation_id", "") == literal.json()["invocation_id"]) {
      recorded = true;
      EXPECT_EQ(r["dlp_findings"], json::parse(R"([{"detector": "email", "line": 1}])")) << r.dump();
      EXPECT_EQ(r.dump().find("jane@corp.test"), std::string::npos) << r.dump();
    }
  EXPECT_TRUE(recorded);
}

// interpreter.start: ahead: each ready sandbox of the pool has its interpreter up, with the
// template's preload modules imported, before a creation takes it; what a cell of one session
// left in its interpreter is never in the next session's.
TEST_F(Sessions, AnInterpreterStartedAheadIsTheSessionsOwn) {
  // A module of the template's (on its PYTHONPATH) that leaves a mark when it is imported.
  std::filesystem::create_directories(ws_.dir() + "/mods");
  std::ofstream(ws_.dir() + "/mods/marker.py") << "open('/tmp/preloaded', 'w').close()\n";
  extra_ = "  - name: notebook\n    warmPool: 1\n    dataPaths: [" + ws_.dir() + "/mods:/mods]\n" +
           "    env: {PYTHONPATH: /mods}\n    interpreter: {start: ahead, preload: [marker, json, matplotlib.pyplot]}\n";
  write();
  start();
  std::string previous;
  for (int round = 0; round < 2; ++round) {
    auto made = create_warm("notebook");
    ASSERT_EQ(made.status, 201) << made.body;
    const std::string id = made.json()["id"];
    EXPECT_NE(id, previous);
    // Before any cell: the interpreter runs and imports its preload modules on its own. (A
    // creation hands over the sandbox once the interpreter runs, not once its imports are
    // done: the mark may take a moment on a slow machine; the first cell waits for "ready".)
    auto mapped = exec(id, {{"command", "ls /tmp; pgrep -fc 'matplotlib[.]pyplot'"}});
    for (int i = 0; i < 100 && mapped.json()["stdout"] != "preloaded\n1\n"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      mapped = exec(id, {{"command", "ls /tmp; pgrep -fc 'matplotlib[.]pyplot'"}});
    }
    EXPECT_EQ(mapped.json()["stdout"], "preloaded\n1\n") << mapped.body;
    auto first = code(id, "try:\n    left\n    seen = True\nexcept NameError:\n    seen = False\nseen");
    ASSERT_EQ(first.json()["verdict"], "ok") << first.body;
    EXPECT_EQ(first.json()["interpreter"], json({{"state", "new"}, {"start", "ahead"}})) << first.body;
    EXPECT_EQ(first.json()["result"]["json"], false) << first.body;  // nothing of the session before
    EXPECT_EQ(code(id, "left = 1").json()["verdict"], "ok");
    EXPECT_EQ(code(id, "left").json()["interpreter"]["state"], "kept");
    ASSERT_EQ(http(port(), "DELETE", "/v1/sessions/" + id).status, 200);
    previous = id;
  }
  // A preload module that is not there: the cell says which and why; nothing else ran.
  ws_.write_config(replaced(ws_.config_text(), "preload: [marker, json, matplotlib.pyplot]", "preload: [no_such_module]"));
  auto reloaded = daemon_->daemon->reload(policy::load_config(ws_.config_path()));
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  auto broken = create("notebook");
  ASSERT_EQ(broken.status, 201) << broken.body;
  auto failed = code(broken.json()["id"], "1");
  EXPECT_EQ(failed.json()["verdict"], "interpreter_failed") << failed.body;
  EXPECT_NE(failed.json().value("message", "").find("preload no_such_module: ModuleNotFoundError"), std::string::npos)
      << failed.body;
}

// An interrupt stops the cell and keeps the interpreter; a timeout ends it, and says so.
TEST_F(Sessions, AnInterruptKeepsTheStateAndATimeoutLosesIt) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  ASSERT_EQ(code(id, "y = 5").json()["verdict"], "ok");
  auto spinning = std::async(std::launch::async, [&] { return code(id, "import time\nwhile True:\n    time.sleep(0.05)"); });
  Reply interrupted;
  for (int i = 0; i < 100; ++i) {  // until the cell runs
    std::this_thread::sleep_for(100ms);
    interrupted = http(port(), "POST", "/v1/sessions/" + id + "/code/interrupt");
    if (interrupted.json().value("interrupted", false)) break;
  }
  EXPECT_TRUE(interrupted.json().value("interrupted", false)) << interrupted.body;
  auto stopped = spinning.get();
  EXPECT_EQ(stopped.json()["error"]["name"], "KeyboardInterrupt") << stopped.body;
  EXPECT_EQ(code(id, "y").json()["result"]["json"], 5);

  auto busy = std::async(std::launch::async, [&] { return code(id, "import time\ntime.sleep(2)"); });
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(code(id, "1").status, 409);  // one cell at a time
  busy.get();

  auto timed_out = code(id, "while True:\n    pass", "1s");
  EXPECT_EQ(timed_out.json()["verdict"], "timeout") << timed_out.body;
  EXPECT_EQ(timed_out.json()["interpreter"]["state"], "lost");
  auto fresh = code(id, "y");
  EXPECT_EQ(fresh.json()["error"]["name"], "NameError") << fresh.body;
  EXPECT_EQ(fresh.json()["interpreter"]["state"], "new");
}

TEST_F(Sessions, ShutdownEndsEverySessionAndRecordsIt) {
  start();
  auto a = create("dev");
  ASSERT_EQ(a.status, 201) << a.body;
  const std::string id = a.json()["id"];
  daemon_.reset();
  ASSERT_TRUE(ended_record(id));
  EXPECT_EQ((*ended_record(id))["reason"], "shutdown");
}

TEST_F(Sessions, FilesGoInAndOutThroughDlpAndEachIsRecorded) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  auto put = put_file(id, "src/app.py", "print('hi')\n");
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.json()["path"], "src/app.py");
  EXPECT_EQ(put.json()["size"], 12);
  EXPECT_EQ(put.json()["sha256"], sha256_hex("print('hi')\n"));
  EXPECT_EQ(exec(id, {{"command", "python3 /work/src/app.py"}}).json()["stdout"], "hi\n");
  auto got = get_file(id, "src/app.py");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.headers["content-type"], "application/octet-stream");
  EXPECT_EQ(got.body, "print('hi')\n");
  // A directory is its listing; a name needs percent-encoding in the URL.
  ASSERT_EQ(put_file(id, "src/a%20b.txt", "x").status, 200);
  auto listing = get_file(id, "src/");
  ASSERT_EQ(listing.status, 200) << listing.body;
  EXPECT_EQ(listing.json()["type"], "directory");
  std::set<std::string> names;
  const json entries = listing.json()["entries"];
  for (const auto& e : entries) names.insert(e["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"app.py", "a b.txt"})) << listing.body;
  // A secret the session wrote is redacted on its way out, small or streamed.
  // (Written in two halves: the command itself goes through DLP, and a whole key in it would
  // be redacted before it ran.)
  auto secret = exec(id, {{"command", "printf 'key AKIAZ7Q3PL' > /work/creds; printf 'DX4RS6TB2V\\n' >> /work/creds; "
                                      "head -c 3000000 /dev/zero | tr '\\0' a > /work/big; cat /work/creds >> /work/big"}});
  ASSERT_EQ(secret.json()["verdict"], "ok") << secret.body;
  auto creds = get_file(id, "creds");
  ASSERT_EQ(creds.status, 200);
  EXPECT_EQ(creds.body.find("DX4RS6TB2V"), std::string::npos) << creds.body;
  EXPECT_EQ(exec(id, {{"command", "grep -c DX4RS6TB2V /work/creds"}}).json()["stdout"], "1\n");  // it is there
  EXPECT_NE(creds.body.find("REDACTED"), std::string::npos) << creds.body;
  auto big = get_file(id, "big");  // over 1 MiB: streamed (chunked)
  ASSERT_EQ(big.status, 200);
  EXPECT_EQ(big.headers["transfer-encoding"], "chunked");
  EXPECT_GT(big.body.size(), 3000000u);
  EXPECT_EQ(big.body.find("DX4RS6TB2V"), std::string::npos);
  EXPECT_NE(big.body.find("REDACTED"), std::string::npos);
  // An upload replaces a file only once complete; a directory; DELETE.
  ASSERT_EQ(put_file(id, "src/app.py", "print('v2')\n").status, 200);
  EXPECT_EQ(get_file(id, "src/app.py").body, "print('v2')\n");
  EXPECT_EQ(http(port(), "PUT", "/v1/sessions/" + id + "/files/out/logs/").status, 200);
  EXPECT_EQ(exec(id, {{"command", "test -d /work/out/logs && echo dir"}}).json()["stdout"], "dir\n");
  EXPECT_EQ(http(port(), "DELETE", "/v1/sessions/" + id + "/files/src/app.py").status, 200);
  auto missing = get_file(id, "src/app.py");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json()["error"]["kind"], "file_not_found");
  EXPECT_EQ(http(port(), "DELETE", "/v1/sessions/" + id + "/files/src").status, 409);  // not empty
  EXPECT_EQ(exec(id, {{"command", "ls -A /work/src"}}).json()["stdout"], "a b.txt\n");  // no upload left behind
  // Each one is in the audit log, with what was written or sent.
  auto written = file_records(id, "file_written");
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[0]["path"], "src/app.py");
  EXPECT_EQ(written[0]["sha256"], sha256_hex("print('hi')\n"));
  auto read = file_records(id, "file_read");
  ASSERT_GE(read.size(), 4u);
  bool redaction_recorded = false;
  for (const auto& r : read) redaction_recorded |= r["path"] == "creds" && !r["redactions"].empty();
  EXPECT_TRUE(redaction_recorded) << json(read).dump();
  EXPECT_EQ(file_records(id, "file_removed").size(), 2u);
}

// The files API is a way in for a hostile caller and a hostile session alike: `..` in the
// URL, percent-encoded or not, and symlinks the session planted to `/`, to /tmp, to the host's
// files. None of them reaches anything outside the workspace.
TEST_F(Sessions, FilesApiPathsCannotLeaveTheWorkspace) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  auto planted = exec(id, {{"command", "echo session-secret > /tmp/secret; ln -s / /work/root; ln -s /tmp /work/up; "
                                       "ln -s ../../etc/shadow /work/shadow; echo ok"}});
  ASSERT_EQ(planted.json()["stdout"], "ok\n") << planted.body;
  const std::string files = "/v1/sessions/" + id + "/files/";
  for (const std::string path : {"../../etc/shadow", "%2e%2e/%2e%2e/etc/shadow", "a/%2E%2E/%2e%2e/etc/passwd",
                                 "..%2f..%2fetc%2fshadow", "%2"}) {
    auto r = http(port(), "GET", files + path);
    EXPECT_EQ(r.status, 400) << path << ": " << r.body;
    EXPECT_EQ(r.json()["error"]["kind"], "invalid_path") << path;
  }
  for (const std::string path : {"root/etc/shadow", "root/etc/passwd", "up/secret", "shadow", "root/"}) {
    auto r = http(port(), "GET", files + path);
    EXPECT_EQ(r.status, 403) << path << ": " << r.body;
    EXPECT_EQ(r.json()["error"]["kind"], "outside_workspace") << path;
    EXPECT_EQ(r.body.find("session-secret"), std::string::npos);
    EXPECT_EQ(r.body.find("root:"), std::string::npos);
  }
  auto through = put_file(id, "up/planted", "x");
  EXPECT_EQ(through.status, 403) << through.body;
  EXPECT_EQ(http(port(), "DELETE", files + "up/secret").status, 403);
  EXPECT_EQ(exec(id, {{"command", "ls /tmp; cat /tmp/secret"}}).json()["stdout"], "secret\nsession-secret\n");
}

// The body is streamed into the session as it arrives, through a pipe, and stops at the
// template's disk limit (64 MiB): the daemon never holds it.
TEST_F(Sessions, AThreeGibUploadIsRefusedAtTheDiskLimitWithTheDaemonsMemoryFlat) {
  start();
  auto created = create("small");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  const std::string target = "/v1/sessions/" + id + "/files/huge.bin";
  // Declared up front: refused before a byte of the body is read.
  auto declared = http_with(port(), "PUT", target, "", kKey, {{"content-length", "3221225472"}});
  EXPECT_EQ(declared.status, 413);
  EXPECT_EQ(declared.json()["error"]["kind"], "disk_limit");
  // Chunked, without a length: streamed until the disk is full. The memory is sampled throughout.
  std::atomic<bool> uploading{true};
  std::atomic<std::uint64_t> peak_kib{0};
  const std::uint64_t before_kib = resident_kib();
  std::thread sampler([&] {
    while (uploading) {
      peak_kib = std::max<std::uint64_t>(peak_kib, resident_kib());
      std::this_thread::sleep_for(5ms);
    }
  });
  std::uint64_t sent = 0;
  const std::string answer = put_chunked(port(), target, 3ULL << 30, &sent);
  uploading = false;
  sampler.join();
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer.substr(0, 300);
  EXPECT_NE(answer.find("disk_limit"), std::string::npos) << answer.substr(0, 300);
  EXPECT_GE(sent, 64ULL << 20) << "refused before the disk was full";
  EXPECT_LT(sent, 1ULL << 30) << "the daemon read far past the limit";
  EXPECT_LT(peak_kib - std::min(peak_kib.load(), before_kib), 48u * 1024) << "the upload was held in memory";
  // Nothing is left of it, and the session goes on with its disk free again.
  auto after = exec(id, {{"command", "ls -A /work; head -c 1048576 /dev/zero > /work/fits && echo fits"}});
  EXPECT_EQ(after.json()["stdout"], "fits\n") << after.body;
  auto record = file_records(id, "file_written");
  ASSERT_EQ(record.size(), 1u);
  EXPECT_EQ(record[0]["outcome"], "disk_limit");
}

// Snapshot then create is a fork: the workspace's files (and links) come along, not its
// processes or its /tmp; the two go separate ways; only the owner reaches the snapshot; a
// snapshot whose archive was changed on disk is refused, and leaves no session behind.
TEST_F(Sessions, ASnapshotForksTheWorkspaceForItsOwnerOnly) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  auto made = exec(id, {{"command", "mkdir -p /work/dir && echo one > /work/a.txt && echo two > /work/dir/b && "
                                    "ln -s dir/b /work/link && echo gone > /tmp/scratch && (sleep 300 >/dev/null 2>&1 &) && echo ok"}});
  ASSERT_EQ(made.json()["stdout"], "ok\n") << made.body;
  auto snap = http(port(), "POST", "/v1/sessions/" + id + "/snapshot", json{{"retention", "1h"}}.dump());
  ASSERT_EQ(snap.status, 201) << snap.body;
  const std::string snap_id = snap.json()["id"];
  EXPECT_EQ(snap.json()["session_id"], id);
  EXPECT_EQ(snap.json()["template"], "dev");
  EXPECT_EQ(snap.json()["sha256"].get<std::string>().size(), 64u);
  EXPECT_GT(snap.json()["bytes"].get<std::uint64_t>(), 0u);

  auto fork = http(port(), "POST", "/v1/sessions", json{{"fromSnapshot", snap_id}}.dump());
  ASSERT_EQ(fork.status, 201) << fork.body;
  const std::string fork_id = fork.json()["id"];
  EXPECT_EQ(fork.json()["template"], "dev");
  auto inside = exec(fork_id, {{"command", "cat /work/a.txt /work/link; readlink /work/link; "
                                           "test -e /tmp/scratch || echo no-tmp; pgrep -x sleep || echo no-process"}});
  EXPECT_EQ(inside.json()["stdout"], "one\ntwo\ndir/b\nno-tmp\nno-process\n") << inside.body;
  ASSERT_EQ(exec(fork_id, {{"command", "echo changed > /work/a.txt"}}).status, 200);
  EXPECT_EQ(exec(id, {{"command", "cat /work/a.txt"}}).json()["stdout"], "one\n");  // separate ways

  // In the audit log: the snapshot taken, and the session started from it.
  bool snapshotted = false, forked = false;
  for (const auto& r : records("airlock.session/v1")) {
    snapshotted |= r["event"] == "snapshotted" && r["session_id"] == id && r["snapshot"]["id"] == snap_id;
    forked |= r["event"] == "created" && r["session_id"] == fork_id && r["snapshot"]["id"] == snap_id;
  }
  EXPECT_TRUE(snapshotted);
  EXPECT_TRUE(forked);

  // Nobody else sees, forks or deletes it.
  auto others = http_with(port(), "GET", "/v1/snapshots", "", kOtherKey, {});
  ASSERT_EQ(others.status, 200);
  EXPECT_TRUE(others.json()["snapshots"].empty()) << others.body;
  EXPECT_EQ(http_with(port(), "GET", "/v1/snapshots/" + snap_id, "", kOtherKey, {}).status, 404);
  EXPECT_EQ(http_with(port(), "POST", "/v1/sessions", json{{"fromSnapshot", snap_id}}.dump(), kOtherKey, {}).status, 404);
  EXPECT_EQ(http_with(port(), "DELETE", "/v1/snapshots/" + snap_id, "", kOtherKey, {}).status, 404);
  EXPECT_EQ(http_with(port(), "POST", "/v1/sessions/" + id + "/snapshot", "", kOtherKey, {}).status, 404);
  auto mine = http(port(), "GET", "/v1/snapshots");
  ASSERT_EQ(mine.json()["snapshots"].size(), 1u) << mine.body;

  // An archive changed on disk does not restore.
  auto second = http(port(), "POST", "/v1/sessions/" + id + "/snapshot");
  ASSERT_EQ(second.status, 201) << second.body;
  const std::string tampered = second.json()["id"];
  {
    std::fstream archive(ws_.dir() + "/data/snapshots/" + tampered + ".tar", std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(archive.is_open());
    archive.seekp(0);
    archive.write("x", 1);
  }
  const auto open_before = http(port(), "GET", "/v1/sessions").json()["sessions"].size();
  auto refused = http(port(), "POST", "/v1/sessions", json{{"fromSnapshot", tampered}}.dump());
  EXPECT_EQ(refused.status, 500) << refused.body;
  EXPECT_EQ(refused.json()["error"]["kind"], "snapshot_corrupt") << refused.body;
  EXPECT_EQ(http(port(), "GET", "/v1/sessions").json()["sessions"].size(), open_before);

  EXPECT_EQ(http(port(), "DELETE", "/v1/snapshots/" + snap_id).status, 200);
  EXPECT_EQ(http(port(), "POST", "/v1/sessions", json{{"fromSnapshot", snap_id}}.dump()).status, 404);
  EXPECT_FALSE(std::filesystem::exists(ws_.dir() + "/data/snapshots/" + snap_id + ".tar"));
}

// A snapshot asked with memory is refused with the backend's reason (a local session: CRIU fails
// on this kernel's vDSO), never taken of the files alone in its place: no snapshot, no archive,
// no record. The session runs on, and a snapshot without memory is still taken.
TEST_F(Sessions, AMemorySnapshotIsRefusedWithTheBackendsReason) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  ASSERT_EQ(exec(id, {{"command", "echo one > /work/a.txt"}}).status, 200);
  auto memory = http(port(), "POST", "/v1/sessions/" + id + "/snapshot", json{{"memory", true}, {"retention", "1h"}}.dump());
  EXPECT_EQ(memory.status, 501) << memory.body;
  EXPECT_EQ(memory.json()["error"]["kind"], "memory_snapshot_unsupported") << memory.body;
  EXPECT_NE(memory.body.find("CRIU"), std::string::npos) << memory.body;
  EXPECT_NE(memory.body.find("vDSO"), std::string::npos) << memory.body;
  EXPECT_TRUE(http(port(), "GET", "/v1/snapshots").json()["snapshots"].empty());
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(ws_.dir() + "/data/snapshots", ec))
    ADD_FAILURE() << "left by a refused snapshot: " << entry.path();
  for (const auto& r : records("airlock.session/v1")) EXPECT_NE(r["event"], "snapshotted") << r.dump();

  auto wrong = http(port(), "POST", "/v1/sessions/" + id + "/snapshot", json{{"memory", "yes"}}.dump());
  EXPECT_EQ(wrong.status, 400) << wrong.body;
  EXPECT_EQ(exec(id, {{"command", "cat /work/a.txt"}}).json()["stdout"], "one\n");
  auto files = http(port(), "POST", "/v1/sessions/" + id + "/snapshot", json{{"memory", false}}.dump());
  EXPECT_EQ(files.status, 201) << files.body;
}

// A snapshot outlives the daemon that took it (and the session): the next daemon lists it
// and forks from it.
TEST_F(Sessions, ASnapshotOutlivesItsDaemon) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  ASSERT_EQ(put_file(id, "kept.txt", "across restarts").status, 200);
  auto snap = http(port(), "POST", "/v1/sessions/" + id + "/snapshot");
  ASSERT_EQ(snap.status, 201) << snap.body;
  const std::string snap_id = snap.json()["id"];
  daemon_.reset();
  start();
  auto listed = http(port(), "GET", "/v1/snapshots/" + snap_id);
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(listed.json()["sha256"], snap.json()["sha256"]);
  auto fork = http(port(), "POST", "/v1/sessions", json{{"fromSnapshot", snap_id}}.dump());
  ASSERT_EQ(fork.status, 201) << fork.body;
  EXPECT_EQ(get_file(fork.json()["id"], "kept.txt").body, "across restarts");
}

TEST_F(Sessions, MalformedRequestsAreRefusedAndLeaveTheSessionIdle) {
  start();
  auto a = create("dev");
  ASSERT_EQ(a.status, 201) << a.body;
  const std::string id = a.json()["id"];
  auto plain = http(port(), "GET", "/v1/sessions/" + id + "/terminal");
  EXPECT_EQ(plain.status, 426) << plain.body;
  EXPECT_EQ(plain.json()["error"]["kind"], "upgrade_required");
  EXPECT_EQ(open_terminal(id, kKey, {}, "?rows=0").status, 400);
  EXPECT_EQ(open_terminal(id, kKey, {}, "?cols=99999").status, 400);
  EXPECT_EQ(open_terminal(id, kKey, {}, "?term=x%20y").status, 400);
  EXPECT_EQ(exec(id, {{"command", json::array()}}).status, 400);
  EXPECT_EQ(exec(id, {{"command", "true"}, {"shell", true}}).status, 400);
  EXPECT_EQ(exec(id, {{"command", json::array({"/no/such"})}}).status, 422);
  EXPECT_EQ(http(port(), "GET", "/v1/sessions/" + id).json()["running_execs"], 0);  // it can go idle
}

// A shell for a person: its window size, a resize, ^C stopping what runs in the foreground,
// a control message it does not know refused without ending it, a secret the shell prints
// redacted before it reaches the client, and its exit: told to the client, then two records
// that give the sizes and digests of what was typed and shown (never the text).
TEST_F(Sessions, ATerminalIsAShellForItsOwnerWithResizeCtrlCAndDlp) {
  start();
  auto created = create("dev", kKey, as_user("alice"));
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  auto t = open_terminal(id, kKey, as_user("alice"), "?rows=30&cols=100&command=PS1%3D%27%24%20%27%20exec%20sh%20-i");
  ASSERT_TRUE(t.socket) << t.status << " " << t.body;
  auto& tty = *t.socket;
  tty.send_binary("tty; stty size; echo $TERM; echo MARK-$((1+1))\n");
  auto shown = tty.read_until("MARK-2", 10s);
  EXPECT_NE(shown.find("/dev/pts/0\r\n30 100\r\nxterm-256color\r\nMARK-2"), std::string::npos) << shown;

  tty.send_text({{"type", "resize"}, {"rows", 50}, {"cols", 120}});
  tty.send_text({{"type", "teleport"}});
  tty.send_binary("stty size; echo MARK-$((2+1))\n");
  shown = tty.read_until("MARK-3", 10s);
  EXPECT_NE(shown.find("50 120\r\nMARK-3"), std::string::npos) << shown;
  ASSERT_FALSE(tty.texts().empty());
  EXPECT_EQ(tty.texts().front()["type"], "error") << tty.texts().front();

  tty.send_binary("sleep 1000\n");
  (void)tty.read_until("sleep 1000\r\n", 5s);
  std::this_thread::sleep_for(300ms);
  tty.send_binary("\x03");
  tty.send_binary("echo MARK-$((3+1)) $?\n");
  shown = tty.read_until("MARK-4", 10s);
  EXPECT_NE(shown.find("MARK-4 130"), std::string::npos) << "^C did not stop the sleep: " << shown;

  tty.send_binary("printf 'key AKIAZ7Q3PL'; printf 'DX4RS6TB2V done\\n'; echo MARK-$((4+1))\n");
  shown = tty.read_until("MARK-5", 10s);
  EXPECT_EQ(shown.find("AKIAZ7Q3PLDX4RS6TB2V"), std::string::npos) << shown;
  EXPECT_NE(shown.find("REDACTED"), std::string::npos) << shown;

  tty.send_binary("exit 3\n");
  EXPECT_TRUE(tty.read_to_close(10s));
  EXPECT_EQ(tty.close_code(), 1000);
  ASSERT_FALSE(tty.texts().empty());
  const json exit = tty.texts().back();
  EXPECT_EQ(exit["type"], "exit") << exit;
  EXPECT_EQ(exit["verdict"], "exit_nonzero") << exit;
  EXPECT_EQ(exit["exit_code"], 3) << exit;
  EXPECT_FALSE(exit["redactions"].empty()) << exit;

  auto opened = terminal_records(id, "terminal_opened");
  auto closed = terminal_records(id, "terminal_closed");
  ASSERT_EQ(opened.size(), 1u);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(opened[0]["id"], closed[0]["id"]);
  EXPECT_EQ(opened[0]["rows"], 30);
  EXPECT_EQ(closed[0]["verdict"], "exit_nonzero");
  EXPECT_GT(closed[0]["input"]["bytes"].get<int>(), 50);
  EXPECT_EQ(closed[0]["input"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_GT(closed[0]["output"]["bytes"].get<int>(), 50);
  EXPECT_EQ(audit_text().find("DX4RS6TB2V"), std::string::npos);
  EXPECT_EQ(http(port(), "GET", "/v1/sessions/" + id, "", kKey).status, 404);  // alice's, not the agent's alone
  auto after = http_with(port(), "GET", "/v1/sessions/" + id, "", kKey, as_user("alice"));
  EXPECT_EQ(after.json()["running_execs"], 0) << after.body;
}

// A client that vanishes without a close frame: the terminal hangs up (the shell and what it
// runs in the foreground end, as on a dropped SSH connection), its record says client_gone,
// and the session goes on.
TEST_F(Sessions, ATerminalWhoseClientVanishesIsHungUp) {
  start();
  auto created = create("dev");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  auto t = open_terminal(id);
  ASSERT_TRUE(t.socket) << t.status << " " << t.body;
  t.socket->send_binary("sleep 1001; echo MARK-$((1+1))\n");
  (void)t.socket->read_until("sleep 1001", 5s);
  std::this_thread::sleep_for(300ms);
  ASSERT_NE(exec(id, {{"command", "pgrep -f 'sleep 100[1]'"}}).json()["stdout"], "");
  t.socket->drop();
  std::optional<json> closed;
  for (int i = 0; i < 100 && !closed; ++i) {
    auto found = terminal_records(id, "terminal_closed");
    if (!found.empty()) closed = found[0];
    else std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(closed) << "the terminal was not closed";
  EXPECT_EQ((*closed)["verdict"], "client_gone") << *closed;
  auto left = exec(id, {{"command", "pgrep -f 'sleep 100[1]' || echo none"}});
  EXPECT_EQ(left.json()["stdout"], "none\n") << left.body;
}

}  // namespace
}  // namespace airlock::server::test
