// The gateway's servers on gVisor (docs/mcp-gateway.md, "Servers on gVisor"), for real in runsc
// (--platform=ptrace): a server whose risk's tier runs on gVisor answers through the gateway
// from a kernel that is not the host's (the same server on a local tier answers the host's:
// the control), reaches nothing but its allowed hosts through the proxy, has its credentials
// only in its environment, and leaves nothing (container, directory, cgroup, process) once it
// has ended. They skip only when runsc is not installed, or not as root (the gateway's tests).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <random>
#include <thread>

#include "../egress/egress_fixtures.hpp"
#include "../sandbox/test_support.hpp"
#include "backend/gvisor_backend.hpp"
#include "backend/runsc_platform.hpp"
#include "mcp/gateway.hpp"
#include "mcp/server_spec.hpp"
#include "sandbox/cgroup.hpp"

namespace airlock::mcp {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using sandbox::test::TempDir;

const std::string kFixtures = MCP_FIXTURES_DIR;
const std::string kNodeModules = MCP_NODE_MODULES;  // the real path (binds need it)
const std::string kEverything = kNodeModules + "/@modelcontextprotocol/server-everything/dist/index.js";

std::string g_tag;  // on every server's command line: this test's processes

std::string random_hex() {
  std::random_device rd;
  return std::to_string(rd()) + std::to_string(rd());
}

bool eventually(const std::function<bool()>& done, std::chrono::seconds bound = 60s) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string text_of(const pipeline::McpToolResult& r) {
  std::string text;
  for (const auto& c : r.content)
    if (c.contains("text") && c["text"].is_string()) text += c["text"].get<std::string>() + "\n";
  return text;
}

policy::McpServerConfig everything_server(policy::Risk risk) {
  policy::McpServerConfig c;
  c.name = "everything";
  c.command = {"/usr/bin/node", kEverything, "stdio", g_tag};
  c.data_paths.push_back({kNodeModules, kNodeModules, false});
  c.risk = risk;
  return c;
}

policy::McpServerConfig malicious_server(const std::string& name, policy::Risk risk) {
  policy::McpServerConfig c;
  c.name = name;
  c.command = {"/usr/bin/python3", "/fixtures/malicious_server.py", g_tag};
  c.data_paths.push_back({kFixtures, "/fixtures", false});
  c.risk = risk;
  return c;
}

pipeline::McpToolCall tool_call(const std::string& server, const std::string& tool,
                                nlohmann::json args = nlohmann::json::object()) {
  pipeline::McpToolCall c;
  c.invocation_id = "inv-" + random_hex();
  c.server = server;
  c.remote_tool = tool;
  c.arguments = std::move(args);
  c.owner = "agent tester";
  c.timeout = 60s;
  return c;
}

// The host processes whose command line or environment holds `needle` (this test's own aside).
std::vector<int> processes_holding(const std::string& needle) {
  std::vector<int> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos || std::stoi(name) == ::getpid()) continue;
    const std::string seen = read_text(e.path() / "cmdline") + read_text(e.path() / "environ");
    if (seen.find(needle) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

// Host processes whose command line holds `marker`.
std::vector<int> processes_with(const std::string& marker) {
  std::vector<int> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos || std::stoi(name) == ::getpid()) continue;
    if (read_text(e.path() / "cmdline").find(marker) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

// The cgroup directory of a host process: its memory controller's (cgroup v1, as the sandbox's
// cgroup is made where the hierarchy is hybrid), else the unified one's.
std::string cgroup_dir_of(int pid) {
  std::istringstream lines(read_text("/proc/" + std::to_string(pid) + "/cgroup"));
  std::string line, unified;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) == 0) unified = "/sys/fs/cgroup" + line.substr(3);
    const auto at = line.find(":memory:");
    if (at != std::string::npos) return "/sys/fs/cgroup/memory" + line.substr(at + 8);
  }
  return unified;
}

class GatewayOnGvisor : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!backend::find_runsc("runsc") || ::geteuid() != 0) return;
    state_dir_ = new TempDir();
    backend::GvisorOptions options;
    options.state_dir = state_dir_->path() + "/gvisor";
    options.platform = "ptrace";
    auto made = backend::GvisorBackend::create(options);
    ASSERT_TRUE(made) << made.error().message;
    backend_ = made->release();
  }
  static void TearDownTestSuite() {
    delete backend_;
    delete state_dir_;
    backend_ = nullptr;
  }
  void SetUp() override {
    if (!backend::find_runsc("runsc")) GTEST_SKIP() << "runsc is not installed (apt-get install runsc)";
    if (::geteuid() != 0) GTEST_SKIP() << "the gateway's sandboxes need root here";
    ASSERT_NE(backend_, nullptr);
    g_tag = "airlock-test-" + random_hex();
    GatewayOptions o;
    o.registry = &registry_;
    o.gvisor_tiers[policy::Risk::high] = backend::GvisorPlace{backend_->invocation(), backend_->state_dir()};
    gateway_ = std::make_unique<Gateway>(std::move(o));
  }
  void TearDown() override {
    if (!gateway_) return;
    gateway_->shutdown();
    EXPECT_EQ(registry_.count(), 0u);
    // Nothing of any instance outlives it: no directory (bundle, state), no process.
    EXPECT_TRUE(fs::is_empty(state_dir())) << state_dir();
    EXPECT_EQ(sandbox::test::host_processes_with(state_dir()), 0);
    EXPECT_EQ(sandbox::test::host_processes_with(g_tag), 0);
  }
  static const std::string& state_dir() { return backend_->state_dir(); }
  // runsc's processes (their command lines name the state directory).
  static int runsc_processes() { return sandbox::test::host_processes_with(state_dir()); }

  static inline TempDir* state_dir_ = nullptr;
  static inline backend::GvisorBackend* backend_ = nullptr;
  backend::RunningSandboxes registry_;
  std::unique_ptr<Gateway> gateway_;
};

// server-everything on the high tier: its listing instance and the caller's run in runsc (not
// in the local registry), and echo answers through the gateway.
TEST_F(GatewayOnGvisor, EverythingEchoesFromGvisor) {
  gateway_->configure({everything_server(policy::Risk::high)});
  auto tools = gateway_->list_tools("everything");
  ASSERT_TRUE(tools) << tools.error().message;
  EXPECT_EQ(gateway_->running(), std::vector<std::string>{"everything airlock listing"});
  EXPECT_GT(runsc_processes(), 0) << "the listing instance runs in runsc";
  EXPECT_EQ(registry_.count(), 0u) << "no local sandbox";
  std::optional<sandbox::Usage> usage;
  auto call = tool_call("everything", "echo", {{"message", "hello from gVisor"}});
  call.usage = &usage;
  auto echoed = gateway_->call(call);
  ASSERT_TRUE(echoed) << echoed.error().message;
  EXPECT_NE(text_of(*echoed).find("hello from gVisor"), std::string::npos) << text_of(*echoed);
  EXPECT_EQ(registry_.count(), 0u);
  EXPECT_TRUE(usage) << "the call's CPU is accounted (from the instance's cgroup)";
}

// A server's dataPaths on gVisor are binds of the same host directories, read-only unless
// `:rw`: server-filesystem (the official one) reads the read-only one and writes the writable
// one, and the host sees that file; its write into the read-only one fails and leaves the host
// directory as it was.
TEST_F(GatewayOnGvisor, DataPathsAreReadOnlyUnlessRw) {
  TempDir dirs;
  const std::string data = dirs.path() + "/data", out = dirs.path() + "/out";
  fs::create_directories(data);
  fs::create_directories(out);
  std::ofstream(data + "/hello.txt") << "hello from the host";
  // The server runs as the sandbox's user; the writable directory is theirs, as an operator
  // would make it.
  ASSERT_EQ(::chown(out.c_str(), sandbox::kSandboxUid, sandbox::kSandboxGid), 0);
  policy::McpServerConfig files;
  files.name = "files";
  files.command = {"/usr/bin/node", kNodeModules + "/@modelcontextprotocol/server-filesystem/dist/index.js", "/data",
                   "/out", g_tag};
  files.data_paths.push_back({kNodeModules, kNodeModules, false});
  files.data_paths.push_back({data, "/data", false});
  files.data_paths.push_back({out, "/out", true});
  files.risk = policy::Risk::high;
  gateway_->configure({files});

  auto read = gateway_->call(tool_call("files", "read_text_file", {{"path", "/data/hello.txt"}}));
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_NE(text_of(*read).find("hello from the host"), std::string::npos) << text_of(*read);
  auto wrote = gateway_->call(tool_call("files", "write_file", {{"path", "/out/made.txt"}, {"content", "from gVisor"}}));
  ASSERT_TRUE(wrote) << wrote.error().message;
  EXPECT_FALSE(wrote->is_error) << text_of(*wrote);
  EXPECT_EQ(read_text(out + "/made.txt"), "from gVisor") << "the host sees what the server wrote";
  auto refused = gateway_->call(tool_call("files", "write_file", {{"path", "/data/x.txt"}, {"content", "x"}}));
  ASSERT_TRUE(refused) << refused.error().message;
  EXPECT_TRUE(refused->is_error) << text_of(*refused);
  EXPECT_FALSE(fs::exists(data + "/x.txt")) << "the read-only bind kept the host directory as it was";
  EXPECT_EQ(registry_.count(), 0u) << "no local sandbox";
}

// The same server on a gVisor tier and on a local one: /proc/version is the Sentry's in the
// first (gVisor's fake kernel, not the host's release) and the host's in the second.
TEST_F(GatewayOnGvisor, TheServersKernelIsNotTheHosts) {
  gateway_->configure({malicious_server("evil-gv", policy::Risk::high),
                       malicious_server("evil-local", policy::Risk::medium)});
  utsname host{};
  ASSERT_EQ(::uname(&host), 0);
  auto in_gvisor = gateway_->call(tool_call("evil-gv", "read_path", {{"path", "/proc/version"}}));
  ASSERT_TRUE(in_gvisor) << in_gvisor.error().message;
  auto local = gateway_->call(tool_call("evil-local", "read_path", {{"path", "/proc/version"}}));
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_NE(text_of(*local).find(host.release), std::string::npos) << "control: " << text_of(*local);
  EXPECT_NE(text_of(*in_gvisor).find("SUCCEEDED"), std::string::npos) << text_of(*in_gvisor);
  EXPECT_EQ(text_of(*in_gvisor).find(host.release), std::string::npos) << text_of(*in_gvisor);
  EXPECT_EQ(registry_.count(), 1u) << "only the local one is a local sandbox";
}

// Egress only through the proxy: the allowed host through it works (the control); a direct
// connection to a listener on the host's loopback, the internet, and another loopback host
// through the proxy all fail, and the other listener sees no connection.
TEST_F(GatewayOnGvisor, EgressOnlyThroughTheProxyToAllowedHosts) {
  egress::fixtures::LoopbackServer allowed([](int fd) {
    char buf[1024];
    (void)!::read(fd, buf, sizeof buf);
    const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
    (void)!::write(fd, answer, sizeof answer - 1);
  });
  egress::fixtures::LoopbackServer other([](int) {});
  auto server = malicious_server("evil", policy::Risk::high);
  auto rule = egress::parse_allow_rule("127.0.0.1:" + std::to_string(allowed.port()));
  ASSERT_TRUE(rule) << rule.error().message;
  server.network.allow.push_back(*rule);
  gateway_->configure({server});
  const std::string base = "http://127.0.0.1:";
  auto fetched = gateway_->call(tool_call("evil", "fetch", {{"url", base + std::to_string(allowed.port()) + "/"}}));
  ASSERT_TRUE(fetched) << fetched.error().message;
  EXPECT_NE(text_of(*fetched).find("SUCCEEDED 'hello\\n'"), std::string::npos) << text_of(*fetched);
  auto refused = gateway_->call(tool_call("evil", "fetch", {{"url", base + std::to_string(other.port()) + "/"}}));
  ASSERT_TRUE(refused) << refused.error().message;
  EXPECT_NE(text_of(*refused).find("fetch: failed"), std::string::npos) << text_of(*refused);
  auto harvest = gateway_->call(tool_call("evil", "harvest", {{"port", other.port()}, {"host_file", "/etc/hostname"}}));
  ASSERT_TRUE(harvest) << harvest.error().message;
  const std::string h = text_of(*harvest);
  EXPECT_NE(h.find("connect loopback: failed"), std::string::npos) << h;
  EXPECT_NE(h.find("connect 1.1.1.1:443: failed"), std::string::npos) << h;
  EXPECT_NE(h.find("read /etc/shadow: failed"), std::string::npos) << h;
  EXPECT_EQ(other.connections(), 0);
  EXPECT_EQ(allowed.connections(), 1) << "the proxy's, for the allowed fetch";
}

// A credential leased for the instance is in the server's environment (the control), and on
// the host in no process's command line or environment, and in no file but the 0600
// config.json of its bundle and runsc's own state file (which holds the spec), in a 0700
// directory.
TEST_F(GatewayOnGvisor, CredentialsOnlyInTheServersEnvironment) {
  const std::string secret = "s3cr3t-" + random_hex();
  gateway_->configure({malicious_server("evil", policy::Risk::high)});
  auto call = tool_call("evil", "getenv", {{"name", "API_TOKEN"}});
  call.lease_credentials = [&]() -> Result<std::shared_ptr<pipeline::McpServerCredentials>> {
    auto c = std::make_shared<pipeline::McpServerCredentials>();
    c->env["API_TOKEN"] = secret;
    c->values.push_back(secret);
    return c;
  };
  auto got = gateway_->call(call);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_NE(text_of(*got).find(secret), std::string::npos) << "control: " << text_of(*got);
  EXPECT_GT(runsc_processes(), 0);
  EXPECT_TRUE(processes_holding(secret).empty());
  const auto holders = sandbox::test::files_holding(state_dir(), secret);
  for (const auto& h : holders) EXPECT_TRUE(h.owner_only) << h.path;
  EXPECT_GE(holders.size(), 1u) << "control: the bundle's config.json holds it";
}

// An instance that ends (the server exits 3) leaves nothing: no container state, no directory,
// no cgroup, no process; the gateway's verdict is the server's own exit.
TEST_F(GatewayOnGvisor, NothingIsLeftWhenAnInstanceEnds) {
  gateway_->configure({malicious_server("evil", policy::Risk::high)});
  ASSERT_TRUE(gateway_->call(tool_call("evil", "whoami")));
  const auto runsc = processes_with(state_dir());
  ASSERT_FALSE(runsc.empty());
  const std::string cgroup = cgroup_dir_of(runsc.front());
  ASSERT_FALSE(cgroup.empty());
  ASSERT_NE(cgroup, cgroup_dir_of(::getpid())) << "the instance's cgroup is its own";
  ASSERT_TRUE(fs::exists(cgroup)) << cgroup;
  ASSERT_FALSE(fs::is_empty(state_dir()));
  auto crashed = gateway_->call(tool_call("evil", "crash"));
  ASSERT_FALSE(crashed);
  EXPECT_NE(crashed.error().message.find("exit_nonzero: /usr/bin/python3 exited with status 3"), std::string::npos)
      << crashed.error().message;
  EXPECT_TRUE(eventually([&] { return fs::is_empty(state_dir()) && runsc_processes() == 0 && !fs::exists(cgroup); }))
      << cgroup;
  EXPECT_TRUE(gateway_->running().empty());
}

// A server of a tier whose servers cannot run here (the daemon's refused_tiers: a tier whose
// backend is unavailable) is not started at all, not even to list its tools, rather than in
// a weaker sandbox; the control beside it on the gVisor tier starts.
TEST_F(GatewayOnGvisor, AServerOfARefusedTierIsNotStartedEvenToList) {
  GatewayOptions o;
  o.registry = &registry_;
  o.gvisor_tiers[policy::Risk::high] = backend::GvisorPlace{backend_->invocation(), backend_->state_dir()};
  o.refused_tiers[policy::Risk::critical] = "its backend is unavailable: the cluster's kubeconfig cannot be read";
  Gateway gateway(std::move(o));
  gateway.configure({malicious_server("kube", policy::Risk::critical), malicious_server("gv", policy::Risk::high)});
  auto refused = gateway.list_tools("kube");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "tier_unavailable");
  EXPECT_NE(refused.error().message.find("critical risk: its backend is unavailable"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(gateway.call(tool_call("kube", "whoami")));
  EXPECT_TRUE(gateway.list_tools("gv")) << "control";
  EXPECT_EQ(gateway.running(), std::vector<std::string>{"gv airlock listing"});
  gateway.shutdown();
}

// A daemon SIGKILLed with a server running in gVisor: what it left (the instance's directory,
// runsc's container and processes) is removed by the next one's start-up sweep, its cgroup by
// the daemon's recovery.
TEST_F(GatewayOnGvisor, WhatAKilledDaemonLeftIsRemovedByTheNextOne) {
  TempDir dir;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t daemon = ::fork();
  ASSERT_GE(daemon, 0);
  if (daemon == 0) {
    ::close(ready[0]);
    auto server = malicious_server("evil", policy::Risk::high);
    auto spec = server_spec(server, server_limits(server, {}));
    backend::GvisorStdioOptions options;
    options.place = backend::GvisorPlace{backend_->invocation(), dir.path()};
    auto s = backend::GvisorStdioSession::start(spec, {}, options);
    const char c = s ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(c, 'y');
  EXPECT_TRUE(eventually([&] { return sandbox::test::host_processes_with(dir.path()) > 0; }));
  ::kill(daemon, SIGKILL);
  int status = 0;
  ::waitpid(daemon, &status, 0);
  EXPECT_EQ(backend::remove_stale_runs(backend_->invocation(), dir.path()), 1);
  EXPECT_TRUE(fs::is_empty(dir.path()));
  EXPECT_TRUE(eventually([&] { return sandbox::test::host_processes_with(dir.path()) == 0; }, 10s));
  // Its cgroup is the daemon's recovery's to remove, as for any sandbox of a killed daemon (not
  // counted: a daemon another test starts meanwhile may have removed it first).
  (void)sandbox::remove_stale_cgroups();
}

}  // namespace
}  // namespace airlock::mcp
