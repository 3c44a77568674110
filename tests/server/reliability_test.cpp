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
#include "creds/secret_store.hpp"
#include "pg_cluster.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

int host_processes_with(const std::string& needle) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // read(2), not a stream: a process that exits meanwhile fails the read (ESRCH), which
    // libstdc++'s filebuf turns into an exception.
    int fd = ::open((e.path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string cmd;
    char buffer[4096];
    for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) > 0;)
      cmd.append(buffer, static_cast<std::size_t>(got));
    ::close(fd);
    if (cmd.find(needle) != std::string::npos) ++n;
  }
  return n;
}

// The sandbox cgroups a daemon process made ("airlock-<pid>-<n>"); other tests' are not ours.
std::set<std::string> airlock_cgroups(pid_t owner) {
  const std::string prefix = "airlock-" + std::to_string(owner) + "-";
  std::set<std::string> out;
  const auto& cg = sandbox::cgroup_support();
  for (const std::string& base : {cg.v2_base, cg.v1_memory, cg.v1_pids, cg.v1_cpuacct, cg.v1_cpu, cg.v1_freezer}) {
    if (base.empty()) continue;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(base, ec))
      if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0)
        out.insert(e.path().string());
  }
  return out;
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
  const std::uint16_t port = free_port(20000);
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

// Issue #35: a session with a command running in it when its daemon is killed. Its processes
// die with the daemon, the next start removes its cgroups and records it as aborted.
TEST(Restart, AfterSigkillASessionLeavesNothingAndIsRecordedAborted) {
  Workspace ws("", "\nsessionTemplates:\n  - name: dev\n");
  const std::uint16_t port = free_port(20000);
  const std::string log = ws.dir() + "/daemon.log";
  pid_t daemon = start_serving(ws, port, log);
  auto created = http(port, "POST", "/v1/sessions", R"({"template": "dev"})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];
  auto running = std::async(std::launch::async, [&] {
    return http(port, "POST", "/v1/sessions/" + id + "/exec", R"({"command": ["/bin/sleep", "61.25"]})");
  });
  for (int i = 0; i < 300 && host_processes_with("61.25") == 0; ++i) std::this_thread::sleep_for(20ms);
  ASSERT_GT(host_processes_with("61.25"), 0) << "the exec never started";
  EXPECT_FALSE(airlock_cgroups(daemon).empty());

  ::kill(daemon, SIGKILL);
  ::waitpid(daemon, nullptr, 0);
  EXPECT_EQ(running.get().status, 0);  // the connection died with the daemon
  for (int i = 0; i < 250 && host_processes_with("61.25") > 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(host_processes_with("61.25"), 0) << "a session's process outlived its daemon";

  pid_t second = start_serving(ws, port, log);
  ASSERT_EQ(http(port, "GET", "/healthz", "", "").status, 200);
  for (const auto& dir : airlock_cgroups(daemon)) ADD_FAILURE() << dir << " was left";
  EXPECT_EQ(http(port, "GET", "/v1/sessions/" + id).status, 404);
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("1 aborted session(s)"), std::string::npos) << text;
  ::kill(second, SIGTERM);
  ::waitpid(second, nullptr, 0);
  auto reader = audit::LogReader::open(ws.audit_path());
  ASSERT_TRUE(reader.ok());
  bool aborted = false;
  for (std::uint64_t i = 0; i < *reader->size(); ++i) {
    auto record = json::parse(*reader->record(i));
    aborted |= record["schema"] == "airlock.session/v1" && record["session_id"] == id &&
               record["event"] == "ended" && record["reason"] == "aborted";
  }
  EXPECT_TRUE(aborted);
}

json introspect(std::uint16_t port, const std::string& token) {
  return http_with(port, "POST", "/v1/token/introspect", "token=" + token, kKey,
                   {{"Content-Type", "application/x-www-form-urlencoded"}})
      .json();
}

// The mission's promise under a crash: a daemon killed mid-call leaves a lease row, and the
// next start revokes it before serving.
TEST(Restart, TheCredentialsOfACallKilledWithItsDaemonAreRevokedAtTheNextStart) {
  Collector collector;
  auto pg = airlock::test::PgCluster::start();
  ASSERT_TRUE(pg.ok()) << pg.error().message;
  ASSERT_TRUE((*pg)->exec("CREATE ROLE shop_admin LOGIN CREATEROLE PASSWORD 'admin-pw'").ok());
  ASSERT_TRUE((*pg)->exec("CREATE DATABASE shop OWNER shop_admin").ok());
  ASSERT_TRUE((*pg)->exec("SET ROLE shop_admin; CREATE TABLE orders (id int)", "shop").ok());
  auto lease_roles = [&] {
    auto roles = (*pg)->column("SELECT rolname FROM pg_roles WHERE rolname ~ '^airlock_[0-9a-f]{32}$'");
    return roles.ok() ? roles->size() : 99u;
  };
  Workspace ws("", R"(  - name: send-token
    runtime: {type: python, file: tools/send_credential.py}
    limits: {timeout: 120s}
    network: {forward: ["7000=127.0.0.1:)" + std::to_string(collector.port()) + R"("]}
    credentials:
      - env: REPORTS_TOKEN
        token: {audience: "https://reports.internal", scopes: ["reports:write"], ttl: 5m}
      - env: ORDERS_DB_URL
        postgres: {server: orders, grant: {select: [orders]}, ttl: 5m}
credentialServers:
  - name: orders
    postgres: {host: 127.0.0.1, port: )" + std::to_string((*pg)->port()) + R"(, database: shop, adminSecret: orders-admin}
)");
  {
    auto store = creds::SecretStore::open(ws.dir() + "/data");
    ASSERT_TRUE(store.ok()) << store.error().message;
    ASSERT_TRUE((*store)->set("orders-admin", (*pg)->url("shop_admin", "admin-pw", "shop")).ok());
  }
  const std::uint16_t port = free_port(21000);
  const std::string log = ws.dir() + "/daemon.log";
  pid_t daemon = start_serving(ws, port, log);
  auto call = std::async(std::launch::async, [&] {
    return invoke(port, "send-token", {{"var", "REPORTS_TOKEN"}, {"port", 7000}, {"sleep", 60}});
  });
  const std::string token = collector.next();
  ASSERT_FALSE(token.empty()) << "the tool never sent its token";
  ASSERT_EQ(introspect(port, token)["active"], true);
  ASSERT_EQ(lease_roles(), 1u);  // the call's role exists while it runs

  ::kill(daemon, SIGKILL);
  ::waitpid(daemon, nullptr, 0);
  EXPECT_EQ(call.get().status, 0);

  pid_t second = start_serving(ws, port, log);
  ASSERT_EQ(http(port, "GET", "/healthz", "", "").status, 200);
  EXPECT_EQ(introspect(port, token), json({{"active", false}}));
  EXPECT_EQ(lease_roles(), 0u) << "the killed call's postgres role was not dropped";
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("revoked 2 credential lease(s)"), std::string::npos) << text;
  EXPECT_EQ(text.find(token), std::string::npos) << "the daemon logged a credential";
  ::kill(second, SIGTERM);
  ::waitpid(second, nullptr, 0);
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

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Waits for `pid` to exit (bounded); -1 if it did not.
int exit_status(pid_t pid) {
  for (int i = 0; i < 1500; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(20ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// Runs `airlock ARGS...` to its end, stderr into `log`; its exit status.
int run_airlock(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    std::vector<char*> argv = {const_cast<char*>("airlock")};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(AIRLOCK_BINARY, argv.data());
    ::_exit(127);
  }
  return exit_status(pid);
}

TEST(Lifecycle, ASecondDaemonOnTheSameDataDirectoryRefusesAndNamesTheFirst) {
  Workspace ws;
  const std::uint16_t port = free_port(20000);
  pid_t first = start_serving(ws, port, ws.dir() + "/first.log");
  ASSERT_EQ(http(port, "GET", "/healthz", "", "").status, 200);
  auto slow = std::async(std::launch::async, [&] {
    return invoke(port, "slow", {{"seconds", 2}});
  });
  for (int i = 0; i < 300 && host_processes_with("/tool/slow.py") == 0; ++i)
    std::this_thread::sleep_for(20ms);

  const std::string log = ws.dir() + "/second.log";
  const int status =
      run_airlock({"serve", "--config", ws.config_path(), "--listen", "127.0.0.1:0"}, log);
  EXPECT_NE(status, 0);
  EXPECT_NE(status, -1) << "the second daemon started";
  const std::string text = read_text(log);
  EXPECT_NE(text.find("pid " + std::to_string(first)), std::string::npos) << text;
  EXPECT_EQ(text.find("recovered"), std::string::npos)
      << "the second daemon ran recovery: " << text;

  // The first one's call was not written off: it ends ok, with exactly one record.
  EXPECT_EQ(slow.get().json()["status"], "ok");
  ::kill(first, SIGTERM);
  EXPECT_EQ(exit_status(first), 0);
  EXPECT_EQ(audit_records(ws.audit_path()), 1u);
}

TEST(Lifecycle, SighupReloadsTheConfigAndRunningCallsFinishUnderTheirOwn) {
  Workspace ws;
  const std::uint16_t port = free_port(20000);
  const std::string log = ws.dir() + "/daemon.log";
  pid_t daemon = start_serving(ws, port, log);
  ASSERT_EQ(http(port, "GET", "/healthz", "", "").status, 200);
  auto slow = std::async(std::launch::async, [&] {
    return invoke(port, "slow", {{"seconds", 3}});
  });
  for (int i = 0; i < 300 && host_processes_with("/tool/slow.py") == 0; ++i)
    std::this_thread::sleep_for(20ms);
  ASSERT_GT(host_processes_with("/tool/slow.py"), 0) << "the slow tool never started";

  // A valid new config: a tool added, the running one's tool removed.
  const std::string original = ws.config_text();
  std::string next = original;
  const std::string slow_tool =
      "  - name: slow\n    runtime: {type: python, file: tools/slow.py}\n    limits: {timeout: "
      "30s}\n";
  ASSERT_NE(next.find(slow_tool), std::string::npos);
  next.erase(next.find(slow_tool), slow_tool.size());
  next += "  - name: echo-two\n    runtime: {type: python, file: tools/echo.py}\n";
  ws.write_config(next);
  ASSERT_EQ(::kill(daemon, SIGHUP), 0);
  Reply added;
  for (int i = 0; i < 300; ++i) {
    added = invoke(port, "echo-two", {{"n", 1}});
    if (added.status == 200) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(added.json()["status"], "ok") << added.body;
  EXPECT_EQ(invoke(port, "slow", {{"seconds", 0}}).json()["error"]["kind"], "unknown_tool");

  // A broken config, and one that changes what only a restart can: both refused.
  ws.write_config(next + "  - name: broken\n    runtime: {type: martian}\n");
  ASSERT_EQ(::kill(daemon, SIGHUP), 0);
  std::string new_data_dir = next;
  new_data_dir.replace(new_data_dir.find("dataDir: data"), 13, "dataDir: data2");
  for (int i = 0; i < 300 && read_text(log).find("reload failed") == std::string::npos; ++i)
    std::this_thread::sleep_for(20ms);
  ws.write_config(new_data_dir);
  ASSERT_EQ(::kill(daemon, SIGHUP), 0);
  for (int i = 0; i < 300 && read_text(log).find("only a restart can change") == std::string::npos;
       ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(http(port, "GET", "/healthz", "", "").status, 200)
      << "a bad reload took the daemon down";
  EXPECT_EQ(invoke(port, "echo-two", {{"n", 1}}).json()["status"], "ok");
  EXPECT_EQ(invoke(port, "echo", {{"n", 1}}).json()["status"], "ok");

  // The call that began before the reload finished under the config it started with.
  auto finished = slow.get();
  EXPECT_EQ(finished.json()["status"], "ok") << finished.body;
  const std::string text = read_text(log);
  EXPECT_NE(text.find("added: echo-two; removed: slow"), std::string::npos) << text;
  EXPECT_NE(text.find("martian"), std::string::npos) << text;
  EXPECT_NE(text.find("only a restart can change storage.dataDir"), std::string::npos) << text;
  auto metrics = http(port, "GET", "/metrics", "", "").body;
  EXPECT_NE(metrics.find("airlock_config_reloads_total{result=\"ok\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("airlock_config_reloads_total{result=\"failed\"} 2"), std::string::npos)
      << metrics;
  ::kill(daemon, SIGTERM);
  EXPECT_EQ(exit_status(daemon), 0);
}

TEST(Lifecycle, ServeCheckValidatesWithoutStarting) {
  Workspace ws;
  const std::string log = ws.dir() + "/check.log";
  EXPECT_EQ(run_airlock({"serve", "--check", "--config", ws.config_path()}, log), 0)
      << read_text(log);
  EXPECT_FALSE(fs::exists(ws.dir() + "/data")) << "--check created the data directory";
  // A DLP policy that does not load: found only by building the scanner.
  std::ofstream(ws.dir() + "/broken-dlp.yaml") << "this: [is, not, a, policy\n";
  ws.rewrite("", "dlp: {policy: broken-dlp.yaml}\n");
  EXPECT_EQ(run_airlock({"serve", "--check", "--config", ws.config_path()}, log), 1)
      << read_text(log);
  EXPECT_NE(read_text(log).find("broken-dlp.yaml"), std::string::npos) << read_text(log);
  EXPECT_FALSE(fs::exists(ws.dir() + "/data"));
}

}  // namespace
}  // namespace airlock::server::test
