// The gvisor backend's threat model: the local sandbox's attacks that make sense for gVisor,
// run for real in runsc, each asserting it failed; plus the one only gVisor stops (a
// host-kernel syscall the Sentry answers itself), the limits' verdicts, the egress proxy as
// the only way out, and nothing left behind. They skip only when runsc is not installed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "../egress/egress_fixtures.hpp"
#include "../sandbox/test_support.hpp"
#include "backend/gvisor_backend.hpp"
#include "backend/local.hpp"
#include "backend/runsc_platform.hpp"
#include "egress/rules.hpp"
#include "sandbox/cgroup.hpp"

namespace airlock::backend {
namespace {

using namespace std::chrono_literals;
using sandbox::Verdict;
using sandbox::test::TempDir;
namespace fs = std::filesystem;

std::string describe(const RunResult& r) {
  return "\n" + to_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

RunRequest python(const std::string& code) {
  RunRequest r;
  r.argv = {"python3", "-c", code};
  r.limits.wall_time = 60s;
  r.limits.memory_bytes = 256ULL << 20;
  return r;
}

class Gvisor : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!find_runsc("runsc")) return;
    state_dir_ = new TempDir();
    GvisorOptions options;
    options.state_dir = state_dir_->path() + "/gvisor";
    auto made = GvisorBackend::create(options);
    ASSERT_TRUE(made) << made.error().message;
    backend_ = made->release();
  }
  static void TearDownTestSuite() {
    delete backend_;
    delete state_dir_;
    backend_ = nullptr;
  }
  void SetUp() override {
    if (!find_runsc("runsc")) GTEST_SKIP() << "runsc is not installed (apt-get install runsc)";
    ASSERT_NE(backend_, nullptr);
  }
  void TearDown() override {
    if (!backend_) return;
    // Nothing of any run outlives it: no run directory, no runsc process, no run in flight.
    EXPECT_TRUE(fs::is_empty(backend_->state_dir())) << backend_->state_dir();
    EXPECT_EQ(sandbox::test::host_processes_with(backend_->state_dir()), 0);
    EXPECT_EQ(backend_->running(), 0u);
  }
  RunResult run(const RunRequest& request, const RunContext& context = {}) {
    return backend_->run(request, context);
  }
  static GvisorBackend& backend() { return *backend_; }

  static inline TempDir* state_dir_ = nullptr;
  static inline GvisorBackend* backend_ = nullptr;
};

TEST_F(Gvisor, RunsAProgramWithItsStdinArgvAndEnv) {
  RunRequest r;
  r.argv = {"sh", "-c", "echo \"$GREETING $1\"; cat; echo err >&2; exit 3", "sh", "world"};
  r.env["GREETING"] = "hello";
  r.stdin_bytes = "from stdin\n";
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::exit_nonzero) << describe(o);
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.stdout_data, "hello world\nfrom stdin\n");
  EXPECT_EQ(o.stderr_data, "err\n");
}

TEST_F(Gvisor, HostSecretsOutsideTheBindsAreNotThere) {
  RunResult o = run(python(R"(
import os
for p in ["/etc/shadow", "/root", "/home", "/var", "/proc/1/root/etc/shadow"]:
    try:
        with open(p) as f: print("ESCAPED", p, f.read(20))
    except IsADirectoryError:
        print("ESCAPED dir", p, os.listdir(p))
    except OSError as e:
        print("refused", p, e.errno)
print(sorted(os.listdir("/")))
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data.find("ESCAPED"), std::string::npos) << describe(o);
  EXPECT_NE(o.stdout_data.find("refused /etc/shadow 2"), std::string::npos) << describe(o);
  EXPECT_NE(o.stdout_data.find("refused /root 2"), std::string::npos) << describe(o);
}

TEST_F(Gvisor, TheRootIsReadOnly) {
  RunResult o = run(python(R"(
for p in ["/usr/airlock-x", "/etc/passwd", "/airlock-x", "/bin/airlock-x"]:
    try:
        open(p, "a").write("x"); print("ESCAPED wrote", p)
    except OSError as e:
        print("refused", p, e.errno)
open("/work/ok", "w").write("x"); open("/tmp/ok", "w").write("x"); print("work and tmp writable")
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data.find("ESCAPED"), std::string::npos) << describe(o);
  EXPECT_NE(o.stdout_data.find("work and tmp writable"), std::string::npos) << describe(o);
  EXPECT_FALSE(fs::exists("/usr/airlock-x"));
  EXPECT_FALSE(fs::exists("/airlock-x"));
}

TEST_F(Gvisor, ASymlinkInADataDirDoesNotLeadOut) {
  TempDir data;
  data.write("plain.txt", "inside\n");
  ::symlink("/etc/shadow", (data.path() + "/shadow").c_str());
  ::symlink("/root", (data.path() + "/rootdir").c_str());
  ::symlink("../../../../../../etc/shadow", (data.path() + "/relative").c_str());
  ::chmod(data.path().c_str(), 0755);
  RunRequest r = python(R"(
print(open("/data/plain.txt").read(), end="")
for p in ["/data/shadow", "/data/relative", "/data/rootdir/.bashrc"]:
    try:
        print("ESCAPED", p, open(p).read(20))
    except OSError as e:
        print("refused", p, e.errno)
try:
    open("/data/new", "w"); print("ESCAPED wrote a read-only bind")
except OSError as e:
    print("refused write", e.errno)
)");
  r.mounts.push_back({Mount::Kind::data, data.path(), "/data", true});
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data.rfind("inside\n", 0), 0u) << describe(o);
  EXPECT_EQ(o.stdout_data.find("ESCAPED"), std::string::npos) << describe(o);
  EXPECT_FALSE(fs::exists(data.path() + "/new"));
}

TEST_F(Gvisor, NoCapabilitiesAndNotRoot) {
  RunResult o = run(python(R"(
import os
caps = {l.split(":")[0]: l.split()[1] for l in open("/proc/self/status") if l.startswith("Cap")}
print(caps["CapEff"], caps["CapPrm"], caps["CapBnd"], os.getuid(), os.geteuid(), os.getgid())
try:
    os.setuid(0); print("ESCAPED setuid")
except OSError as e:
    print("refused setuid", e.errno)
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data,
            "0000000000000000 0000000000000000 0000000000000000 1000 1000 1000\nrefused setuid 1\n")
      << describe(o);
}

TEST_F(Gvisor, AForkBombHitsThePidsLimit) {
  RunRequest r = python(R"(
import os, time
n = 0
try:
    while n < 100000:
        pid = os.fork()
        if pid == 0:
            time.sleep(30); os._exit(0)
        n += 1
    print("ESCAPED forked", n)
except OSError as e:
    print("fork failed", e.errno, "after", n)
)");
  r.limits.pids = 16;
  r.limits.wall_time = 20s;
  RunResult o = run(r);
  EXPECT_EQ(o.stdout_data.find("ESCAPED"), std::string::npos) << describe(o);
  // Either the program saw EAGAIN or the run died at the limit: both are the pids cgroup.
  EXPECT_TRUE(o.usage.pids_limit_hit.value_or(false)) << describe(o);
  EXPECT_NE(o.verdict, Verdict::ok) << describe(o);  // its children were still sleeping
}

TEST_F(Gvisor, AMemoryHogGetsTheMemoryLimitVerdict) {
  RunRequest r = python("x = bytearray(1 << 30)\nprint('ESCAPED allocated')");
  r.limits.memory_bytes = 128ULL << 20;
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::memory_limit) << describe(o);
  EXPECT_EQ(o.stdout_data.find("ESCAPED"), std::string::npos) << describe(o);
}

TEST_F(Gvisor, ASleeperGetsTheTimeoutVerdict) {
  RunRequest r;
  r.argv = {"sleep", "60"};
  r.limits.wall_time = 1500ms;
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::timeout) << describe(o);
  EXPECT_EQ(o.signal, SIGKILL);
}

TEST_F(Gvisor, HugeOutputGetsTheOutputLimitVerdict) {
  RunRequest r;
  r.argv = {"yes"};
  r.limits.output_bytes = 64 * 1024;
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::output_limit) << describe(o);
  EXPECT_TRUE(o.stdout_truncated);
  EXPECT_EQ(o.stdout_data.size(), 64u * 1024);
}

TEST_F(Gvisor, ACpuBurnerGetsTheCpuTimeVerdict) {
  RunRequest r = python("while True: pass");
  r.limits.cpu_time = 1000ms;
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::cpu_time_limit) << describe(o);
}

TEST_F(Gvisor, DiskIsCapped) {
  RunRequest r = python(R"(
for d in ["/work", "/tmp"]:
    try:
        open(d + "/big", "wb").write(b"x" * (8 << 20)); print("ESCAPED wrote 8 MiB in", d)
    except OSError as e:
        print("refused", d, e.errno)
)");
  r.limits.disk_bytes = 4ULL << 20;
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "refused /work 28\nrefused /tmp 28\n") << describe(o);  // ENOSPC
}

// The proxy is the only way out: a direct connection to the host's loopback (where a server
// listens) or to the internet fails; an allowed host works through the proxy; another host
// through the proxy is denied and recorded.
TEST_F(Gvisor, EgressOnlyThroughTheProxy) {
  egress::fixtures::LoopbackServer allowed([](int fd) {
    char buf[1024];
    (void)!::read(fd, buf, sizeof buf);
    const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
    (void)!::write(fd, answer, sizeof answer - 1);
  });
  egress::fixtures::LoopbackServer other([](int) {});
  const std::string port = std::to_string(allowed.port());
  RunRequest r;
  r.argv = {"sh", "-c",
            "curl -fsS -m 10 http://127.0.0.1:" + port + "/ ; echo curl=$?; "
            "curl -sS -m 10 --noproxy '*' http://127.0.0.1:" + port + "/ ; echo direct=$?; "
            "curl -sS -m 10 --noproxy '*' http://1.1.1.1/ ; echo internet=$?; "
            "curl -fsS -m 10 http://127.0.0.1:" + std::to_string(other.port()) + "/ ; echo other=$?"};
  r.limits.wall_time = 60s;
  auto rule = egress::parse_allow_rule("127.0.0.1:" + port);
  ASSERT_TRUE(rule) << rule.error().message;
  r.egress.allow.push_back(*rule);
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("hello\ncurl=0\n"), std::string::npos) << describe(o);
  EXPECT_EQ(o.stdout_data.find("direct=0"), std::string::npos) << describe(o);
  EXPECT_EQ(o.stdout_data.find("internet=0"), std::string::npos) << describe(o);
  EXPECT_EQ(o.stdout_data.find("other=0"), std::string::npos) << describe(o);
  EXPECT_EQ(allowed.connections(), 1) << describe(o);  // the proxy's; never the direct one
  EXPECT_EQ(other.connections(), 0) << describe(o);
  ASSERT_EQ(o.egress.size(), 2u) << describe(o);
  EXPECT_TRUE(o.egress[0].allowed);
  EXPECT_FALSE(o.egress[1].allowed);
}

TEST_F(Gvisor, WithoutEgressRulesThereIsNoNetwork) {
  RunResult o = run(python(R"(
import socket
for addr in [("1.1.1.1", 80), ("127.0.0.1", 3128)]:
    try:
        socket.create_connection(addr, timeout=5); print("ESCAPED connected", addr)
    except OSError as e:
        print("refused", addr[0])
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "refused 1.1.1.1\nrefused 127.0.0.1\n") << describe(o);
}

// A credential is in the program's environment and nowhere it can read otherwise.
TEST_F(Gvisor, CredentialsOnlyAsEnvironment) {
  const std::string secret = "s3cr3t-" + sandbox::test::unique();
  RunRequest r;
  r.argv = {"sh", "-c",
            "echo \"env:$API_TOKEN\"; grep -rls \"$API_TOKEN\" /etc /work /tmp /usr/lib/os-release "
            "/proc/1/cmdline 2>/dev/null; echo done"};
  r.credentials.push_back({"API_TOKEN", secret});
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "env:" + secret + "\ndone\n") << describe(o);
}

// On the host, while the run lasts, the files that hold a credential (the bundle's config.json,
// runsc's own state file with the spec) are readable by their owner alone: the state file is
// 0640, so runsc's state root is 0700.
TEST_F(Gvisor, OnTheHostOnlyTheOwnerCanReadTheCredentialsFiles) {
  const std::string secret = "s3cr3t-" + sandbox::test::unique();
  RunRequest r;
  r.argv = {"sleep", "60"};
  r.credentials.push_back({"API_TOKEN", secret});
  CancelSignal cancel;
  RunContext context;
  context.cancel = &cancel;
  std::thread running([&] { (void)run(r, context); });
  std::vector<sandbox::test::SecretHolder> holders;
  // Until runsc wrote its state file too (the run is seen in it), or 20 s.
  for (auto until = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(50ms)) {
    holders = sandbox::test::files_holding(backend().state_dir(), secret);
    if (holders.size() >= 2) break;
  }
  cancel.cancel();
  running.join();
  EXPECT_GE(holders.size(), 2u) << "control: config.json and runsc's state file hold it";
  for (const auto& h : holders) EXPECT_TRUE(h.owner_only) << h.path;
}

// The one gVisor alone stops: syscalls that are host-kernel attack surface (userfaultfd, the
// new mount API, the kernel keyrings) are answered by the Sentry, which does not implement
// them (ENOSYS) or keeps a keyring of its own (EACCES): they never reach the host kernel, so
// the program goes on. The local sandbox's seccomp filter stops the same program instead
// (a seccomp violation), which shows these answers are the Sentry's, not the host's.
TEST_F(Gvisor, HostKernelSyscallsAreAnsweredByTheSentry) {
  const std::string probe = R"(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for name, nr in [("userfaultfd", 323), ("fsopen", 430), ("keyctl", 250)]:
    r = libc.syscall(nr, 0, -1, 0, 0, 0)
    print(name, r, ctypes.get_errno(), flush=True)
)";
  RunResult o = run(python(probe));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "userfaultfd -1 38\nfsopen -1 38\nkeyctl -1 13\n") << describe(o);

  RunResult l = run_local(local_spec(python(probe)));
  EXPECT_EQ(l.verdict, Verdict::seccomp_violation) << describe(l);
  EXPECT_EQ(l.stdout_data.find("userfaultfd -1 38"), std::string::npos) << describe(l);
}

TEST_F(Gvisor, ACancelledRunStopsAndLeavesNothing) {
  RunRequest r;
  r.argv = {"sleep", "60"};
  CancelSignal cancel;
  RunContext context;
  context.cancel = &cancel;
  std::thread canceller([&] {
    while (backend().running() == 0) std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(300ms);
    cancel.cancel();
  });
  RunResult o = run(r, context);
  canceller.join();
  EXPECT_EQ(o.verdict, Verdict::signaled) << describe(o);
  EXPECT_EQ(o.signal, SIGKILL);
}

TEST_F(Gvisor, CgroupsAreRemoved) {
  auto count_ours = [] {
    int n = 0;
    std::ifstream self("/proc/self/cgroup");
    for (std::string line; std::getline(self, line);) {
      auto path = line.substr(line.rfind(':') + 1);
      auto controllers = line.substr(line.find(':') + 1);
      controllers = controllers.substr(0, controllers.find(':'));
      std::string dir = "/sys/fs/cgroup/" + (controllers.empty() ? std::string("unified") : controllers) + path;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().filename().string().rfind("airlock-" + std::to_string(::getpid()) + "-", 0) == 0) ++n;
    }
    return n;
  };
  RunRequest r;
  r.argv = {"true"};
  RunResult o = run(r);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(count_ours(), 0);
}

// Unprivileged without a delegated cgroup the limits could not hold: a clear refusal.
TEST(GvisorRefusal, WithoutACgroupTheBackendRefusesToStart) {
  if (!find_runsc("runsc")) GTEST_SKIP() << "runsc is not installed (apt-get install runsc)";
  const auto& support = sandbox::cgroup_support();
  if (support.limits_memory() && support.limits_pids())
    GTEST_SKIP() << "a cgroup limits memory and pids here: the backend runs (the other tests)";
  TempDir dir;
  GvisorOptions options;
  options.state_dir = dir.path() + "/gvisor";
  auto made = GvisorBackend::create(options);
  ASSERT_FALSE(made);
  EXPECT_NE(made.error().message.find("delegate a cgroup subtree"), std::string::npos)
      << made.error().message;
}

TEST(GvisorLeftovers, ARunDirectoryOfADeadDaemonIsRemoved) {
  auto runsc = find_runsc("runsc");
  if (!runsc) GTEST_SKIP() << "runsc is not installed (apt-get install runsc)";
  TempDir dir;
  // pid 2^22+1 is above pid_max's ceiling: no such process can exist.
  const std::string stale = dir.path() + "/airlock-gv-4194305-0";
  fs::create_directories(stale + "/state");
  fs::create_directories(dir.path() + "/not-ours");
  RunscInvocation invocation{*runsc, "ptrace", ::geteuid() != 0};
  EXPECT_EQ(remove_stale_runs(invocation, dir.path()), 1);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(dir.path() + "/not-ours"));
}

TEST(GvisorPlatform, DetectionNamesAPlatformThatWorks) {
  if (!find_runsc("runsc")) GTEST_SKIP() << "runsc is not installed (apt-get install runsc)";
  auto found = detect_runsc_platform("runsc", "");
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_FALSE(found->platform.empty());
  auto bogus = detect_runsc_platform("runsc", "no-such-platform");
  ASSERT_FALSE(bogus);
  EXPECT_NE(bogus.error().message.find("no-such-platform"), std::string::npos) << bogus.error().message;
  auto missing = detect_runsc_platform("/nonexistent/runsc", "");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("install the runsc package"), std::string::npos);
}

}  // namespace
}  // namespace airlock::backend
