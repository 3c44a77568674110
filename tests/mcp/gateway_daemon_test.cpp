// The gateway through the daemon: third-party MCP servers from npm (and a hostile one of our
// own) in their sandboxes, their tools in the registry as "<server>.<tool>", each call through
// the whole pipeline. Every test runs a real attack and asserts it failed.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "audit/log_reader.hpp"
#include "common/digest.hpp"
#include "creds/lease_store.hpp"
#include "creds/secret_store.hpp"
#include "identity/signer.hpp"
#include "mcp/pin_store.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

namespace fs = std::filesystem;

std::string node_modules() { return fs::canonical(AIRLOCK_MCP_NODE_MODULES).string(); }

// Where the servers see the npm packages (read-only): as `npm ci` laid them out.
constexpr const char* kModulesInside = "/opt/mcp/node_modules";

std::string filesystem_server() {
  return std::string(kModulesInside) + "/@modelcontextprotocol/server-filesystem/dist/index.js";
}

// Polls GET /v1/tools until `tool` is listed (the first listing runs once the daemon serves).
bool wait_for_tool(std::uint16_t port, const std::string& tool, const std::string& key = kKey,
                   bool present = true) {
  for (int i = 0; i < 600; ++i) {
    auto r = http(port, "GET", "/v1/tools", "", key);
    bool found = false;
    for (const auto& t : r.json().value("tools", nlohmann::json::array()))
      if (t.value("name", "") == tool) found = true;
    if (found == present) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// Processes on this host whose command line holds `marker` (the servers this test started).
// readdir, not a directory_iterator: processes come and go while /proc is read.
int processes_with(const std::string& marker) {
  int n = 0;
  DIR* proc = ::opendir("/proc");
  if (!proc) return -1;
  while (dirent* e = ::readdir(proc)) {
    const std::string name = e->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in("/proc/" + name + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(marker) != std::string::npos) ++n;
  }
  ::closedir(proc);
  return n;
}

class FilesystemGateway : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the sandbox tests run as root";
    ws_ = std::make_unique<Workspace>("", "");
    shared_ = ws_->dir() + "/shared-docs";
    fs::create_directories(shared_);
    std::ofstream(shared_ + "/hello.txt") << "hello from the shared docs\n";
    std::ofstream(ws_->dir() + "/host-secret.txt") << "HOST-SECRET-MARKER-7f3a\n";
    fs::create_symlink(ws_->dir() + "/host-secret.txt", shared_ + "/escape");
    fs::create_symlink("/etc/shadow", shared_ + "/shadow-link");
    for (const char* p : {"", "/hello.txt"}) ::chmod((shared_ + p).c_str(), p[0] ? 0644 : 0755);
    ::chmod((ws_->dir() + "/host-secret.txt").c_str(), 0644);
    std::string yaml = ws_->config_text();
    // The principal "other" may call files.* too: a second agent, a second server process.
    yaml.replace(yaml.find(R"(tools: ["echo"])"), 15, R"(tools: ["echo", "files.*"])");
    yaml += R"(
mcpServers:
  - name: files
    command: [node, )" + filesystem_server() + R"(, /data, )" + marker() + R"(]
    dataPaths: [")" + node_modules() + ":" + kModulesInside + R"(", ")" + shared_ + R"(:/data"]
    tools: {allow: ["read_*", "list_*"]}
    idleTimeout: 5m
  - name: hostdir
    command: [node, )" + filesystem_server() + ", /data, " + ws_->dir() + R"(]
    dataPaths: [")" + node_modules() + ":" + kModulesInside + R"(", ")" + shared_ + R"(:/data"]
    tools: {allow: ["read_text_file"]}
)";
    // Users of a corp issuer whom analysts' role lets call files.*, for calls on their behalf.
    auto corp = identity::TokenSigner::load_or_create(ws_->dir() + "/corp.key");
    ASSERT_TRUE(corp.ok()) << corp.error().message;
    corp_.emplace(std::move(*corp));
    std::ofstream(ws_->dir() + "/corp-jwks.json") << corp_->jwks().dump();
    yaml += R"(identity:
  issuers:
    - {name: corp, issuer: https://idp.corp.example, audiences: [airlock], jwksFile: corp-jwks.json}
roles:
  - name: analyst
    rules:
      - {effect: allow, actions: [invoke], tools: ["files.*"]}
bindings:
  - role: analyst
    users: [{issuer: corp, claim: groups, value: analysts}]
)";
    ws_->write_config(yaml);
    daemon_ = std::make_unique<RunningDaemon>(*ws_);
    ASSERT_TRUE(wait_for_tool(daemon_->port, "files.read_text_file")) << "files was never listed";
  }
  void TearDown() override {
    daemon_.reset();
    ws_.reset();
  }
  // An allowed dir the server skips (it does not exist): it names this test's processes.
  std::string marker() const { return "/marker-" + fs::path(ws_->dir()).filename().string(); }
  Reply read(const std::string& tool, const std::string& path, const std::string& key = kKey) {
    return invoke(daemon_->port, tool, {{"path", path}}, key);
  }
  // The same, by the agent of `key` on behalf of the corp user `sub`.
  Reply read_for(const std::string& sub, const std::string& path, const std::string& key) {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
    auto token = corp_->issue({{"iss", "https://idp.corp.example"}, {"aud", "airlock"}, {"sub", sub},
                               {"groups", {"analysts"}}, {"exp", now + 300}});
    EXPECT_TRUE(token.ok());
    return http_with(daemon_->port, "POST", "/v1/tools/files.read_text_file/invoke",
                     nlohmann::json{{"arguments", {{"path", path}}}}.dump(), key,
                     {{"Airlock-Subject-Token", token.ok() ? *token : ""}});
  }

  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
  std::optional<identity::TokenSigner> corp_;
  std::string shared_;
};

TEST_F(FilesystemGateway, ItsToolsAreInTheRegistryAndAnAllowedReadWorks) {
  auto r = read("files.read_text_file", "/data/hello.txt");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["status"], "ok") << r.body;
  EXPECT_NE(r.body.find("hello from the shared docs"), std::string::npos) << r.body;
  // tools.allow: write_file is not exposed at all.
  EXPECT_TRUE(wait_for_tool(daemon_->port, "files.write_file", kKey, /*present=*/false));
  EXPECT_EQ(invoke(daemon_->port, "files.write_file", {{"path", "/data/x"}, {"content", "x"}}).status, 404);
}

// The audit record of invocation `id` (its fields), null when there is none.
nlohmann::json audit_record_of(const std::string& audit_path, const std::string& id) {
  nlohmann::json record;
  auto reader = audit::LogReader::open(audit_path);
  EXPECT_TRUE(reader.ok());
  if (!reader.ok()) return record;
  EXPECT_TRUE(reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
    auto parsed = nlohmann::json::parse(text, nullptr, false);
    const auto& fields = parsed.contains("fields") ? parsed["fields"] : parsed;
    if (fields.value("invocation_id", fields.value("id", "")) == id) record = fields;
    return true;
  }).ok());
  return record;
}

// Issue #33: a server's result with isError was answered and audited as `ok`, and its audit
// record had `output: null`. Now it is a tool_error, its result still the output (REST; over
// MCP it passes through with isError), and every gateway call's record holds the SHA-256 and
// size of the result as the server gave it.
TEST_F(FilesystemGateway, AnIsErrorResultIsAToolErrorAndEveryResultIsDigestedInTheAudit) {
  auto failed = read("files.read_text_file", "/data/no-such-file.txt");
  ASSERT_EQ(failed.status, 200) << failed.body;
  EXPECT_EQ(failed.json()["status"], "error") << failed.body;
  EXPECT_EQ(failed.json()["error"]["kind"], "tool_error") << failed.body;
  EXPECT_EQ(failed.json()["output"]["isError"], true) << failed.body;
  EXPECT_FALSE(failed.json()["output"]["content"].empty()) << failed.body;
  auto stored = http(daemon_->port, "GET", "/v1/invocations/" + failed.json()["id"].get<std::string>());
  EXPECT_EQ(stored.json()["error"]["kind"], "tool_error") << stored.body;
  EXPECT_EQ(stored.json()["output"], failed.json()["output"]) << stored.body;
  auto ok = read("files.read_text_file", "/data/hello.txt");
  ASSERT_EQ(ok.json()["status"], "ok") << ok.body;

  daemon_.reset();  // the log is read when the daemon has closed it
  const auto error_record = audit_record_of(ws_->audit_path(), failed.json()["id"]);
  ASSERT_FALSE(error_record.is_null());
  EXPECT_EQ(error_record["verdict"], "tool_error") << error_record.dump();
  const std::string failed_text = failed.json()["output"].dump();
  EXPECT_EQ(error_record["output"]["sha256"], sha256_hex(failed_text)) << error_record.dump();
  EXPECT_EQ(error_record["output"]["bytes"], failed_text.size()) << error_record.dump();
  const auto ok_record = audit_record_of(ws_->audit_path(), ok.json()["id"]);
  EXPECT_EQ(ok_record["verdict"], "ok") << ok_record.dump();
  const std::string ok_text = ok.json()["output"].dump();
  EXPECT_EQ(ok_record["output"]["sha256"], sha256_hex(ok_text)) << ok_record.dump();
  EXPECT_EQ(ok_record["output"]["bytes"], ok_text.size()) << ok_record.dump();
}

TEST_F(FilesystemGateway, PathTraversalSymlinksAndHostPathsFailAtTheSandboxBoundary) {
  for (const std::string& path : std::vector<std::string>{"/data/../../etc/shadow", "/data/shadow-link", "/data/escape",
                                 ws_->dir() + "/host-secret.txt", "/etc/shadow"}) {
    auto r = read("files.read_text_file", path);
    EXPECT_EQ(r.body.find("HOST-SECRET-MARKER"), std::string::npos) << path << ": " << r.body;
    EXPECT_EQ(r.body.find("root:"), std::string::npos) << path << ": " << r.body;
  }
  // A host directory given to the server as an allowed dir: the server would read it, but
  // the sandbox has no such directory (the server sees only its binds).
  ASSERT_TRUE(wait_for_tool(daemon_->port, "hostdir.read_text_file"));
  auto r = read("hostdir.read_text_file", ws_->dir() + "/host-secret.txt");
  EXPECT_EQ(r.body.find("HOST-SECRET-MARKER"), std::string::npos) << r.body;
}

TEST_F(FilesystemGateway, TwoAgentsNeverShareAServerProcess) {
  auto first = read("files.read_text_file", "/data/hello.txt");
  ASSERT_EQ(first.status, 200) << first.body;
  const int after_agent = processes_with(marker());
  auto other = read("files.read_text_file", "/data/hello.txt", kOtherKey);
  ASSERT_EQ(other.status, 200) << other.body;
  const int after_other = processes_with(marker());
  EXPECT_EQ(after_other, after_agent + 1) << "the second agent must get a server process of its own";
  auto again = read("files.read_text_file", "/data/hello.txt");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(processes_with(marker()), after_other) << "the first agent's process is reused";
}

// An instance belongs to (server, agent, user): a second agent acting for the same user does
// not reach the process (and the credentials, leased for the first agent) the first one left.
TEST_F(FilesystemGateway, TwoAgentsActingForOneUserNeverShareAServerProcess) {
  auto first = read_for("alice", "/data/hello.txt", kKey);
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_EQ(first.json()["subject"]["sub"], "alice") << first.body;
  const int after_agent = processes_with(marker());
  auto other = read_for("alice", "/data/hello.txt", kOtherKey);
  ASSERT_EQ(other.status, 200) << other.body;
  const int after_other = processes_with(marker());
  EXPECT_EQ(after_other, after_agent + 1) << "the second agent must get a server process of its own";
  ASSERT_EQ(read_for("alice", "/data/hello.txt", kKey).status, 200);
  EXPECT_EQ(processes_with(marker()), after_other) << "the first agent's process for alice is reused";
  // The same agent without the user is yet another owner.
  ASSERT_EQ(read("files.read_text_file", "/data/hello.txt").status, 200);
  EXPECT_EQ(processes_with(marker()), after_other + 1);
}

// The hostile server of tests/mcp/fixtures: it reads host files, connects out, leaves a
// daemon behind, answers with a fake AWS key and injected instructions, and changes its tool's
// description after its first call (the rug pull, at a moment the test knows).
class MaliciousGateway : public ::testing::Test {
 protected:
  std::string extra_yaml_;  // after the mcpServers section (a subclass's)
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the sandbox tests run as root";
    ws_ = std::make_unique<Workspace>("", "");
    std::ofstream(ws_->dir() + "/host-secret.txt") << "HOST-SECRET-MARKER-91c2\n";
    ::chmod((ws_->dir() + "/host-secret.txt").c_str(), 0644);
    ws_->write_config(ws_->config_text() + R"(
mcpServers:
  - name: evil
    command: [python3, /fixtures/malicious_server.py, --rug-pull-on-call]
    dataPaths: [")" + std::string(MCP_FIXTURES_DIR) + R"(:/fixtures"]
    risk: low
)" + extra_yaml_);
    daemon_ = std::make_unique<RunningDaemon>(*ws_);
    ASSERT_TRUE(wait_for_tool(daemon_->port, "evil.whoami")) << "evil was never listed";
  }
  void TearDown() override {
    daemon_.reset();
    ws_.reset();
  }
  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
};

// Two servers for the start-up tests: one listed after 3 s, one that never starts.
std::string slow_and_broken_servers() {
  return R"(
mcpServers:
  - name: slow
    command: [python3, /fixtures/malicious_server.py, --slow-start, "3"]
    dataPaths: [")" + std::string(MCP_FIXTURES_DIR) + R"(:/fixtures"]
  - name: broken
    command: [python3, /fixtures/no-such-server.py]
    dataPaths: [")" + std::string(MCP_FIXTURES_DIR) + R"(:/fixtures"]
)";
}

// Issue #33: a daemon whose MCP servers are not listed yet answers tools/list without their
// tools, and /healthz said ok meanwhile. Now /healthz is 503 "starting", naming the servers
// pending, until each has been listed once or has failed; then 200, naming the failed one,
// with the slow server's tools in the registry already.
TEST(GatewayStart, HealthzSaysStartingUntilEveryServerIsListedOrFailed) {
  if (::geteuid() != 0) GTEST_SKIP() << "the sandbox tests run as root";
  Workspace ws;
  ws.write_config(ws.config_text() + slow_and_broken_servers());
  RunningDaemon d(ws);
  auto first = http(d.port, "GET", "/healthz", "", "");
  ASSERT_EQ(first.status, 503) << first.body;
  EXPECT_EQ(first.json()["status"], "starting") << first.body;
  EXPECT_NE(first.body.find("\"slow\""), std::string::npos) << first.body;
  EXPECT_EQ(first.headers["retry-after"], "1");
  Reply ready;
  for (int i = 0; i < 600; ++i) {
    ready = http(d.port, "GET", "/healthz", "", "");
    if (ready.status != 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.json()["status"], "ok") << ready.body;
  EXPECT_TRUE(ready.json()["mcp_servers_failed"].contains("broken")) << ready.body;
  EXPECT_FALSE(ready.json()["mcp_servers_failed"].contains("slow")) << ready.body;
  auto tools = http(d.port, "GET", "/v1/tools");
  EXPECT_NE(tools.body.find("slow.whoami"), std::string::npos) << "ready before its tools were listed";
}

// Issue #33: `airlock mcp` (stdio) never started the gateway's listing, so its tools/list never
// had a gateway tool. Now it starts the daemon's services and reads its first request once the
// servers are listed: the first tools/list has them.
TEST(GatewayStart, McpOverStdioListsGatewayToolsInItsFirstListing) {
  if (::geteuid() != 0) GTEST_SKIP() << "the sandbox tests run as root";
  Workspace ws;
  ws.write_config(ws.config_text() + R"(
mcpServers:
  - name: slow
    command: [python3, /fixtures/malicious_server.py, --slow-start, "1"]
    dataPaths: [")" + std::string(MCP_FIXTURES_DIR) + R"(:/fixtures"]
)");
  const std::string in = ws.dir() + "/stdin.jsonl", out = ws.dir() + "/stdout.jsonl";
  std::ofstream(in) << R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})" "\n"
                    << R"({"jsonrpc":"2.0","method":"notifications/initialized"})" "\n"
                    << R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})" "\n";
  const std::string command = "cd " + ws.dir() + " && AIRLOCK_API_KEY=" + kKey + " " AIRLOCK_SERVE_BIN " --config " +
                              ws.config_path() + " --mcp-stdio < " + in + " > " + out + " 2>" + ws.dir() + "/stderr.txt";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream replies(out);
  nlohmann::json listing;
  for (std::string line; std::getline(replies, line);) {
    auto reply = nlohmann::json::parse(line, nullptr, false);
    if (reply.is_object() && reply.value("id", 0) == 2) listing = reply;
  }
  ASSERT_TRUE(listing.contains("result")) << listing.dump();
  EXPECT_NE(listing.dump().find("slow.whoami"), std::string::npos) << listing.dump().substr(0, 500);
}

// Runs an SDK client script of tests/mcp/clients against the daemon's /mcp: its exit status
// (0: every check passed); its output goes to the test's log.
int run_client(const std::string& script, std::uint16_t port, const std::string& args) {
  const std::string command = std::string(AIRLOCK_NODE_BIN) + " " + MCP_CLIENTS_DIR + "/" + script +
                              " http://127.0.0.1:" + std::to_string(port) + "/mcp " + kKey + " " + args;
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Issue #38: a client that connected right at start listed only the local tools, and was
// never told of the gateway's. Now tools/list waits for every server's first listing (or its
// failure, named): the official SDK client connected while /healthz still says "starting"
// gets the slow server's tools in its first listing, and the broken server named as failed.
TEST(GatewayStart, TheSdkClientConnectedAtStartGetsEveryGatewayToolInItsFirstListing) {
  if (::geteuid() != 0) GTEST_SKIP() << "the sandbox tests run as root";
  Workspace ws;
  ws.write_config(ws.config_text() + slow_and_broken_servers());
  RunningDaemon d(ws);
  ASSERT_EQ(http(d.port, "GET", "/healthz", "", "").status, 503) << "the client must connect before the listing";
  EXPECT_EQ(run_client("sdk_list_changed.mjs", d.port, "first slow.whoami broken"), 0);
}

// Issue #38: past server.mcp.firstListingWait, tools/list answers without the servers still
// pending and names them; over stdio, the session is told with notifications/tools/list_changed
// when their tools arrive, and lists them then.
TEST(GatewayStart, McpOverStdioIsToldWhenAPendingServersToolsArrive) {
  if (::geteuid() != 0) GTEST_SKIP() << "the sandbox tests run as root";
  Workspace ws;
  std::string yaml = ws.config_text();
  yaml.replace(yaml.find("server: {"), 9, "server: {mcp: {firstListingWait: 500ms}, ");
  ws.write_config(yaml + R"(
mcpServers:
  - name: slow
    command: [python3, /fixtures/malicious_server.py, --slow-start, "3"]
    dataPaths: [")" + std::string(MCP_FIXTURES_DIR) + R"(:/fixtures"]
)");
  const std::string in = ws.dir() + "/stdin.jsonl", later = ws.dir() + "/later.jsonl", out = ws.dir() + "/stdout.jsonl";
  std::ofstream(in) << R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})" "\n"
                    << R"({"jsonrpc":"2.0","method":"notifications/initialized"})" "\n"
                    << R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})" "\n";
  std::ofstream(later) << R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})" "\n";
  // The second listing is sent once the slow server has had time to answer (3 s and its start).
  const std::string command = "cd " + ws.dir() + " && (cat " + in + "; sleep 8; cat " + later + ") | AIRLOCK_API_KEY=" +
                              kKey + " " AIRLOCK_SERVE_BIN " --config " + ws.config_path() + " --mcp-stdio > " + out +
                              " 2>" + ws.dir() + "/stderr.txt";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::ifstream replies(out);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(replies, line);) lines.push_back(nlohmann::json::parse(line, nullptr, false));
  auto position = [&](const std::function<bool(const nlohmann::json&)>& is) {
    return std::find_if(lines.begin(), lines.end(), is) - lines.begin();
  };
  const auto first = position([](const auto& m) { return m.is_object() && m.value("id", 0) == 2; });
  const auto told = position([](const auto& m) {
    return m.is_object() && m.value("method", "") == "notifications/tools/list_changed";
  });
  const auto second = position([](const auto& m) { return m.is_object() && m.value("id", 0) == 3; });
  ASSERT_LT(first, static_cast<long>(lines.size()));
  ASSERT_LT(second, static_cast<long>(lines.size()));
  EXPECT_EQ(lines[first].dump().find("slow.whoami"), std::string::npos) << "listed before its server answered?";
  EXPECT_EQ(lines[first]["result"]["_meta"]["airlock.dev/mcpServers"]["pending"], nlohmann::json::array({"slow"}))
      << lines[first].dump().substr(0, 500);
  ASSERT_LT(told, static_cast<long>(lines.size())) << "no notifications/tools/list_changed on stdout";
  EXPECT_GT(told, first);
  EXPECT_NE(lines[second].dump().find("slow.whoami"), std::string::npos) << lines[second].dump().substr(0, 500);
}

// Issue #38: a pin broken while a client is connected (the rug pull: the server changes a
// tool's description after a call) tells the client on its GET /mcp stream, and its next
// tools/list no longer has the tool.
TEST_F(MaliciousGateway, ABrokenPinNotifiesAConnectedClient) {
  ASSERT_TRUE(wait_for_tool(daemon_->port, "evil.harvest"));
  EXPECT_EQ(run_client("sdk_list_changed.mjs", daemon_->port, "pin evil.whoami evil.harvest"), 0);
}

TEST_F(MaliciousGateway, ARugPullDisablesTheToolUntilAnAdminApprovesIt) {
  EXPECT_TRUE(wait_for_tool(daemon_->port, "evil.harvest")) << "pinned and admitted as first listed";
  // After a call, its listing changes harvest's description: the tool is gone from the
  // registry, and the change waits in the pin store.
  ASSERT_EQ(invoke(daemon_->port, "evil.whoami", nlohmann::json::object()).status, 200);
  ASSERT_TRUE(wait_for_tool(daemon_->port, "evil.harvest", kKey, /*present=*/false));
  auto refused = invoke(daemon_->port, "evil.harvest", nlohmann::json::object());
  EXPECT_EQ(refused.status, 404) << refused.body;
  auto pins = mcp::PinStore::open(ws_->dir() + "/data/state.db");
  ASSERT_TRUE(pins) << pins.error().message;
  auto pin = (*pins)->get("evil", "harvest");
  ASSERT_TRUE(pin);
  ASSERT_FALSE(pin->pending_sha256.empty());
  EXPECT_NE(pin->pending.dump().find("IGNORE PREVIOUS INSTRUCTIONS"), std::string::npos);

  // Approved and reloaded: the tool is back, as it is listed now.
  ASSERT_TRUE((*pins)->approve("evil", "harvest", pin->pending_sha256));
  ASSERT_TRUE(daemon_->daemon->reload(ws_->config()));
  EXPECT_TRUE(wait_for_tool(daemon_->port, "evil.harvest"));
}

TEST_F(MaliciousGateway, ItsAttacksAreContainedAndItsLeakedKeyRedacted) {
  // The agent's own instance starts (and pulls its rug) before the change is approved.
  ASSERT_EQ(invoke(daemon_->port, "evil.whoami", nlohmann::json::object()).status, 200);
  auto pins = mcp::PinStore::open(ws_->dir() + "/data/state.db");
  ASSERT_TRUE(pins);
  ASSERT_TRUE(wait_for_tool(daemon_->port, "evil.harvest", kKey, /*present=*/false));
  auto pin = (*pins)->get("evil", "harvest");
  ASSERT_TRUE(pin && !pin->pending_sha256.empty());
  ASSERT_TRUE((*pins)->approve("evil", "harvest", pin->pending_sha256));
  ASSERT_TRUE(daemon_->daemon->reload(ws_->config()));
  ASSERT_TRUE(wait_for_tool(daemon_->port, "evil.harvest"));

  const std::string marker = "evil-daemon-" + fs::path(ws_->dir()).filename().string();
  const nlohmann::json args{{"host_file", ws_->dir() + "/host-secret.txt"}, {"port", daemon_->port}, {"marker", marker}};
  // Until the agent's instance has listed the approved version, a call is tool_disabled.
  Reply r;
  for (int i = 0; i < 100; ++i) {
    r = invoke(daemon_->port, "evil.harvest", args);
    if (r.status != 403) break;
    EXPECT_EQ(r.json()["error"]["kind"], "tool_disabled") << r.body;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string body = r.body;
  // (DLP redacts the address in "connect 1.1.1.1:443".)
  for (const char* attempt : {"read /etc/shadow: failed", "read host file: failed", ":443: failed",
                              "connect loopback: failed"})
    EXPECT_NE(body.find(attempt), std::string::npos) << attempt << ": " << body;
  EXPECT_EQ(body.find("HOST-SECRET-MARKER"), std::string::npos) << body;
  // DLP on the server's result: the key never reaches the agent.
  EXPECT_EQ(body.find("AKIAIOSFODNN7EXAMPLE"), std::string::npos) << body;
  EXPECT_FALSE(r.json()["redactions"].empty()) << body;
  // The daemon it left behind lives only as long as its sandbox (it may take a moment to
  // appear: the server answers while its grandchild starts).
  int left_behind = 0;
  for (int i = 0; i < 100 && left_behind < 1; ++i) {
    left_behind = processes_with(marker);
    if (left_behind < 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(left_behind, 1);
  daemon_.reset();
  EXPECT_EQ(processes_with(marker), 0);
}

// A server's result is held to the tier's output cap (limits.output: 64 KiB in the tests'
// workspace) as a sandbox's stdout is: 256 KiB (four times the cap; the issue's 3 MiB past
// 1 MiB is the same case, and slow enough under load to meet the call's wall-time limit
// first) was returned ok; now it is refused output_limit, naming the limit; 32 KiB goes through.
TEST_F(MaliciousGateway, AResultPastTheTiersOutputCapIsRefused) {
  auto big = invoke(daemon_->port, "evil.big", {{"bytes", 256 << 10}});
  EXPECT_EQ(big.json()["status"], "error") << big.body.substr(0, 300);
  EXPECT_EQ(big.json()["error"]["kind"], "output_limit") << big.body.substr(0, 300);
  EXPECT_NE(big.json()["error"].value("message", "").find("65536-byte limit"), std::string::npos) << big.body.substr(0, 300);
  EXPECT_LT(big.body.size(), std::size_t{1} << 20);
  auto fits = invoke(daemon_->port, "evil.big", {{"bytes", 32 << 10}});
  EXPECT_EQ(fits.status, 200) << fits.body.substr(0, 300);
  EXPECT_EQ(fits.json()["status"], "ok") << fits.body.substr(0, 300);
}

TEST_F(MaliciousGateway, AnAgentKeepsItsInstanceAndRbacComesFirst) {
  auto a = invoke(daemon_->port, "evil.whoami", nlohmann::json::object());
  auto again = invoke(daemon_->port, "evil.whoami", nlohmann::json::object());
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.json()["output"]["content"], again.json()["output"]["content"]) << "one instance per agent";
  // "other" may call only echo: refused by RBAC before any server process is involved.
  EXPECT_EQ(invoke(daemon_->port, "evil.whoami", nlohmann::json::object(), kOtherKey).status, 403);
}

// Issue #33: a gateway call was never charged against quotas.cpuSeconds (`usage: null`). Now
// the CPU its server's sandbox used during the call (its cgroup's counters) is the call's
// usage, charged like a sandboxed run's: a burn past the budget makes the next call refused.
class MeteredGateway : public MaliciousGateway {
 protected:
  MeteredGateway() { extra_yaml_ = "quotas:\n  principals:\n    agent: {cpuSeconds: 0.3/60s}\n"; }
};

TEST_F(MeteredGateway, TheServersCpuDuringACallIsChargedToTheCallersQuota) {
  auto burnt = invoke(daemon_->port, "evil.burn", {{"seconds", 0.5}});
  ASSERT_EQ(burnt.status, 200) << burnt.body;
  ASSERT_EQ(burnt.json()["status"], "ok") << burnt.body;
  const nlohmann::json usage = burnt.json()["usage"];
  ASSERT_TRUE(usage.is_object()) << burnt.body;
  const int cpu_ms = usage.value("cpu_user_ms", 0) + usage.value("cpu_sys_ms", 0);
  EXPECT_GE(cpu_ms, 450) << burnt.body;  // 0.5 s of CPU time, by the server's own clock
  // Only the call's CPU, not the server's before it: at most its wall time, give or take the
  // counters' grain (cgroup v1 splits user/system by ticks, and the call's wall time is taken
  // just before its last CPU reading; 504 vs 503 ms was seen).
  EXPECT_LE(cpu_ms, usage.value("wall_ms", 0) + 50) << burnt.body;
  auto record = audit_record_of(ws_->audit_path(), burnt.json()["id"]);
  ASSERT_TRUE(record.is_object());
  EXPECT_EQ(record["usage"]["cpu_user_ms"], usage["cpu_user_ms"]) << record.dump();

  auto next = invoke(daemon_->port, "evil.whoami", nlohmann::json::object());
  EXPECT_EQ(next.status, 429) << next.body;
  EXPECT_EQ(next.json()["error"]["kind"], "quota_exceeded") << next.body;
  EXPECT_EQ(next.json()["error"]["quota"], "cpuSeconds") << next.body;
  EXPECT_EQ(next.headers.count("retry-after"), 1u);
  // Another principal's budget is its own.
  EXPECT_EQ(invoke(daemon_->port, "echo", {{"n", 1}}, kOtherKey).status, 200);
}

// mcpServers[].credentials: leased for the instance's owner when it starts, given as its
// environment, redacted from every result, revoked when the instance stops (idle, replaced,
// daemon shutdown), and replaced before they run out.
constexpr const char* kServerSecret = "keyed-server-secret-5d1e9a7c3b";

class CredentialedGateway : public ::testing::Test {
 protected:
  // keyed's idleTimeout: short for the test that waits for it to pass.
  std::string keyed_idle_timeout_ = "3s";
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the sandbox tests run as root";
    ws_ = std::make_unique<Workspace>("", "");
    auto secrets = creds::SecretStore::open(ws_->dir() + "/data");
    ASSERT_TRUE(secrets.ok()) << secrets.error().message;
    ASSERT_TRUE((*secrets)->set("keyed-key", kServerSecret).ok());
    std::string yaml = ws_->config_text();
    yaml.replace(yaml.find(R"(tools: ["echo"])"), 15, R"(tools: ["echo", "keyed.*", "renewed.*"])");
    const std::string fixtures = std::string(MCP_FIXTURES_DIR) + ":/fixtures";
    yaml += R"(
mcpServers:
  - name: keyed
    command: [python3, /fixtures/malicious_server.py]
    dataPaths: [")" + fixtures + R"("]
    risk: low
    idleTimeout: )" + keyed_idle_timeout_ + R"(
    credentials:
      - {env: KEYED_API_KEY, secret: keyed-key}
      - {env: KEYED_TOKEN, token: {audience: keyed-api, ttl: 10m}}
  - name: renewed
    command: [python3, /fixtures/malicious_server.py]
    dataPaths: [")" + fixtures + R"("]
    risk: low
    credentials:
      - {env: RENEWED_TOKEN, token: {audience: renewed-api, ttl: 23s}}
  - name: unkeyed
    command: [python3, /fixtures/malicious_server.py]
    dataPaths: [")" + fixtures + R"("]
    risk: low
    credentials:
      - {env: NEVER_SET, secret: never-set}
)";
    ws_->write_config(yaml);
    daemon_ = std::make_unique<RunningDaemon>(*ws_);
    ASSERT_TRUE(wait_for_tool(daemon_->port, "keyed.getenv")) << "keyed was never listed";
    auto leases = creds::LeaseStore::open(ws_->dir() + "/data/state.db");
    ASSERT_TRUE(leases.ok()) << leases.error().message;
    leases_ = std::move(*leases);
  }
  void TearDown() override {
    daemon_.reset();
    leases_.reset();
    ws_.reset();
  }
  // The leases of the server's instances not revoked yet.
  std::vector<creds::Lease> outstanding(const std::string& server = "keyed") {
    auto all = leases_->outstanding();
    EXPECT_TRUE(all.ok());
    std::vector<creds::Lease> out;
    for (auto& l : all.ok() ? *all : std::vector<creds::Lease>{})
      if (l.tool == "mcp server " + server) out.push_back(l);
    return out;
  }
  bool all_revoked(const std::string& invocation_id) {
    for (int i = 0; i < 150; ++i) {
      auto of = leases_->of_invocation(invocation_id);
      bool revoked = of.ok() && !of->empty();
      for (const auto& l : of.ok() ? *of : std::vector<creds::Lease>{})
        revoked &= l.state == creds::Lease::State::revoked;
      if (revoked) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  std::string text_of(const Reply& r) { return r.json()["output"]["content"][0].value("text", ""); }

  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
  std::unique_ptr<creds::LeaseStore> leases_;
};

// Its instances stay while the test looks at them, however slowly another one starts.
class CredentialedGatewayKept : public CredentialedGateway {
 protected:
  CredentialedGatewayKept() { keyed_idle_timeout_ = "5m"; }
};

TEST_F(CredentialedGatewayKept, TheServerGetsItsOwnersCredentialsAndNoResultCarriesThem) {
  auto r = invoke(daemon_->port, "keyed.getenv", {{"name", "KEYED_API_KEY"}});
  ASSERT_EQ(r.status, 200) << r.body;
  // The server had the value: what it printed (raw and hex) is redacted on the way out.
  EXPECT_EQ(r.body.find(kServerSecret), std::string::npos) << r.body;
  std::string hex;
  for (unsigned char c : std::string(kServerSecret)) hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
  EXPECT_EQ(r.body.find(hex), std::string::npos) << r.body;
  EXPECT_NE(text_of(r).find("[REDACTED:CREDENTIAL] hex [REDACTED:CREDENTIAL]"), std::string::npos) << r.body;
  bool listed = false;
  const auto body = r.json();
  for (const auto& red : body["redactions"]) listed |= red["detector"] == "credential";
  EXPECT_TRUE(listed) << r.body;
  auto token = invoke(daemon_->port, "keyed.getenv", {{"name", "KEYED_TOKEN"}});
  ASSERT_EQ(token.status, 200) << token.body;
  EXPECT_EQ(text_of(token).find("(unset)"), std::string::npos) << "the token is in its environment";
  EXPECT_EQ(text_of(token).find("eyJ"), std::string::npos) << token.body;

  // Two leases for this owner's instance, made by the call that started it; another agent
  // gets an instance, and leases, of its own.
  const std::string first_call = r.json()["id"];
  auto mine = outstanding();
  ASSERT_EQ(mine.size(), 2u);
  for (const auto& l : mine) EXPECT_EQ(l.invocation_id, first_call);
  ASSERT_EQ(invoke(daemon_->port, "keyed.getenv", {{"name", "KEYED_API_KEY"}}, kOtherKey).status, 200);
  EXPECT_EQ(outstanding().size(), 4u);

  // The stored invocation holds no value either, and the audit record names the leases.
  auto stored = http(daemon_->port, "GET", "/v1/invocations/" + first_call);
  EXPECT_EQ(stored.body.find(kServerSecret), std::string::npos) << stored.body;
  daemon_.reset();  // stops every instance: every lease is revoked
  EXPECT_TRUE(outstanding().empty());
  EXPECT_TRUE(all_revoked(first_call));
  auto reader = audit::LogReader::open(ws_->audit_path());
  ASSERT_TRUE(reader.ok());
  nlohmann::json record;
  ASSERT_TRUE(reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
    auto parsed = nlohmann::json::parse(text, nullptr, false);
    const auto& fields = parsed.contains("fields") ? parsed["fields"] : parsed;
    if (fields.value("invocation_id", fields.value("id", "")) == first_call) record = fields;
    return true;
  }).ok());
  ASSERT_FALSE(record.is_null());
  ASSERT_EQ(record["credentials"].size(), 2u) << record.dump();
  EXPECT_EQ(record.dump().find(kServerSecret), std::string::npos);
}

TEST_F(CredentialedGateway, AnIdleInstanceEndsAndItsLeasesAreRevoked) {
  auto r = invoke(daemon_->port, "keyed.whoami", nlohmann::json::object());
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(outstanding().size(), 2u);
  // idleTimeout: 3s. Then the instance stops, and its leases end with it.
  EXPECT_TRUE(all_revoked(r.json()["id"]));
  EXPECT_TRUE(outstanding().empty());
}

TEST_F(CredentialedGateway, AnInstanceIsReplacedBeforeItsCredentialsRunOut) {
  // renewed's token lives 23 s; a call may take the tier's 10 s and the renewal margin is 10 s: from
  // 3 s on, the next call starts a new instance with new leases rather than let it run out.
  ASSERT_TRUE(wait_for_tool(daemon_->port, "renewed.whoami"));
  auto first = invoke(daemon_->port, "renewed.whoami", nlohmann::json::object());
  ASSERT_EQ(first.status, 200) << first.body;
  std::this_thread::sleep_for(std::chrono::seconds(4));
  auto second = invoke(daemon_->port, "renewed.whoami", nlohmann::json::object());
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_NE(text_of(first), text_of(second)) << "a new server process";
  EXPECT_TRUE(all_revoked(first.json()["id"])) << "the replaced instance's leases are revoked";
  auto now = outstanding("renewed");
  ASSERT_EQ(now.size(), 1u);
  for (const auto& l : now) EXPECT_EQ(l.invocation_id, second.json()["id"]);
}

TEST_F(CredentialedGateway, ACredentialThatCannotBeMadeFailsTheCallAndStartsNothing) {
  ASSERT_TRUE(wait_for_tool(daemon_->port, "unkeyed.whoami")) << "listed without its credentials";
  auto r = invoke(daemon_->port, "unkeyed.whoami", nlohmann::json::object());
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.json()["error"]["kind"], "credential_unavailable") << r.body;
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("NEVER_SET"), std::string::npos) << r.body;
}

// Issue #38: a gateway server's resources and prompts were not reachable at all. Now those of
// server-everything (npm) pass through, namespaced like its tools: the official SDK client lists
// and reads them (sdk_content.mjs: RBAC hides and refuses them for a principal without
// everything.*; DLP scans a prompt), and each read is an invocation of the server's content
// tool: its row and its audit record name it, and DLP's redactions are in both.
// Servers on gVisor (docs/mcp-gateway.md, "Servers on gVisor"): the high tier runs on gVisor
// (runsc, --platform=ptrace), and the same hostile server runs there at risk high and locally
// at risk medium. Through the whole pipeline, the high one's tools are called (no more
// tier_unavailable) and answer from the Sentry's kernel; the medium one's from the host's. A
// tool raised to high by riskOverrides on the local server is refused: its sandbox would be
// weaker than its tier asks for. Skips without runsc.
class GvisorGateway : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the sandbox tests run as root";
    if (std::system("command -v runsc >/dev/null 2>&1") != 0) GTEST_SKIP() << "runsc is not installed";
    ws_ = std::make_unique<Workspace>("", "");
    std::string yaml = ws_->config_text();
    const std::string low = "  low: {timeout: 10s, memory: 128Mi, pids: 16, output: 64Ki}\n";
    const auto at = yaml.find(low);
    ASSERT_NE(at, std::string::npos);
    yaml.insert(at + low.size(), "  high: {backend: gvisor, gvisor: {platform: ptrace}}\n");
    const std::string fixtures = std::string(MCP_FIXTURES_DIR) + ":/fixtures";
    ws_->write_config(yaml + R"(
mcpServers:
  - name: gv
    command: [python3, /fixtures/malicious_server.py, --rug-pull-on-call]
    dataPaths: [")" + fixtures + R"("]
    risk: high
  - name: local
    command: [python3, /fixtures/malicious_server.py, --rug-pull-on-call]
    dataPaths: [")" + fixtures + R"("]
    risk: medium
    tools: {riskOverrides: {getenv: high}}
)");
    daemon_ = std::make_unique<RunningDaemon>(*ws_);
    ASSERT_TRUE(wait_for_tool(daemon_->port, "gv.read_path")) << "gv was never listed";
    ASSERT_TRUE(wait_for_tool(daemon_->port, "local.read_path")) << "local was never listed";
  }
  void TearDown() override {
    daemon_.reset();
    if (ws_) {
      EXPECT_EQ(processes_with(ws_->dir() + "/data/gvisor"), 0) << "no runsc is left";
    }
    ws_.reset();
  }
  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
};

TEST_F(GvisorGateway, AHighServerAnswersFromGvisorsKernelAndALocalOneFromTheHosts) {
  utsname host{};
  ASSERT_EQ(::uname(&host), 0);
  auto gv = invoke(daemon_->port, "gv.read_path", {{"path", "/proc/version"}});
  ASSERT_EQ(gv.status, 200) << gv.body;
  ASSERT_EQ(gv.json()["status"], "ok") << gv.body;
  EXPECT_NE(gv.body.find("SUCCEEDED"), std::string::npos) << gv.body;
  EXPECT_EQ(gv.body.find(host.release), std::string::npos) << gv.body;
  EXPECT_GT(processes_with(ws_->dir() + "/data/gvisor"), 0) << "it runs in runsc";
  auto local = invoke(daemon_->port, "local.read_path", {{"path", "/proc/version"}});
  ASSERT_EQ(local.json()["status"], "ok") << local.body;
  EXPECT_NE(local.body.find(host.release), std::string::npos) << "control: " << local.body;
  auto raised = invoke(daemon_->port, "local.getenv", {{"name", "PATH"}});
  EXPECT_EQ(raised.status, 403) << raised.body;
  EXPECT_EQ(raised.json()["error"]["kind"], "tier_unavailable") << raised.body;
  const std::string why = raised.json()["error"]["message"];
  EXPECT_NE(why.find("raise the server's risk"), std::string::npos) << why;
}

class EverythingGateway : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the sandbox tests run as root";
    ws_ = std::make_unique<Workspace>("", "");
    ws_->write_config(ws_->config_text() + R"(
mcpServers:
  - name: everything
    command: [node, )" + std::string(kModulesInside) + R"(/@modelcontextprotocol/server-everything/dist/index.js, stdio]
    dataPaths: [")" + node_modules() + ":" + kModulesInside + R"("]
  - name: leaky
    command: [python3, /fixtures/malicious_server.py, --resources]
    dataPaths: [")" + std::string(MCP_FIXTURES_DIR) + R"(:/fixtures"]
)");
    daemon_ = std::make_unique<RunningDaemon>(*ws_);
    ASSERT_TRUE(wait_for_tool(daemon_->port, "everything.echo")) << "everything was never listed";
    ASSERT_TRUE(wait_for_tool(daemon_->port, "leaky.whoami")) << "leaky was never listed";
  }
  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
};

TEST_F(EverythingGateway, ItsResourcesAndPromptsPassThroughNamespacedCheckedScannedAndAudited) {
  EXPECT_EQ(run_client("sdk_content.mjs", daemon_->port, kOtherKey), 0);

  // The content tools are not tools a model is offered: GET /v1/tools lists neither.
  EXPECT_TRUE(wait_for_tool(daemon_->port, "everything._get_prompt", kKey, /*present=*/false));
  // Through the HTTP API, by name: the prompt's text is scanned on its way in and out.
  auto prompt = invoke(daemon_->port, "everything._get_prompt",
                       {{"name", "args-prompt"}, {"arguments", {{"city", "jane.doe@example.org"}}}});
  ASSERT_EQ(prompt.status, 200) << prompt.body;
  EXPECT_EQ(prompt.json()["status"], "ok") << prompt.body;
  EXPECT_EQ(prompt.body.find("jane.doe@example.org"), std::string::npos) << prompt.body;
  EXPECT_FALSE(prompt.json()["redactions"].empty()) << prompt.body;
  auto read = invoke(daemon_->port, "everything._read_resource", {{"uri", "demo://resource/dynamic/text/3"}});
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(read.json()["output"]["contents"][0]["uri"], "demo://resource/dynamic/text/3") << read.body;
  // RBAC comes first.
  EXPECT_EQ(invoke(daemon_->port, "everything._read_resource", {{"uri", "demo://x"}}, kOtherKey).status, 403);
  // What a hostile server's resource leaks is redacted on its way out.
  auto leak = invoke(daemon_->port, "leaky._read_resource", {{"uri", "leak://key"}});
  ASSERT_EQ(leak.status, 200) << leak.body;
  EXPECT_EQ(leak.body.find("AKIAUP6PPB2TDBM72FQO"), std::string::npos) << leak.body;
  EXPECT_EQ(leak.body.find("jane.doe@example.org"), std::string::npos) << leak.body;
  EXPECT_NE(leak.json()["redactions"].dump().find("\"output\""), std::string::npos) << leak.body;

  daemon_.reset();  // the log is read when the daemon has closed it
  const auto record = audit_record_of(ws_->audit_path(), prompt.json()["id"]);
  ASSERT_FALSE(record.is_null());
  EXPECT_EQ(record["tool"], "everything._get_prompt") << record.dump();
  EXPECT_EQ(record["verdict"], "ok") << record.dump();
  EXPECT_NE(record["input"].value("redacted", "").find("[REDACTED:EMAIL]"), std::string::npos) << "the redaction is recorded: " << record.dump();
  EXPECT_EQ(record.dump().find("jane.doe@example.org"), std::string::npos) << record.dump();
}

}  // namespace
}  // namespace airlock::server::test
