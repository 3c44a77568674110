// Sessions on the kubernetes backend (issue #37) against the API-server stand-in: a session
// is one hardened pod; execs, the terminal and files go through pods/exec (the WebSocket
// channel protocol, v5 with v4 as the fallback), played by the stand-in's fake runner
// (standin/exec.mjs). Not a cluster: see docs/kubernetes.md.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <thread>

#include "backend/kubernetes/kube_session.hpp"
#include "backend/kubernetes/pod_exec.hpp"
#include "standin_process.hpp"

namespace airlock::backend::kubernetes {
namespace {

using nlohmann::json;
using test::StandIn;
using namespace std::chrono_literals;

// What `fd` gives until it holds `want` (or ends, or 5 s pass).
std::string read_until(int fd, const std::string& want = "", std::chrono::milliseconds timeout = 5000ms) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!want.empty() && out.find(want) != std::string::npos) break;
    struct pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

void write_text(int fd, const std::string& text) { ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size())); }

class KubernetesSessionTest : public ::testing::Test {
 protected:
  std::unique_ptr<KubernetesSessionBackend> make_backend() {
    KubernetesOptions options;
    options.image = "registry.example/tools/sleep:1";  // the stand-in keeps it Running
    options.namespace_name = "airlock-tools";
    options.instance = "test-daemon";
    options.retry.default_retry = 10ms;
    SessionPodOptions session;
    session.start_timeout = 5000ms;
    return std::make_unique<KubernetesSessionBackend>(standin.endpoint(), options, session);
  }

  RunRequest request() {
    RunRequest r;
    r.limits.wall_time = 60s;
    r.limits.memory_bytes = 256ULL << 20;
    r.limits.disk_bytes = 32ULL << 20;
    r.env = {{"SESSION_MODE", "work"}};
    return r;
  }

  RunContext context(const std::string& id = "ses-0001") {
    RunContext c;
    c.invocation_id = id;
    c.tool_name = "workspace";
    return c;
  }

  std::unique_ptr<Session> start(RunRequest r = {}) {
    if (r.limits.wall_time == RunRequest{}.limits.wall_time) r = request();
    auto session = backend->start_session(r, context());
    EXPECT_TRUE(session) << (session ? "" : session.error().message);
    return session ? std::move(*session) : nullptr;
  }

  // The last exec but the backend's readings of the pod's CPU counter (one after each exec).
  json last_exec() {
    const json state = standin.state();
    for (auto it = state["execs"].rbegin(); it != state["execs"].rend(); ++it)
      if (!reads_cpu((*it)["command"])) return *it;
    return json();
  }
  static bool reads_cpu(const json& command) { return command.size() == 3 && command[1] == kCgroupV2CpuStat; }

  // The stand-in's counter of the session's pod (its only one), in microseconds.
  json pod_cpu() {
    const json state = standin.state();
    return state["cpu"].empty() ? json() : state["cpu"].begin().value();
  }
  // A process left in the pod's background uses CPU between execs.
  void burn_in_background(int user_ms, int sys_ms) {
    const json state = standin.state();
    ASSERT_EQ(state["pods"].size(), 1u);
    KubeClient client(standin.endpoint());
    auto burned = client.request("POST", "/standin/pods/" + state["pods"][0].get<std::string>() + "/burn",
                                 json{{"user_ms", user_ms}, {"sys_ms", sys_ms}}.dump());
    ASSERT_TRUE(burned);
    ASSERT_EQ(burned->status, 200u) << burned->body;
  }
  // An exec run to its end (no stdin, its output not read): its end.
  std::optional<sandbox::ExecEnd> run_to_end(Session& session, std::vector<std::string> argv) {
    auto started = session.exec({std::move(argv), {}, ""});
    EXPECT_TRUE(started) << (started ? "" : started.error().message);
    if (!started) return std::nullopt;
    started->stdin_w.reset();
    return session.wait(started->id, 5000ms);
  }

  void expect_clean() {
    json state = standin.state();
    EXPECT_EQ(state["pods"], json::array()) << state["pods"];
    EXPECT_EQ(state["secrets"], json::array());
    EXPECT_EQ(state["networkpolicies"], json::array());
    EXPECT_EQ(state["violations"], json::array()) << state["violations"];
  }

  StandIn standin;
  std::unique_ptr<KubernetesSessionBackend> backend = make_backend();
};

TEST(PodExecStatus, SuccessNonZeroExitCodeAndFailureWithoutACode) {
  EXPECT_TRUE(parse_exec_status(R"({"metadata":{},"status":"Success"})").has_code);
  auto three = parse_exec_status(
      R"({"status":"Failure","reason":"NonZeroExitCode","message":"exit code 3","details":{"causes":[{"reason":"ExitCode","message":"3"}]}})");
  EXPECT_TRUE(three.has_code);
  EXPECT_EQ(three.code, 3);
  auto broken = parse_exec_status(R"({"status":"Failure","reason":"InternalError","message":"executable file not found"})");
  EXPECT_FALSE(broken.has_code);
  EXPECT_EQ(broken.message, "executable file not found");
}

TEST_F(KubernetesSessionTest, ExecRoundTripCarriesStdinStdoutStderrAndTheExitCode) {
  auto session = start();
  ASSERT_TRUE(session);
  auto cat = session->exec({{"cat"}, {{"GREETING", "hi"}}, "/tmp"});
  ASSERT_TRUE(cat) << cat.error().message;
  write_text(cat->stdin_w.get(), "hello through the pod\n");
  cat->stdin_w.reset();  // v5: channel 255 closes the pod's stdin
  EXPECT_EQ(read_until(cat->stdout_r.get()), "hello through the pod\n");
  auto end = session->wait(cat->id, 5000ms);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->exited);
  EXPECT_EQ(end->code, 0);
  json record = last_exec();
  EXPECT_EQ(record["protocol"], kExecProtocolV5);
  EXPECT_EQ(record["stdinClosed"], true);
  EXPECT_EQ(record["stdin"], "hello through the pod\n");
  // The wrapper: its pid file, the cwd, the env, then the command.
  EXPECT_EQ(record["command"][2], kExecWrapper);
  EXPECT_EQ(record["command"][4], "/tmp");
  EXPECT_EQ(record["command"][5], "env");
  EXPECT_EQ(record["command"][7], "GREETING=hi");
  EXPECT_EQ(record["command"][8], "cat");

  auto fail = session->exec({{"standin-fail", "3", "it", "broke"}, {}, ""});
  ASSERT_TRUE(fail) << fail.error().message;
  EXPECT_EQ(read_until(fail->stdout_r.get()), "some output\n");
  EXPECT_EQ(read_until(fail->stderr_r.get()), "it broke\n");
  end = session->wait(fail->id, 5000ms);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->exited);
  EXPECT_EQ(end->code, 3);

  auto missing = session->exec({{"no-such-program"}, {}, ""});
  ASSERT_TRUE(missing);
  end = session->wait(missing->id, 5000ms);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->code, 127);
  EXPECT_EQ(session->exec({{}, {}, ""}).error().code, "invalid_argument");
  EXPECT_EQ(session->exec({{"cat"}, {}, "relative"}).error().code, "invalid_argument");
  (void)session->end();
  expect_clean();
}

TEST_F(KubernetesSessionTest, FallsBackToV4WhenTheServerRefusesV5) {
  auto session = start();
  ASSERT_TRUE(session);
  standin.inject({{"kind", "exec-v4-only"}});  // an offer naming v5 is refused with 400
  auto echo = session->exec({{"echo", "over", "v4"}, {}, ""});
  ASSERT_TRUE(echo) << echo.error().message;
  EXPECT_EQ(read_until(echo->stdout_r.get()), "over v4\n");
  auto end = session->wait(echo->id, 5000ms);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->code, 0);
  json state = standin.state();
  EXPECT_EQ(last_exec()["protocol"], kExecProtocolV4);
  int upgrades = 0;
  for (const auto& r : state["requests"]) {
    const std::string path = r["path"];
    if (path.find("/exec?") != std::string::npos && path.find("cpu.stat") == std::string::npos) ++upgrades;
  }
  EXPECT_EQ(upgrades, 2);  // the offer of v5 and v4, refused; then v4 alone (the CPU's reading aside)

  standin.inject({{"kind", "exec-no-v5"}});  // a server that picks v4 from the offer
  auto again = session->exec({{"echo", "chosen"}, {}, ""});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(read_until(again->stdout_r.get()), "chosen\n");
  EXPECT_EQ(last_exec()["protocol"], kExecProtocolV4);

  // v4 cannot close stdin: a file still goes in, tar stopping at the archive's end.
  standin.inject({{"kind", "exec-no-v5"}, {"count", 2}});
  auto written = session->write_file("over-v4.txt");
  ASSERT_TRUE(written);
  write_text(written->pipe.get(), "v4 bytes");
  written->pipe.reset();
  auto end_write = session->wait(written->id, 5000ms);
  ASSERT_TRUE(end_write);
  EXPECT_EQ(end_write->code, 0);
  auto read = session->read_file("over-v4.txt");
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read_until(read->pipe.get()), "v4 bytes");
  EXPECT_EQ(last_exec()["protocol"], kExecProtocolV4);
  (void)session->end();
  expect_clean();
}

TEST_F(KubernetesSessionTest, TerminalResizeReachesTheStandIn) {
  auto session = start();
  ASSERT_TRUE(session);
  auto shell = session->exec_on_terminal({{"standin-winsize"}, {}, ""}, {24, 80});
  ASSERT_TRUE(shell) << shell.error().message;
  ASSERT_TRUE(shell->terminal);
  EXPECT_NE(read_until(shell->terminal.get(), "24x80\n").find("24x80\n"), std::string::npos);
  struct winsize size {};
  size.ws_row = 40;
  size.ws_col = 120;
  ASSERT_EQ(::ioctl(shell->terminal.get(), TIOCSWINSZ, &size), 0);
  EXPECT_NE(read_until(shell->terminal.get(), "40x120\n").find("40x120\n"), std::string::npos);
  write_text(shell->terminal.get(), "q");
  auto end = session->wait(shell->id, 5000ms);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->code, 0);
  json record = last_exec();
  EXPECT_EQ(record["tty"], true);
  ASSERT_EQ(record["resizes"].size(), 2u);
  EXPECT_EQ(record["resizes"][1], json({{"Width", 120}, {"Height", 40}}));
  (void)session->end();
}

TEST_F(KubernetesSessionTest, FilesRoundTripThroughTarAndAnEscapingPathIsRefused) {
  auto session = start();
  ASSERT_TRUE(session);
  ASSERT_TRUE(session->make_directory("src/deep"));
  const std::string content = std::string("line one\n\0binary\xff", 18) + std::string(3000, 'x');
  auto wait_code = [&](std::uint32_t id) {
    auto end = session->wait(id, 5000ms);
    return end ? end->code : -1;
  };
  auto written = session->write_file("src/deep/notes.txt");
  ASSERT_TRUE(written) << written.error().message;
  write_text(written->pipe.get(), content);
  written->pipe.reset();
  EXPECT_EQ(wait_code(written->id), 0);

  auto read = session->read_file("./src//deep/notes.txt");
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->size, content.size());
  EXPECT_EQ(read_until(read->pipe.get()), content);
  EXPECT_EQ(wait_code(read->id), 0);

  auto again = session->write_file("src/deep/notes.txt");  // something is there: refused
  ASSERT_TRUE(again);
  write_text(again->pipe.get(), "other");
  again->pipe.reset();
  EXPECT_EQ(wait_code(again->id), EEXIST);

  const std::string long_dir = "src/" + std::string(120, 'd');  // past 100 bytes: the ustar prefix
  ASSERT_TRUE(session->make_directory(long_dir));
  auto long_write = session->write_file(long_dir + "/long.txt");
  ASSERT_TRUE(long_write);
  write_text(long_write->pipe.get(), "long");
  long_write->pipe.reset();
  EXPECT_EQ(wait_code(long_write->id), 0);
  auto long_read = session->read_file(long_dir + "/long.txt");
  ASSERT_TRUE(long_read) << long_read.error().message;
  EXPECT_EQ(read_until(long_read->pipe.get()), "long");
  ASSERT_TRUE(session->remove_file(long_dir + "/long.txt"));
  ASSERT_TRUE(session->remove_file(long_dir));

  ASSERT_TRUE(session->move_file("src/deep/notes.txt", "src/moved.txt"));
  EXPECT_EQ(session->read_file("src/deep/notes.txt").error().code, "file_not_found");
  EXPECT_EQ(session->read_file("src/deep").error().code, "is_a_directory");
  EXPECT_EQ(session->remove_file("src").error().code, "directory_not_empty");
  ASSERT_TRUE(session->remove_file("src/moved.txt"));
  EXPECT_EQ(session->remove_file("src/moved.txt").error().code, "file_not_found");

  // Out of the work dir: refused before anything reaches the pod.
  auto before = standin.state()["execs"].size();
  EXPECT_EQ(session->read_file("../etc/passwd").error().code, "invalid_path");
  EXPECT_EQ(session->write_file("src/../../tmp/x").error().code, "invalid_path");
  EXPECT_EQ(session->move_file("src", "../src").error().code, "invalid_path");
  EXPECT_EQ(session->remove_file("..").error().code, "invalid_path");
  EXPECT_EQ(standin.state()["execs"].size(), before);
  (void)session->end();
  expect_clean();
}

TEST_F(KubernetesSessionTest, ASignalReachesTheExecThroughKillInThePod) {
  auto session = start();
  ASSERT_TRUE(session);
  auto sleeper = session->exec({{"sleep", "100"}, {}, ""});
  ASSERT_TRUE(sleeper);
  ASSERT_TRUE(session->signal(sleeper->id, SIGTERM));
  auto end = session->wait(sleeper->id, 5000ms);
  ASSERT_TRUE(end);
  EXPECT_FALSE(end->exited);
  EXPECT_EQ(end->code, SIGTERM);
  json record = last_exec();
  EXPECT_EQ(record["command"][2], kExecKiller);
  EXPECT_EQ(record["command"][3], "15");
  (void)session->end();
}

TEST_F(KubernetesSessionTest, EndDeletesThePodItsNetworkPolicyAndSecretAndIsIdempotent) {
  auto session = start();
  ASSERT_TRUE(session);
  json state = standin.state();
  ASSERT_EQ(state["pods"].size(), 1u);
  std::string name = state["pods"][0];
  EXPECT_EQ(state["secrets"], json::array({name}));
  EXPECT_EQ(state["networkpolicies"], json::array({name}));
  auto sleeper = session->exec({{"sleep", "100"}, {}, ""});
  ASSERT_TRUE(sleeper);
  RunResult first = session->end();
  EXPECT_EQ(first.verdict, sandbox::Verdict::ok) << first.message;
  EXPECT_TRUE(session->ended());
  expect_clean();
  RunResult second = session->end();
  EXPECT_EQ(second.message, first.message);
  EXPECT_EQ(session->exec({{"echo"}, {}, ""}).error().code, "session_ended");
  EXPECT_EQ(session->read_file("a").error().code, "session_ended");
  EXPECT_EQ(session->freeze(true).error().code, "freezer_unavailable");
  const Status memory = session->can_snapshot_memory();
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code, "memory_snapshot_unsupported");
  EXPECT_NE(memory.error().message.find("checkpoint"), std::string::npos) << memory.error().message;
}

TEST_F(KubernetesSessionTest, EndDoesNotWaitForAFileReaderThatNeverReads) {
  auto session = start();
  ASSERT_TRUE(session);
  auto written = session->write_file("big.bin");
  ASSERT_TRUE(written);
  write_text(written->pipe.get(), std::string(512 * 1024, 'b'));  // past every pipe's buffer
  written->pipe.reset();
  auto end = session->wait(written->id, 10000ms);
  ASSERT_TRUE(end);
  ASSERT_EQ(end->code, 0);
  auto read = session->read_file("big.bin");
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->size, 512u * 1024);
  auto before = std::chrono::steady_clock::now();
  RunResult result = session->end();  // the pipe is never read
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
  EXPECT_EQ(result.verdict, sandbox::Verdict::ok);
  expect_clean();
}

TEST_F(KubernetesSessionTest, APodDeletedFromOutsideEndsTheSessionAsAborted) {
  auto session = start();
  ASSERT_TRUE(session);
  auto sleeper = session->exec({{"sleep", "100"}, {}, ""});
  ASSERT_TRUE(sleeper);
  std::string name = standin.state()["pods"][0];
  KubeClient client(standin.endpoint());
  KubeApi api(client, "airlock-tools");
  ASSERT_TRUE(api.remove("pods", name));  // someone else, or the node's loss
  for (int i = 0; i < 100 && !session->ended(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(session->ended());
  EXPECT_TRUE(session->wait(sleeper->id, 5000ms).has_value());  // its connection ended with the pod
  RunResult result = session->end();
  EXPECT_EQ(result.verdict, sandbox::Verdict::signaled);
  EXPECT_EQ(result.message.rfind("aborted: ", 0), 0u) << result.message;
  EXPECT_NE(result.message.find("deleted from outside"), std::string::npos) << result.message;
  expect_clean();
}

TEST_F(KubernetesSessionTest, APodFailedWithItsNodeEndsTheSessionAsAborted) {
  auto session = start();
  ASSERT_TRUE(session);
  std::string name = standin.state()["pods"][0];
  KubeClient client(standin.endpoint());
  auto lost = client.request("POST", "/standin/pods/" + name + "/node-lost", "{}");
  ASSERT_TRUE(lost);
  ASSERT_EQ(lost->status, 200u) << lost->body;
  for (int i = 0; i < 100 && !session->ended(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(session->ended());
  RunResult result = session->end();
  EXPECT_EQ(result.verdict, sandbox::Verdict::signaled);
  EXPECT_EQ(result.message.rfind("aborted: ", 0), 0u) << result.message;
  EXPECT_NE(result.message.find("NodeLost"), std::string::npos) << result.message;
  expect_clean();  // the failed pod and its objects deleted
}

TEST_F(KubernetesSessionTest, TheLifetimeEndsTheSessionAndDeletesThePod) {
  RunRequest r = request();
  r.limits.wall_time = 1500ms;
  auto session = start(r);
  ASSERT_TRUE(session);
  for (int i = 0; i < 100 && !session->ended(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(session->ended());
  EXPECT_EQ(session->end().verdict, sandbox::Verdict::timeout);
  expect_clean();
}

TEST_F(KubernetesSessionTest, TheSessionPodIsHardenedPlacedAndPassesTheSchemas) {
  RunRequest r = request();
  r.placement.arch = "arm64";
  r.placement.gpus = 1;
  r.placement.node_selector = {{"pool", "sessions"}};
  r.egress.allow = {{"203.0.113.0/24", 443}};
  r.limits.cpus = 1.5;
  auto session = start(r);
  ASSERT_TRUE(session);
  json state = standin.state();
  json pod;
  for (const auto& object : state["created"])
    if (object["kind"] == "Pod") pod = object;
  ASSERT_TRUE(pod.is_object());
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["automountServiceAccountToken"], false);
  EXPECT_EQ(spec["activeDeadlineSeconds"], 60);
  EXPECT_EQ(spec["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(spec["nodeSelector"]["kubernetes.io/arch"], "arm64");
  EXPECT_EQ(spec["nodeSelector"]["pool"], "sessions");
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_EQ(c["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(c["resources"]["limits"]["cpu"], "1500m") << "the template's cpus bound the pod's CPU";
  EXPECT_EQ(c["resources"]["requests"]["cpu"], "1500m");
  EXPECT_EQ(c["command"].back(), kSessionIdleScript);
  // Every object passed the stand-in's strict schema check (kubernetes-models): a violation
  // would have been refused with 422 and the session would not have started.
  EXPECT_EQ(state["violations"], json::array()) << state["violations"];
  (void)session->end();
  expect_clean();
}

// The pod's CPU counter (issue #37): what `cat` of the cgroup files prints, in either cgroup
// version's format; anything else is no reading.
TEST(CgroupCpu, V2InMicrosecondsV1InTicksAndNothingElse) {
  auto v2 = parse_cgroup_cpu("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\nnr_throttled 0\n");
  ASSERT_TRUE(v2);
  EXPECT_EQ(v2->user_ns, 1'000'000u);
  EXPECT_EQ(v2->sys_ns, 500'000u);
  auto v1 = parse_cgroup_cpu("user 12\nsystem 3\n");  // USER_HZ ticks of 10 ms
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->user_ns, 120'000'000u);
  EXPECT_EQ(v1->sys_ns, 30'000'000u);
  auto unterminated = parse_cgroup_cpu("user_usec 7\nsystem_usec 8");
  ASSERT_TRUE(unterminated);
  EXPECT_EQ(unterminated->sys_ns, 8'000u);
  EXPECT_FALSE(parse_cgroup_cpu(""));
  EXPECT_FALSE(parse_cgroup_cpu("cat: /sys/fs/cgroup/cpu.stat: No such file or directory\n"));
  EXPECT_FALSE(parse_cgroup_cpu("usage_usec 100\nuser_usec 60\n"));  // half of it
  EXPECT_FALSE(parse_cgroup_cpu("user_usec lots\nsystem_usec 5\n"));
  EXPECT_FALSE(parse_cgroup_cpu("user_usec -1\nsystem_usec 5\n"));
  EXPECT_FALSE(parse_cgroup_cpu("user_usec 1 2\nsystem_usec 5\n"));
  EXPECT_FALSE(parse_cgroup_cpu("user_usec 99999999999999999999999\nsystem_usec 5\n"));  // past 64 bits
  EXPECT_FALSE(parse_cgroup_cpu("user_usec 18446744073709552\nsystem_usec 5\n"));     // in ns, past 64 bits
}

// What an exec burns in the pod is in its end, once: the next exec, idle, is charged nothing.
TEST_F(KubernetesSessionTest, AnExecThatBurnsCpuHasItInItsEnd) {
  auto session = start();
  ASSERT_TRUE(session);
  auto burnt = run_to_end(*session, {"standin-burn", "300", "120"});
  ASSERT_TRUE(burnt);
  EXPECT_EQ(burnt->code, 0);
  EXPECT_EQ(burnt->user_us, 300'000u);
  EXPECT_EQ(burnt->sys_us, 120'000u);
  auto idle = run_to_end(*session, {"echo", "idle"});
  ASSERT_TRUE(idle);
  EXPECT_EQ(idle->user_us, 0u);
  EXPECT_EQ(idle->sys_us, 0u);
  auto used = session->cpu_used();
  ASSERT_TRUE(used);
  EXPECT_EQ(used->user_ns, 300'000'000u);
  EXPECT_EQ(used->sys_ns, 120'000'000u);
  (void)session->end();
  expect_clean();
}

// A process left in the background uses CPU between execs: the next exec that ends is charged
// with it; cpu_used() adds every reading up; end() reads once more for the session's total.
TEST_F(KubernetesSessionTest, CpuUsedBetweenExecsGoesToTheNextExecThatEnds) {
  auto session = start();
  ASSERT_TRUE(session);
  auto first = run_to_end(*session, {"standin-burn", "100", "0"});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->user_us, 100'000u);
  burn_in_background(250, 50);
  EXPECT_EQ(session->cpu_used()->user_ns, 100'000'000u);  // read when an exec ends, not before
  auto next = run_to_end(*session, {"echo", "next"});
  ASSERT_TRUE(next);
  EXPECT_EQ(next->code, 0);
  EXPECT_EQ(next->user_us, 250'000u);
  EXPECT_EQ(next->sys_us, 50'000u);
  auto used = session->cpu_used();
  ASSERT_TRUE(used);
  EXPECT_EQ(used->user_ns, 350'000'000u);
  EXPECT_EQ(used->sys_ns, 50'000'000u);
  // Nothing lost, nothing charged twice: the execs' ends add up to the pod's counter.
  const json counter = pod_cpu();
  EXPECT_EQ(counter["user_usec"], first->user_us + next->user_us) << counter;
  EXPECT_EQ(counter["system_usec"], first->sys_us + next->sys_us) << counter;
  burn_in_background(40, 10);
  RunResult result = session->end();
  EXPECT_EQ(result.usage.cpu_user_ms, 390u);
  EXPECT_EQ(result.usage.cpu_sys_ms, 60u);
  expect_clean();
}

// While a long-lived exec runs (a session's interpreter, an MCP server), read_cpu_now() reads
// the counter afresh (cpu_used() alone stays at the last reading); a reading that fails adds
// nothing and the next catches up; the exec's end is charged only what came after the last
// reading, so nothing is counted twice.
TEST_F(KubernetesSessionTest, ReadCpuNowReadsThePodsCounterWhileAnExecRuns) {
  auto session = start();
  ASSERT_TRUE(session);
  auto sleeper = session->exec({{"sleep", "100"}, {}, ""});
  ASSERT_TRUE(sleeper);
  auto readings = [&] {
    const json state = standin.state();
    return std::count_if(state["execs"].begin(), state["execs"].end(), [](const json& e) { return reads_cpu(e["command"]); });
  };
  burn_in_background(300, 100);
  EXPECT_EQ(session->cpu_used()->user_ns, 0u);
  const auto before = readings();
  auto now = session->read_cpu_now();
  ASSERT_TRUE(now);
  EXPECT_EQ(now->user_ns, 300'000'000u);
  EXPECT_EQ(now->sys_ns, 100'000'000u);
  EXPECT_EQ(readings(), before + 1);  // one pods/exec of `cat`
  burn_in_background(50, 0);
  standin.inject({{"kind", "cpu-stat-missing"}});
  EXPECT_EQ(session->read_cpu_now()->user_ns, 300'000'000u);  // failed: nothing added
  EXPECT_EQ(session->read_cpu_now()->user_ns, 350'000'000u);  // caught up
  burn_in_background(20, 0);
  ASSERT_TRUE(session->signal(sleeper->id, SIGTERM));
  auto end = session->wait(sleeper->id, 5000ms);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->user_us, 20'000u);
  EXPECT_EQ(end->sys_us, 0u);
  const json counter = pod_cpu();
  EXPECT_EQ(counter["user_usec"], session->cpu_used()->user_ns / 1000) << counter;
  (void)session->end();
  expect_clean();
}

// On a node with cgroup v1 the counter is cpuacct.stat, in ticks.
TEST_F(KubernetesSessionTest, OnCgroupV1TheCounterIsCpuacctStat) {
  auto session = start();
  ASSERT_TRUE(session);
  standin.inject({{"kind", "cgroup-v1"}, {"count", 2}});
  auto burnt = run_to_end(*session, {"standin-burn", "230", "70"});
  ASSERT_TRUE(burnt);
  EXPECT_EQ(burnt->user_us, 230'000u);
  EXPECT_EQ(burnt->sys_us, 70'000u);
  (void)session->end();
  expect_clean();
}

// A counter that cannot be read (no such file, not numbers) charges nothing and keeps the last
// reading; the exec still ends as it did. The next reading that succeeds charges what was
// missed, and the session's end says how many failed.
TEST_F(KubernetesSessionTest, AnUnreadableCounterChargesNothingAndTheExecStillEnds) {
  auto session = start();
  ASSERT_TRUE(session);
  standin.inject({{"kind", "cpu-stat-missing"}});
  auto missing = run_to_end(*session, {"standin-burn", "200", "50"});
  ASSERT_TRUE(missing);
  EXPECT_TRUE(missing->exited);
  EXPECT_EQ(missing->code, 0);
  EXPECT_EQ(missing->user_us, 0u);
  EXPECT_EQ(missing->sys_us, 0u);
  standin.inject({{"kind", "cpu-stat-garbage"}});
  auto garbage = run_to_end(*session, {"standin-fail", "3", "it", "broke"});
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->code, 3);
  EXPECT_EQ(garbage->user_us, 0u);
  EXPECT_EQ(session->cpu_used()->user_ns, 0u);
  auto next = run_to_end(*session, {"echo", "read"});
  ASSERT_TRUE(next);
  EXPECT_EQ(next->user_us, 200'000u);
  EXPECT_EQ(next->sys_us, 50'000u);
  RunResult result = session->end();
  EXPECT_EQ(result.verdict, sandbox::Verdict::ok);
  EXPECT_NE(result.message.find("2 reading(s) of its CPU counter failed"), std::string::npos) << result.message;
  expect_clean();
}

}  // namespace
}  // namespace airlock::backend::kubernetes
