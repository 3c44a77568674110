// Reliability: a daemon killed with SIGKILL leaves nothing running and is recovered on the
// next start; 500 invocations from 50 clients, half of them hostile, all get a correct typed
// result and leave nothing behind.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "audit/log_reader.hpp"
#include "audit/verify.hpp"
#include "sandbox/cgroup.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

int host_processes_with(const std::string& needle) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(needle) != std::string::npos) ++n;
  }
  return n;
}

// The sandbox cgroups a daemon process made ("airlock-<pid>-<n>"); other tests' are not ours.
std::set<std::string> airlock_cgroups(pid_t owner) {
  const std::string prefix = "airlock-" + std::to_string(owner) + "-";
  std::set<std::string> out;
  const auto& cg = sandbox::cgroup_support();
  for (const std::string& base : {cg.v2_base, cg.v1_memory, cg.v1_pids, cg.v1_cpuacct}) {
    if (base.empty()) continue;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(base, ec))
      if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0)
        out.insert(e.path().string());
  }
  return out;
}

// A port the daemon can listen on twice (before and after its restart). It comes from below
// the kernel's ephemeral range, so no other test's port-0 bind or outgoing connection can take
// it between our probe and the daemon's bind.
std::uint16_t free_port() {
  for (int attempt = 0; attempt < 2000; ++attempt) {
    auto port = static_cast<std::uint16_t>(20000 + (::getpid() * 7 + attempt) % 10000);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return port;
  }
  ADD_FAILURE() << "no free port in 20000-29999";
  return 0;
}

// `airlock serve` as a separate process.
pid_t start_serving(const Workspace& ws, std::uint16_t port, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 2);
    std::string listen = "127.0.0.1:" + std::to_string(port);
    ::execl(AIRLOCK_BINARY, "airlock", "serve", "--config", ws.config_path().c_str(), "--listen", listen.c_str(),
            nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 300 && http(port, "GET", "/healthz", "", "").status != 200; ++i) std::this_thread::sleep_for(20ms);
  return pid;
}

TEST(Restart, AfterSigkillNothingRunsAndTheNextStartRecovers) {
  Workspace ws;
  const std::uint16_t port = free_port();
  const std::string log = ws.dir() + "/daemon.log";
  pid_t daemon = start_serving(ws, port, log);
  ASSERT_EQ(http(port, "GET", "/healthz", "", "").status, 200);
  ASSERT_EQ(invoke(port, "echo", {{"n", 1}}).status, 200);

  auto slow = std::async(std::launch::async, [&] { return invoke(port, "slow", {{"seconds", 60}}); });
  for (int i = 0; i < 300 && host_processes_with("/tool/slow.py") == 0; ++i) std::this_thread::sleep_for(20ms);
  ASSERT_GT(host_processes_with("/tool/slow.py"), 0) << "the slow tool never started";

  ::kill(daemon, SIGKILL);
  ::waitpid(daemon, nullptr, 0);
  EXPECT_EQ(slow.get().status, 0);  // the connection died with the daemon
  // The sandbox died with its supervisor (PDEATHSIG, then the pid namespace).
  for (int i = 0; i < 250 && host_processes_with("/tool/slow.py") > 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(host_processes_with("/tool/slow.py"), 0) << "a sandbox outlived its daemon";

  pid_t second = start_serving(ws, port, log);
  ASSERT_EQ(http(port, "GET", "/healthz", "", "").status, 200);
  // Its cgroups are gone, and the invocation it was running is recorded as aborted.
  for (const auto& dir : airlock_cgroups(daemon)) ADD_FAILURE() << dir << " was left";
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("recorded 1 aborted invocation(s)"), std::string::npos) << text;
  EXPECT_EQ(invoke(port, "echo", {{"n", 2}}).json()["status"], "ok");
  ::kill(second, SIGTERM);
  int status = 0;
  ::waitpid(second, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  auto reader = audit::LogReader::open(ws.audit_path());
  ASSERT_TRUE(reader.ok());
  auto report = audit::verify_log(*reader);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->intact());
  EXPECT_EQ(report->records, 3u);  // echo, the aborted slow one, echo
  bool aborted = false;
  for (std::uint64_t i = 0; i < report->records; ++i) {
    auto record = reader->record(i);
    ASSERT_TRUE(record.ok());
    aborted |= record->find("\"verdict\":\"aborted\"") != std::string::npos;
  }
  EXPECT_TRUE(aborted);
}

TEST(Load, FiveHundredInvocationsHalfHostileAllTypedNothingLeaked) {
  Workspace ws("server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 8, queueLength: 600, drainTimeout: 60s}",
               R"(  - name: quick-spin
    runtime: {type: python, file: tools/spin.py}
    limits: {timeout: 500ms}
  - name: quick-fork-bomb
    runtime: {type: python, file: tools/fork_bomb.py}
    limits: {timeout: 500ms, pids: 8}
)");
  const auto cgroups_before = airlock_cgroups(::getpid());
  {
    RunningDaemon d(ws);
    struct Expect {
      std::string tool, status, kind;
    };
    const std::vector<Expect> mix = {
        {"echo", "ok", ""},
        {"quick-fork-bomb", "error", "timeout"},
        {"echo", "ok", ""},
        {"memory-bomb", "error", "memory_limit"},
        {"echo", "ok", ""},
        {"quick-spin", "error", "timeout"},
        {"echo", "ok", ""},
        {"crash", "error", "tool_crashed"},
    };
    std::atomic<int> next{0}, wrong{0};
    std::mutex mu;
    std::vector<std::string> mistakes;
    std::vector<std::thread> clients;
    for (int c = 0; c < 50; ++c)
      clients.emplace_back([&] {
        for (int i; (i = next++) < 500;) {
          const auto& e = mix[static_cast<std::size_t>(i) % mix.size()];
          auto r = invoke(d.port, e.tool, {{"n", 1}});
          auto j = r.json();
          bool right = r.status == 200 && !j.is_discarded() && j["status"] == e.status &&
                       (e.kind.empty() ? j["error"].is_null() : j["error"]["kind"] == e.kind) &&
                       j["audit"].is_object();
          if (!right) {
            ++wrong;
            std::lock_guard lock(mu);
            mistakes.push_back(e.tool + " -> " + std::to_string(r.status) + " " + r.body.substr(0, 200));
          }
        }
      });
    for (auto& t : clients) t.join();
    EXPECT_EQ(wrong.load(), 0) << (mistakes.empty() ? "" : mistakes.front());
    EXPECT_EQ(audit_records(ws.audit_path()), 500u);
    auto metrics = http(d.port, "GET", "/metrics").body;
    EXPECT_NE(metrics.find("airlock_sandboxes_running 0"), std::string::npos);
  }
  EXPECT_EQ(airlock_cgroups(::getpid()), cgroups_before);
  EXPECT_EQ(host_processes_with("/tool/spin.py"), 0);
  EXPECT_EQ(host_processes_with("/tool/fork_bomb.py"), 0);
}

}  // namespace
}  // namespace airlock::server::test
