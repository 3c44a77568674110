// tools[].warm through the daemon: a call that finds no warm template runs cold and says so
// (the response's "start", the log's note, the metric); once the template is ready calls
// fork from it; a template that is killed is replaced. The isolation of warm calls from each
// other is tests/sandbox/warm_test.cpp's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <algorithm>
#include <sstream>
#include <thread>

#include "backend/warm_pool.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A /proc file's text, "" when the process has gone meanwhile (reading it then fails ESRCH).
std::string read_proc(const std::string& path) {
  std::string text;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return text;
}

// The host pids of processes whose command line contains `marker` (NULs between arguments)
// and whose parent's does not: the templates, not the calls' processes (their inits and tools,
// prepared or running, are copies of the template, command line included).
std::vector<pid_t> processes_with(const std::string& marker) {
  auto has_marker = [&](const std::string& pid) {
    return read_proc("/proc/" + pid + "/cmdline").find(marker) != std::string::npos;
  };
  auto parent_of = [](const std::string& pid) {
    const std::string stat = read_proc("/proc/" + pid + "/stat");
    auto after_name = stat.rfind(')');
    if (after_name == std::string::npos) return std::string();
    std::istringstream fields(stat.substr(after_name + 2));
    std::string state, ppid;
    fields >> state >> ppid;
    return ppid;
  };
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (!has_marker(name)) continue;
    const std::string parent = parent_of(name);
    if (!parent.empty() && !has_marker(parent)) pids.push_back(std::stoi(name));
  }
  return pids;
}

// The calls' processes: those with `marker` whose parent has it too.
std::size_t call_processes_with(const std::string& marker) {
  std::size_t all = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    all += read_proc(entry.path() / "cmdline").find(marker) != std::string::npos;
  }
  return all - processes_with(marker).size();
}

// Calls until one reports `start`, up to `tries` calls 100 ms apart; returns the last reply.
nlohmann::json call_until(std::uint16_t port, const std::string& start, int tries = 100) {
  nlohmann::json j;
  for (int i = 0; i < tries; ++i) {
    j = invoke(port, "warm-echo", {{"n", i}}).json();
    if (j.value("start", "") == start) return j;
    std::this_thread::sleep_for(100ms);
  }
  return j;
}

class WarmDaemon : public ::testing::Test {
 protected:
  explicit WarmDaemon(const std::string& warm = "{}")
      : tool_("warm_echo_" + std::to_string(::getpid()) + "_" +
              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".py"),
        ws_("", "  - name: warm-echo\n    runtime: {type: python, file: tools/" + tool_ +
                    "}\n    warm: " + warm + "\n") {
    fs::copy_file(ws_.dir() + "/tools/echo.py", ws_.dir() + "/tools/" + tool_);
  }
  // Inside the sandbox the tool is /tool/<file>: unique to this test's template.
  std::string template_marker() const { return "template" + std::string(1, '\0') + "/tool/" + tool_; }

  std::string tool_;
  Workspace ws_;
};

TEST_F(WarmDaemon, TheFirstCallRunsColdAndSaysSoThenCallsForkFromTheTemplate) {
  RunningDaemon d(ws_);
  auto first = invoke(d.port, "warm-echo", {{"n", 1}});
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.json()["status"], "ok") << first.body;
  EXPECT_EQ(first.json()["start"], "cold") << first.body;
  auto stored = http(d.port, "GET", "/v1/invocations/" + first.json()["id"].get<std::string>());
  EXPECT_NE(stored.body.find("ran cold: no warm template was ready"), std::string::npos)
      << stored.body;

  auto warm = call_until(d.port, "warm");
  EXPECT_EQ(warm["start"], "warm") << warm;
  EXPECT_EQ(warm["status"], "ok") << warm;
  EXPECT_TRUE(warm["output"]["echo"]["n"].is_number()) << warm;
  EXPECT_EQ(processes_with(template_marker()).size(), 1u);
  auto metrics = http(d.port, "GET", "/metrics", "", "").body;
  EXPECT_NE(metrics.find(R"(airlock_invocation_starts_total{start="warm",tool="warm-echo"})"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(airlock_invocation_starts_total{start="cold",tool="warm-echo"})"),
            std::string::npos)
      << metrics;
}

TEST_F(WarmDaemon, AKilledTemplateIsReplacedAndCallsMeanwhileRunCold) {
  RunningDaemon d(ws_);
  ASSERT_EQ(call_until(d.port, "warm")["start"], "warm");
  auto before = processes_with(template_marker());
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(::kill(before[0], SIGKILL), 0);
  // Until it is gone (a zombie's command line is empty) or replaced.
  for (int i = 0; i < 100; ++i, std::this_thread::sleep_for(20ms)) {
    auto now = processes_with(template_marker());
    if (now.empty() || now[0] != before[0]) break;
  }
  // Every call succeeds: cold until the replacement is ready, then warm from it.
  auto after = call_until(d.port, "warm");
  EXPECT_EQ(after["start"], "warm") << after;
  EXPECT_EQ(after["status"], "ok") << after;
  // The killed template's children die with it (PR_SET_PDEATHSIG) a moment after it.
  auto now = processes_with(template_marker());
  for (int i = 0; i < 100 && now.size() != 1; ++i, std::this_thread::sleep_for(50ms))
    now = processes_with(template_marker());
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], before[0]);
}

class RecycledWarmDaemon : public WarmDaemon {
 protected:
  RecycledWarmDaemon() : WarmDaemon("{recycleCalls: 2}") {}
};

// Its successor starts at the recycling point and takes over once ready: no call runs cold.
TEST_F(RecycledWarmDaemon, ARecycledTemplateIsReplacedWithoutAColdCall) {
  RunningDaemon d(ws_);
  ASSERT_EQ(call_until(d.port, "warm")["start"], "warm");
  auto first = processes_with(template_marker());
  ASSERT_EQ(first.size(), 1u);
  bool replaced = false;
  // Until the successor (a Python start and import) is ready: warm calls take milliseconds.
  for (int i = 0; i < 500 && !replaced; ++i, std::this_thread::sleep_for(10ms)) {
    auto j = invoke(d.port, "warm-echo", {{"n", i}}).json();
    ASSERT_EQ(j["status"], "ok") << j;
    EXPECT_EQ(j["start"], "warm") << j;
    auto now = processes_with(template_marker());
    replaced = std::find(now.begin(), now.end(), first[0]) == now.end() && !now.empty();
  }
  EXPECT_TRUE(replaced);
  // The children the retired template had prepared went with it: what is left of the calls'
  // processes belongs to its successor (at most its prepared children, two processes each).
  std::size_t left = 0;
  for (int i = 0; i < 100; ++i, std::this_thread::sleep_for(50ms))
    if ((left = call_processes_with(template_marker())) <= 2 * backend::kPreparedChildren) break;
  EXPECT_LE(left, 2 * backend::kPreparedChildren);
}

// Calls taken by prepared children (started before their call, handed it at the call): each
// gets its own arguments and none of another's, one after the other and ten at once.
TEST_F(WarmDaemon, EveryCallOfAPreparedChildGetsItsOwnArguments) {
  RunningDaemon d(ws_);
  ASSERT_EQ(call_until(d.port, "warm")["start"], "warm");
  for (int i = 0; i < 20; ++i) {
    auto j = invoke(d.port, "warm-echo", {{"n", 1000 + i}}).json();
    ASSERT_EQ(j["status"], "ok") << j;
    EXPECT_EQ(j["start"], "warm") << j;
    EXPECT_EQ(j["output"]["echo"]["n"], 1000 + i) << j;
  }
  std::vector<std::thread> clients;
  std::vector<nlohmann::json> replies(10);
  for (int c = 0; c < 10; ++c)
    clients.emplace_back([&, c] { replies[c] = invoke(d.port, "warm-echo", {{"n", 2000 + c}}).json(); });
  for (auto& t : clients) t.join();
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(replies[c]["status"], "ok") << replies[c];
    EXPECT_EQ(replies[c]["output"]["echo"]["n"], 2000 + c) << replies[c];
  }
}

// A warm python-code tool: its template imports the runner only, and each cell runs in a
// child of it with the cold path's answers: the result and what it printed, a raising cell's
// code_error with its traceback, validation's refusal before anything runs.
TEST(WarmPythonCode, CellsRunWarmWithTheAnswersOfTheColdPath) {
  Workspace ws("", "  - name: warm-code\n    runtime: {type: python-code}\n    warm: {}\n");
  RunningDaemon d(ws);
  nlohmann::json ran;
  for (int i = 0; i < 100; ++i, std::this_thread::sleep_for(100ms)) {
    ran = invoke(d.port, "warm-code", {{"code", "print('hi')\ndef run(a):\n    return {'n': a['n']}\n"},
                                       {"arguments", {{"n", i}}}}).json();
    ASSERT_EQ(ran["status"], "ok") << ran;
    if (ran["start"] == "warm") break;
  }
  ASSERT_EQ(ran["start"], "warm") << ran;
  EXPECT_TRUE(ran["output"]["result"]["n"].is_number()) << ran;
  EXPECT_EQ(ran["output"]["stdout"], "hi\n") << ran;

  auto raised = invoke(d.port, "warm-code", {{"code", "def half(n):\n    return n / 0\nprint('before')\nhalf(4)\n"}}).json();
  EXPECT_EQ(raised["start"], "warm") << raised;
  EXPECT_EQ(raised["status"], "error") << raised;
  EXPECT_EQ(raised["verdict"], "exit_nonzero") << raised;
  const auto& details = raised["error"]["details"];
  EXPECT_EQ(raised["error"]["kind"], "code_error") << raised;
  EXPECT_EQ(details["name"], "ZeroDivisionError") << details;
  EXPECT_EQ(details["line"], 2) << details;
  EXPECT_EQ(details["stdout"], "before\n") << details;
  EXPECT_NE(details["traceback"].dump().find("return n / 0"), std::string::npos) << details;

  // The cell a prepared child rehearses before its call (airlock_runner.py rehearse_code)
  // leaves the call's cell none of its names and nothing of what it printed.
  auto clean = invoke(d.port, "warm-code", {{"code", "try:\n    print(items, Acc, text)\nexcept NameError:\n    print('clean')\n"}}).json();
  EXPECT_EQ(clean["start"], "warm") << clean;
  EXPECT_EQ(clean["status"], "ok") << clean;
  EXPECT_EQ(clean["output"]["stdout"], "clean\n") << clean;

  // Validation still refuses what it refuses cold: nothing starts.
  auto refused = invoke(d.port, "warm-code", {{"code", "import os\nos.system('id')\n"}}).json();
  EXPECT_EQ(refused["status"], "denied") << refused;
  EXPECT_EQ(refused["error"]["kind"], "code_rejected") << refused;
  EXPECT_TRUE(refused["verdict"].is_null()) << "the code must not have run: " << refused;
}

// A tool with network rules runs warm through the daemon: each call's proxy is bound at its
// hand-over (docs/warm-start.md, "A networked tool"), with the tool's rules and the daemon's
// forbidden endpoints (its own API), and answers warm what it answers cold.
TEST(WarmNetworked, ANetworkedToolRunsWarmBehindItsOwnProxy) {
  Collector allowed;
  Workspace ws("", "  - name: warm-net\n    runtime: {type: python, file: tools/connect_through_proxy.py}\n"
                   "    network: {allow: [\"127.0.0.1:" + std::to_string(allowed.port()) + "\"]}\n"
                   "    warm: {}\n");
  RunningDaemon d(ws);
  nlohmann::json j;
  for (int i = 0; i < 100; ++i, std::this_thread::sleep_for(100ms)) {
    j = invoke(d.port, "warm-net", {{"port", allowed.port()}}).json();
    ASSERT_EQ(j["status"], "ok") << j;
    EXPECT_EQ(j["output"]["answer"].get<std::string>().rfind("HTTP/1.1 200", 0), 0u) << j;
    if (j["start"] == "warm") break;
  }
  ASSERT_EQ(j["start"], "warm") << j;
  // Another port, and the daemon's own API: refused by this call's proxy, warm as cold.
  for (std::uint16_t port : {static_cast<std::uint16_t>(allowed.port() + 1), d.port}) {
    auto denied = invoke(d.port, "warm-net", {{"port", port}}).json();
    EXPECT_EQ(denied["start"], "warm") << denied;
    EXPECT_EQ(denied["output"]["answer"].get<std::string>().rfind("HTTP/1.1 403", 0), 0u) << denied;
  }
}

}  // namespace
}  // namespace airlock::server::test
