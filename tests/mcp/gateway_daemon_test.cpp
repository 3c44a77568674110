// The gateway through the daemon: third-party MCP servers from npm (and a hostile one of our
// own) in their sandboxes, their tools in the registry as "<server>.<tool>", each call through
// the whole pipeline. Every test runs a real attack and asserts it failed.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "common/digest.hpp"
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

  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<RunningDaemon> daemon_;
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

// The hostile server of tests/mcp/fixtures: it reads host files, connects out, leaves a
// daemon behind, answers with a fake AWS key and injected instructions, and changes its tool's
// description after its first call (the rug pull, at a moment the test knows).
class MaliciousGateway : public ::testing::Test {
 protected:
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
)");
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
  // The daemon it left behind lives only as long as its sandbox.
  EXPECT_GE(processes_with(marker), 1);
  daemon_.reset();
  EXPECT_EQ(processes_with(marker), 0);
}

TEST_F(MaliciousGateway, AnAgentKeepsItsInstanceAndRbacComesFirst) {
  auto a = invoke(daemon_->port, "evil.whoami", nlohmann::json::object());
  auto again = invoke(daemon_->port, "evil.whoami", nlohmann::json::object());
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.json()["output"]["content"], again.json()["output"]["content"]) << "one instance per agent";
  // "other" may call only echo: refused by RBAC before any server process is involved.
  EXPECT_EQ(invoke(daemon_->port, "evil.whoami", nlohmann::json::object(), kOtherKey).status, 403);
}

}  // namespace
}  // namespace airlock::server::test
