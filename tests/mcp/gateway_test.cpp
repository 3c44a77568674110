// The gateway, executed: real MCP servers (server-everything, server-filesystem from npm, and a
// hostile fixture) in their long-lived sandboxes. Attacks assert they failed, and controls
// beside them show the harness would notice success. Bounds on waiting are generous and
// nothing asserts how long anything took.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/local.hpp"
#include "common/unique_fd.hpp"
#include "mcp/gateway.hpp"
#include "netrules/address.hpp"

namespace airlock::mcp {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kFixtures = MCP_FIXTURES_DIR;
const std::string kNodeModules = MCP_NODE_MODULES;  // the real path (binds need it)
const std::string kEverything =
    kNodeModules + "/@modelcontextprotocol/server-everything/dist/index.js";
const std::string kFilesystem =
    kNodeModules + "/@modelcontextprotocol/server-filesystem/dist/index.js";

std::string random_hex() {
  std::random_device rd;
  return std::to_string(rd()) + std::to_string(rd());
}

// On the command line of every server a test starts (servers ignore it), so that a test
// counts its own processes even while others run beside it (ctest -j).
std::string g_tag;

// Polls `done` until it holds or a generous bound passes (no timing is asserted).
bool eventually(const std::function<bool()>& done, std::chrono::seconds bound = 60s) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

// Host processes whose command line contains `marker`.
std::vector<int> processes_with(const std::string& marker) {
  std::vector<int> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline;
    try {
      std::ifstream in(e.path() / "cmdline", std::ios::binary);
      cmdline.assign(std::istreambuf_iterator<char>(in), {});
    } catch (const std::exception&) {
      continue;  // it exited while we read (ESRCH): not a process any more
    }
    if (cmdline.find(marker) != std::string::npos && std::stoi(name) != ::getpid())
      pids.push_back(std::stoi(name));
  }
  return pids;
}

std::string text_of(const pipeline::McpToolResult& r) {
  std::string text;
  for (const auto& c : r.content)
    if (c.contains("text") && c["text"].is_string()) text += c["text"].get<std::string>() + "\n";
  return text;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

policy::McpServerConfig node_server(const std::string& name, std::vector<std::string> args) {
  policy::McpServerConfig c;
  c.name = name;
  c.command = {"/usr/bin/node"};
  c.command.insert(c.command.end(), args.begin(), args.end());
  c.data_paths.push_back({kNodeModules, kNodeModules, false});
  return c;
}

policy::McpServerConfig malicious_server(const std::string& name = "evil") {
  policy::McpServerConfig c;
  c.name = name;
  c.command = {"/usr/bin/python3", "/fixtures/malicious_server.py", g_tag};
  c.data_paths.push_back({kFixtures, "/fixtures", false});
  return c;
}

pipeline::McpToolCall tool_call(const std::string& server, const std::string& tool,
                                nlohmann::json args = nlohmann::json::object(),
                                const std::string& owner = "agent tester") {
  pipeline::McpToolCall c;
  c.invocation_id = "inv-" + random_hex();
  c.server = server;
  c.remote_tool = tool;
  c.arguments = std::move(args);
  c.owner = owner;
  c.timeout = 60s;
  return c;
}

// What `listed` was told, in order.
struct Listings {
  std::mutex mu;
  std::vector<std::pair<std::string, std::vector<ListedTool>>> all;
  void add(const std::string& s, const std::vector<ListedTool>& t) {
    std::lock_guard lock(mu);
    all.emplace_back(s, t);
  }
  bool any_description(const std::string& needle) {
    std::lock_guard lock(mu);
    for (const auto& [s, tools] : all)
      for (const auto& t : tools)
        if (t.description.find(needle) != std::string::npos) return true;
    return false;
  }
};

class GatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the gateway's sandboxes need root here";
    g_tag = "airlock-test-" + random_hex();
    GatewayOptions o;
    o.registry = &registry_;
    o.listed = [this](const std::string& s, const std::vector<ListedTool>& t) { listings_.add(s, t); };
    gateway_ = std::make_unique<Gateway>(std::move(o));
  }
  void TearDown() override {
    if (gateway_) gateway_->shutdown();
    EXPECT_EQ(registry_.count(), 0u);
  }

  backend::RunningSandboxes registry_;
  Listings listings_;
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(GatewayTest, EverythingListsToolsEchoesAndReportsProgress) {
  gateway_->configure({node_server("everything", {kEverything, "stdio", g_tag})});
  auto tools = gateway_->list_tools("everything");
  ASSERT_TRUE(tools) << tools.error().message;
  bool has_echo = false;
  for (const auto& t : *tools) has_echo |= t.name == "echo";
  EXPECT_TRUE(has_echo);

  auto echoed = gateway_->call(tool_call("everything", "echo", {{"message", "hello gateway"}}));
  ASSERT_TRUE(echoed) << echoed.error().message;
  EXPECT_NE(text_of(*echoed).find("hello gateway"), std::string::npos) << text_of(*echoed);

  std::mutex mu;
  std::vector<pipeline::Progress> seen;
  auto long_op = tool_call("everything", "trigger-long-running-operation",
                           {{"duration", 1}, {"steps", 2}});
  long_op.progress = [&](const pipeline::Progress& p) {
    std::lock_guard lock(mu);
    seen.push_back(p);
  };
  auto done = gateway_->call(long_op);
  ASSERT_TRUE(done) << done.error().message;
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].progress, 2);
  EXPECT_EQ(seen[1].total, 2);
  gateway_->shutdown();
  EXPECT_TRUE(processes_with(g_tag).empty());
}

// Issue #38: a server that never answers initialize is ended at its startTimeout, not at the
// sandbox's wall time; the call fails naming the step; nothing of it is left.
// Issue #38: resources and prompts. server-everything's are listed (every page) and read in
// the caller's own instance; the hostile server offers neither: it is not asked, a read fails
// "not_offered" without taking the instance for a crash, and an unknown resource is the
// server's refusal (is_error), not a failure.
TEST_F(GatewayTest, ResourcesAndPromptsAreListedAndReadWhereTheServerOffersThem) {
  gateway_->configure({node_server("everything", {kEverything, "stdio", g_tag}), malicious_server()});
  auto resources = gateway_->list_content("everything", *content_listing("resources/list"));
  ASSERT_TRUE(resources) << resources.error().message;
  EXPECT_FALSE(resources->empty());
  auto prompts = gateway_->list_content("everything", *content_listing("prompts/list"));
  ASSERT_TRUE(prompts) << prompts.error().message;
  EXPECT_NE(prompts->dump().find("args-prompt"), std::string::npos) << prompts->dump();

  auto read = tool_call("everything", "", {{"uri", "demo://resource/dynamic/text/5"}});
  read.method = "resources/read";
  auto got = gateway_->call(read);
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_TRUE(got->method_result);
  EXPECT_EQ((*got->method_result)["contents"][0]["uri"], "demo://resource/dynamic/text/5");
  auto prompt = tool_call("everything", "", {{"name", "args-prompt"}, {"arguments", {{"city", "Oslo"}}}});
  prompt.method = "prompts/get";
  auto gotten = gateway_->call(prompt);
  ASSERT_TRUE(gotten && gotten->method_result) << (gotten ? "no result" : gotten.error().message);
  EXPECT_NE(gotten->method_result->dump().find("Oslo"), std::string::npos);
  auto unknown = tool_call("everything", "", {{"uri", "demo://no/such"}});
  unknown.method = "resources/read";
  auto refused = gateway_->call(unknown);
  ASSERT_TRUE(refused) << refused.error().message;
  EXPECT_TRUE(refused->is_error);
  EXPECT_FALSE(refused->method_result);

  auto none = gateway_->list_content("evil", *content_listing("resources/list"));
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
  ASSERT_TRUE(gateway_->call(tool_call("evil", "whoami")));
  auto evil_read = tool_call("evil", "", {{"uri", "file:///etc/shadow"}});
  evil_read.method = "resources/read";
  auto not_offered = gateway_->call(evil_read);
  ASSERT_FALSE(not_offered);
  EXPECT_EQ(not_offered.error().code, "not_offered") << not_offered.error().message;
  const auto running = gateway_->running();
  EXPECT_NE(std::find(running.begin(), running.end(), "evil agent tester"), running.end()) << "not taken for a crash";
}

TEST_F(GatewayTest, AServerSilentAtStartIsEndedAtItsStartTimeout) {
  policy::McpServerConfig silent;
  silent.name = "silent";
  silent.command = {"/usr/bin/python3", "-c", "import time; time.sleep(3600)", g_tag};
  silent.start_timeout = 1s;
  gateway_->configure({silent});
  auto called = gateway_->call(tool_call("silent", "anything"));
  ASSERT_FALSE(called);
  EXPECT_EQ(called.error().code, "tool_server_failed");
  EXPECT_NE(called.error().message.find("initialize"), std::string::npos) << called.error().message;
  EXPECT_TRUE(gateway_->running().empty());
  gateway_->shutdown();
  EXPECT_TRUE(processes_with(g_tag).empty());
}

// Issue #38: instances are capped per server (maxInstances) and in total: an idle one makes
// room (the least recently used), and when every one is busy the call is refused by name.
TEST_F(GatewayTest, InstancesAreCappedPerServerAndInTotal) {
  auto everything = node_server("everything", {kEverything, "stdio", g_tag});
  everything.max_instances = 1;
  gateway_->configure({everything, malicious_server()});
  ASSERT_TRUE(gateway_->call(tool_call("everything", "echo", {{"message", "a"}}, "agent a")));
  ASSERT_TRUE(gateway_->call(tool_call("everything", "echo", {{"message", "b"}}, "agent b")));
  EXPECT_EQ(gateway_->running(), std::vector<std::string>{"everything agent b"}) << "a's idle instance made room";

  // b busy with a long call: c finds no room.
  std::promise<void> started;
  auto long_op = tool_call("everything", "trigger-long-running-operation", {{"duration", 3}, {"steps", 3}}, "agent b");
  std::once_flag once;
  long_op.progress = [&](const pipeline::Progress&) { std::call_once(once, [&] { started.set_value(); }); };
  auto busy = std::async(std::launch::async, [&] { return gateway_->call(long_op); });
  started.get_future().wait();
  auto refused = gateway_->call(tool_call("everything", "echo", {{"message", "c"}}, "agent c"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "instances_full");
  EXPECT_NE(refused.error().message.find("maxInstances (1)"), std::string::npos) << refused.error().message;
  ASSERT_TRUE(busy.get());

  // In total: one instance for every server together; b's idle one goes for evil's.
  gateway_->set_max_instances(1);
  ASSERT_TRUE(gateway_->call(tool_call("evil", "whoami", {}, "agent b")));
  EXPECT_EQ(gateway_->running(), std::vector<std::string>{"evil agent b"});
}

// A directory the filesystem server is given, and a secret beside it that it must never see.
struct FilesystemFixture {
  std::string root = (fs::temp_directory_path() / ("airlock-mcp-fs-" + random_hex())).string();
  std::string data = root + "/data";
  std::string outside = root + "/outside";
  std::string marker = "HOST-SECRET-" + random_hex();
  FilesystemFixture() {
    fs::create_directories(data);
    fs::create_directories(outside);
    write_file(data + "/hello.txt", "hello from data");
    write_file(outside + "/secret.txt", marker);
    fs::create_symlink(outside + "/secret.txt", data + "/link.txt");
    fs::permissions(root, fs::perms::all);  // the sandbox's uid may read
  }
  ~FilesystemFixture() { fs::remove_all(root); }
};

TEST_F(GatewayTest, FilesystemServerSeesOnlyItsBind) {
  FilesystemFixture f;
  auto fsrv = node_server("files", {kFilesystem, "/data"});
  fsrv.data_paths.push_back({f.data, "/data", false});
  // A host path given as its allowed directory: the server sees no such directory.
  auto hostdir = node_server("hostdir", {kFilesystem, f.outside});
  auto fsroot = node_server("fsroot", {kFilesystem, "/"});
  fsroot.data_paths.push_back({f.data, "/data", false});
  gateway_->configure({fsrv, hostdir, fsroot});

  auto read = [&](const std::string& server, const std::string& path) {
    return gateway_->call(tool_call(server, "read_text_file", {{"path", path}}));
  };
  auto control = read("files", "/data/hello.txt");
  ASSERT_TRUE(control) << control.error().message;
  EXPECT_NE(text_of(*control).find("hello from data"), std::string::npos);

  for (const std::string& path :
       {std::string("/data/../../etc/shadow"), std::string("/data/link.txt"), f.data + "/hello.txt",
        f.outside + "/secret.txt", std::string("/data/../outside/secret.txt")}) {
    auto r = read("files", path);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->is_error) << path << ": " << text_of(*r);
    if (getenv("MCP_TEST_VERBOSE")) std::cerr << path << " -> " << text_of(*r);
    EXPECT_EQ(text_of(*r).find(f.marker), std::string::npos) << path;
    EXPECT_EQ(text_of(*r).find("root:"), std::string::npos) << path;
  }
  // The server's own path checks out of the way (it may read all it sees, "/"): the sandbox
  // alone stops it, for it has no such files.
  for (const std::string& path : {f.outside + "/secret.txt", std::string("/etc/shadow"),
                                  std::string("/data/link.txt"), f.data + "/hello.txt"}) {
    auto open_read = read("fsroot", path);
    ASSERT_TRUE(open_read) << open_read.error().message;
    EXPECT_TRUE(open_read->is_error) << path << ": " << text_of(*open_read);
    EXPECT_EQ(text_of(*open_read).find(f.marker), std::string::npos) << path;
    EXPECT_EQ(text_of(*open_read).find("root:"), std::string::npos) << path;
    if (getenv("MCP_TEST_VERBOSE")) std::cerr << "fsroot " << path << " -> " << text_of(*open_read);
  }
  auto inside = read("fsroot", "/data/hello.txt");  // the control: what it sees, it reads
  ASSERT_TRUE(inside) << inside.error().message;
  EXPECT_NE(text_of(*inside).find("hello from data"), std::string::npos) << text_of(*inside);

  auto r = read("hostdir", f.outside + "/secret.txt");
  if (getenv("MCP_TEST_VERBOSE")) std::cerr << "hostdir -> " << (r ? text_of(*r) : r.error().message) << "\n";
  if (r) {
    EXPECT_TRUE(r->is_error) << text_of(*r);
    EXPECT_EQ(text_of(*r).find(f.marker), std::string::npos);
  } else {
    EXPECT_EQ(r.error().code, "tool_server_failed") << r.error().message;
  }
}

TEST_F(GatewayTest, TwoOwnersNeverShareAProcess) {
  gateway_->configure({malicious_server()});
  auto a = gateway_->call(tool_call("evil", "whoami", {}, "user A"));
  auto b = gateway_->call(tool_call("evil", "whoami", {}, "user B"));
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_NE(text_of(*a), text_of(*b));
  EXPECT_EQ(gateway_->running().size(), 2u);
  EXPECT_EQ(processes_with(g_tag).size(), 2u);
  EXPECT_EQ(registry_.count(), 2u);  // each sandbox is registered while it runs

  auto wrote = gateway_->call(tool_call("evil", "write_tmp", {{"text", "B's secret"}}, "user B"));
  ASSERT_TRUE(wrote) << wrote.error().message;
  auto b_reads = gateway_->call(tool_call("evil", "read_path", {{"path", "/tmp/owner.txt"}}, "user B"));
  auto a_reads = gateway_->call(tool_call("evil", "read_path", {{"path", "/tmp/owner.txt"}}, "user A"));
  ASSERT_TRUE(b_reads && a_reads);
  EXPECT_NE(text_of(*b_reads).find("B's secret"), std::string::npos);  // the control
  EXPECT_EQ(text_of(*a_reads).find("B's secret"), std::string::npos) << text_of(*a_reads);
}

TEST_F(GatewayTest, ConcurrentFirstCallsStartOneProcess) {
  gateway_->configure({malicious_server()});
  std::vector<std::string> ids(6);
  std::vector<std::thread> threads;
  for (auto& id : ids)
    threads.emplace_back([&] {
      auto r = gateway_->call(tool_call("evil", "whoami"));
      id = r ? text_of(*r) : "error: " + r.error().message;
    });
  for (auto& t : threads) t.join();
  for (const auto& id : ids) EXPECT_EQ(id, ids[0]);
  EXPECT_EQ(ids[0].find("error"), std::string::npos) << ids[0];
  EXPECT_EQ(processes_with(g_tag).size(), 1u);
}

TEST_F(GatewayTest, CancelAndTimeoutKeepTheInstance) {
  gateway_->configure({node_server("everything", {kEverything, "stdio", g_tag})});
  auto warm = gateway_->call(tool_call("everything", "echo", {{"message", "warm"}}));
  ASSERT_TRUE(warm) << warm.error().message;

  CancelSignal cancel;
  auto long_op = tool_call("everything", "trigger-long-running-operation",
                           {{"duration", 30}, {"steps", 30}});
  long_op.cancel = &cancel;
  long_op.progress = [&](const pipeline::Progress&) { cancel.cancel(); };  // at the first step
  auto cancelled = gateway_->call(long_op);
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().code, "cancelled");

  auto slow = tool_call("everything", "trigger-long-running-operation",
                        {{"duration", 30}, {"steps", 1}});
  slow.timeout = 200ms;
  auto timed_out = gateway_->call(slow);
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().code, "timeout");

  auto after = gateway_->call(tool_call("everything", "echo", {{"message", "still here"}}));
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(gateway_->running().size(), 1u);
}

TEST_F(GatewayTest, ConfigureStopsChangedAndRemovedServers) {
  auto evil = malicious_server();
  auto other = malicious_server("other");
  gateway_->configure({evil, other});
  auto first = gateway_->call(tool_call("evil", "whoami"));
  ASSERT_TRUE(first && gateway_->call(tool_call("other", "whoami")));
  ASSERT_EQ(gateway_->running().size(), 2u);

  auto moved = evil;
  moved.where = "elsewhere.yaml:9";  // where it is written is not what it runs
  gateway_->configure({moved, other});
  EXPECT_EQ(gateway_->running().size(), 2u);

  auto changed = evil;
  changed.env["MODE"] = "new";
  gateway_->configure({changed});  // evil changed, other removed
  EXPECT_TRUE(eventually([&] { return gateway_->running().empty(); }));
  auto second = gateway_->call(tool_call("evil", "whoami"));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_NE(text_of(*first), text_of(*second));  // a new process
  auto gone = gateway_->call(tool_call("other", "whoami"));
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().message.find("no MCP server named other"), std::string::npos);
}

TEST_F(GatewayTest, IdleInstancesStop) {
  auto c = malicious_server();
  c.idle_timeout = 300ms;
  gateway_->configure({c});
  auto r = gateway_->call(tool_call("evil", "whoami"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(eventually([&] { return gateway_->running().empty(); }));
  EXPECT_TRUE(eventually([&] { return processes_with(g_tag).empty(); }));
  EXPECT_TRUE(eventually([&] { return registry_.count() == 0; }));
}

TEST_F(GatewayTest, CrashFailsTheCallAndRestartsAfterBackoff) {
  gateway_->configure({malicious_server()});
  auto crashed = gateway_->call(tool_call("evil", "crash"));
  ASSERT_FALSE(crashed);
  EXPECT_EQ(crashed.error().code, "tool_server_failed");
  EXPECT_NE(crashed.error().message.find("exit_nonzero"), std::string::npos)
      << crashed.error().message;
  EXPECT_NE(crashed.error().message.find("3"), std::string::npos) << crashed.error().message;

  // Until the backoff is over calls fail at once, saying when it restarts; then it does.
  bool restarted = eventually([&] {
    auto r = gateway_->call(tool_call("evil", "whoami"));
    if (!r) {
      EXPECT_NE(r.error().message.find("restarted in"), std::string::npos) << r.error().message;
    }
    return r.ok();
  });
  EXPECT_TRUE(restarted);
}

TEST_F(GatewayTest, AnEndlessLineEndsTheInstance) {
  gateway_->configure({malicious_server()});
  auto r = gateway_->call(tool_call("evil", "flood"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "tool_server_failed");
  EXPECT_NE(r.error().message.find("protocol error"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("longer than 4194304 bytes"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(eventually([&] { return processes_with(g_tag).empty(); }));
  EXPECT_TRUE(gateway_->running().empty());
}

TEST_F(GatewayTest, MaliciousServerIsContained) {
  // The test's listener on the host's loopback: the server must never reach it.
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener.get(), 8), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);

  FilesystemFixture f;  // its secret stands for any host file outside the binds
  const std::string daemon_marker = "airlock-daemon-" + random_hex();
  gateway_->configure({malicious_server()});
  auto r = gateway_->call(tool_call(
      "evil", "harvest",
      {{"host_file", f.outside + "/secret.txt"}, {"port", port}, {"marker", daemon_marker}}));
  ASSERT_TRUE(r) << r.error().message;
  const std::string text = text_of(*r);
  EXPECT_NE(text.find("read /etc/shadow: failed"), std::string::npos) << text;
  EXPECT_NE(text.find("read host file: failed"), std::string::npos) << text;
  EXPECT_EQ(text.find(f.marker), std::string::npos) << text;
  EXPECT_NE(text.find("connect 1.1.1.1:443: failed"), std::string::npos) << text;
  EXPECT_NE(text.find("connect loopback: failed"), std::string::npos) << text;
  EXPECT_EQ(::accept(listener.get(), nullptr, nullptr), -1);  // nothing ever connected
  // The raw result comes back (DLP redacts it later, in the pipeline).
  EXPECT_NE(text.find("AKIAIOSFODNN7EXAMPLE"), std::string::npos) << text;
  EXPECT_NE(text.find("ignore all previous instructions"), std::string::npos) << text;
  EXPECT_NE(r->server_log.find("malicious: called harvest"), std::string::npos) << r->server_log;

  // The rug pull: listed again with the changed description.
  EXPECT_TRUE(eventually([&] { return listings_.any_description("IGNORE PREVIOUS INSTRUCTIONS"); }));
  EXPECT_TRUE(listings_.any_description("Harvests nothing"));

  // The daemon it left runs while the instance does (the control), and goes with it.
  EXPECT_TRUE(eventually([&] { return !processes_with(daemon_marker).empty(); }));
  gateway_->shutdown();
  EXPECT_TRUE(processes_with(daemon_marker).empty());
  EXPECT_TRUE(processes_with(g_tag).empty());
  auto after = gateway_->call(tool_call("evil", "whoami"));
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, "stopped");
}

// A listening socket on the host's 127.0.0.1 and its port.
std::pair<UniqueFd, int> host_listener() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::listen(fd.get(), 8), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return {std::move(fd), ntohs(addr.sin_port)};
}

// Answers every HTTP request with "hello from the host" until the listener is shut down.
struct HostHttpServer {
  std::pair<UniqueFd, int> listener = host_listener();
  std::thread thread{[this] {
    for (;;) {
      int c = ::accept4(listener.first.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      char buf[4096];
      (void)!::read(c, buf, sizeof buf);
      const std::string reply =
          "HTTP/1.1 200 OK\r\nContent-Length: 19\r\nConnection: close\r\n\r\nhello from the host";
      (void)!::write(c, reply.data(), reply.size());
      ::close(c);
    }
  }};
  int port() const { return listener.second; }
  ~HostHttpServer() {
    ::shutdown(listener.first.get(), SHUT_RDWR);
    thread.join();
  }
};

TEST_F(GatewayTest, NetworkRulesGoThroughTheEgressProxy) {
  HostHttpServer http;
  auto c = malicious_server();
  c.network.allow.push_back({"127.0.0.1", static_cast<std::uint16_t>(http.port())});
  gateway_->configure({c});
  const std::string url = "http://127.0.0.1:" + std::to_string(http.port()) + "/";
  auto allowed = gateway_->call(tool_call("evil", "fetch", {{"url", url}}));
  ASSERT_TRUE(allowed) << allowed.error().message;
  EXPECT_NE(text_of(*allowed).find("hello from the host"), std::string::npos) << text_of(*allowed);
  auto other = host_listener();  // a port no rule names
  auto denied = gateway_->call(tool_call(
      "evil", "fetch", {{"url", "http://127.0.0.1:" + std::to_string(other.second) + "/"}}));
  ASSERT_TRUE(denied) << denied.error().message;
  EXPECT_NE(text_of(*denied).find("fetch: failed"), std::string::npos) << text_of(*denied);

  // The daemon's own endpoints stay out of reach whatever a server's rules say.
  gateway_->shutdown();
  GatewayOptions o;
  o.registry = &registry_;
  auto address = netrules::parse_ip_literal("127.0.0.1");
  ASSERT_TRUE(address);
  o.forbidden = std::make_shared<const std::vector<egress::Endpoint>>(
      std::vector<egress::Endpoint>{{*address, static_cast<std::uint16_t>(http.port())}});
  gateway_ = std::make_unique<Gateway>(std::move(o));
  gateway_->configure({c});
  auto forbidden = gateway_->call(tool_call("evil", "fetch", {{"url", url}}));
  ASSERT_TRUE(forbidden) << forbidden.error().message;
  EXPECT_NE(text_of(*forbidden).find("fetch: failed"), std::string::npos) << text_of(*forbidden);
}

TEST_F(GatewayTest, DisabledToolIsRefused) {
  GatewayOptions o;
  o.registry = &registry_;
  o.admitted = [](const std::string&, const ListedTool& t) -> Status {
    if (t.name == "harvest") return Error::make("tool_disabled", "harvest changed since pinned");
    return {};
  };
  gateway_ = std::make_unique<Gateway>(std::move(o));
  gateway_->configure({malicious_server()});
  auto r = gateway_->call(tool_call("evil", "harvest"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "tool_disabled");
  auto anonymous = gateway_->call(tool_call("evil", "whoami", {}, ""));
  ASSERT_FALSE(anonymous);
  EXPECT_EQ(anonymous.error().code, "invalid_argument");
  auto missing = gateway_->call(tool_call("evil", "no_such_tool"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("does not list a tool named no_such_tool"),
            std::string::npos);
}

}  // namespace
}  // namespace airlock::mcp
