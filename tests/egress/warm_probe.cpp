// The egress probes on a warm networked tool (ctest egress_warm: AIRLOCK_TEST_EGRESS_WARM=1).
// Each probe's program (curl, python3 -c ...) runs as a subprocess of a warm tool's call: a
// Python module tool of the real runner, forked from its template by a LocalBackend with the
// probe's rules, so that the call's sandbox was prepared ahead of the call, its listener made
// in its own network namespace, and the call's proxy (its policy, its records) bound at the
// hand-over. Every egress_test assertion then holds for the warm path as for the cold one.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "egress_fixtures.hpp"

namespace airlock::egress::fixtures {
namespace {

namespace fs = std::filesystem;

// run({"argv": [...]}) runs argv and answers what it wrote and how it ended.
constexpr const char* kProbeTool = R"PY(
import subprocess

def run(args):
    p = subprocess.run(args["argv"], stdin=subprocess.DEVNULL, capture_output=True)
    return {"code": p.returncode, "stdout": p.stdout.decode("latin-1"),
            "stderr": p.stderr.decode("latin-1")}
)PY";

// The tool's directory, written once for the whole run and removed at its end.
struct ProbeToolDir {
  std::string path = (fs::temp_directory_path() / ("airlock-warm-probe-" + std::to_string(::getpid()))).string();
  ProbeToolDir() {
    fs::create_directories(path);
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    std::ofstream(path + "/probe.py") << kProbeTool;
    fs::permissions(path + "/probe.py", fs::perms::owner_read | fs::perms::owner_write |
                                            fs::perms::group_read | fs::perms::others_read);
  }
  ~ProbeToolDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

const std::string& probe_tool_dir() {
  static const ProbeToolDir dir;
  return dir.path;
}

backend::RunRequest probe_request(const Spec& spec, const std::vector<std::string>& argv,
                                  std::vector<backend::Credential> credentials = {}) {
  const std::vector<std::string> runner = {"python3", "-I", "-S", "/airlock/airlock_runner.py"};
  backend::RunRequest r;
  r.argv = runner;
  r.argv.insert(r.argv.end(), {"module", "/tool/probe.py"});
  r.limits = spec.limits;
  r.egress = spec.egress;
  r.mounts.push_back({backend::Mount::Kind::runner, AIRLOCK_RUNNER_DIR, "/airlock", true});
  r.mounts.push_back({backend::Mount::Kind::tool_code, probe_tool_dir(), "/tool", true});
  r.credentials = std::move(credentials);
  r.stdin_bytes = nlohmann::json{{"argv", argv}}.dump();
  backend::WarmStart warm;
  warm.key = "egress-probe";
  warm.template_argv = runner;
  warm.template_argv.insert(warm.template_argv.end(), {"template", "/tool/probe.py"});
  r.warm = warm;
  return r;
}

// The runner's answer as the probe's own Outcome: its output, and its exit as the verdict.
Outcome as_probe_outcome(backend::RunResult call) {
  // A module tool's result is the runner's whole answer (docs: airlock_runner.py).
  auto result = nlohmann::json::parse(call.stdout_data, nullptr, false);
  if (call.verdict != Verdict::ok || !result.is_object() || !result.contains("code")) {
    ADD_FAILURE() << "the warm probe tool did not answer" << describe(call);
    return call;
  }
  call.stdout_data = result.value("stdout", "");
  call.stderr_data = result.value("stderr", "");
  call.exit_code = result.value("code", -1);
  if (call.exit_code != 0) call.verdict = Verdict::exit_nonzero;
  return call;
}

bool warm_up(backend::LocalBackend& local, const Spec& spec, const backend::RunContext& context);

}  // namespace

bool warm_probes_asked() {
  static const bool asked = std::getenv("AIRLOCK_TEST_EGRESS_WARM") != nullptr;
  return asked;
}

// Calls of a no-op with the spec's rules until one is warm (the template is ready, a child
// prepared). False when the rules are refused (the cold path's setup error) or it never is.
namespace {

bool warm_up(backend::LocalBackend& local, const Spec& spec, const backend::RunContext& context) {
  using namespace std::chrono_literals;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    backend::RunResult noop = local.run(probe_request(spec, {"true"}), context);
    if (noop.warm) return true;
    if (noop.verdict == Verdict::setup_error) return false;
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the warm probe tool never ran warm: " << noop.cold_reason;
      return false;
    }
    std::this_thread::sleep_for(20ms);
  }
}

}  // namespace

// A backend of its own per probe (its forbidden endpoints are the probe's), warmed up with the
// probe's rules; then the probe, which must run warm.
Outcome run_warm_probe(const Spec& spec, const backend::LocalRunOptions& options) {
  backend::LocalBackend local(nullptr,
                              std::make_shared<const std::vector<Endpoint>>(options.forbidden), 1);
  backend::RunContext context;
  context.rule_set = options.rule_set;
  // Rules the proxy refuses (a port clash...): the probe gets the cold path's setup error.
  if (!warm_up(local, spec, context)) return local.run(probe_request(spec, spec.argv), context);
  backend::RunResult call = local.run(probe_request(spec, spec.argv), context);
  EXPECT_TRUE(call.warm) << "the probe ran cold: " << call.cold_reason;
  local.shutdown();
  return as_probe_outcome(std::move(call));
}

namespace {

// Answers "hello N" to each request and counts the connections.
struct Hello {
  std::string name;
  LoopbackServer server{[this](int fd) {
    (void)read_head(fd);
    const std::string body = "hello " + name + "\n";
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\n\r\n" + body);
  }};
  explicit Hello(std::string n) : name(std::move(n)) {}
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server.port()) + "/"; }
  std::string rule() const { return "127.0.0.1:" + std::to_string(server.port()); }
};

// Prints the call's TOKEN, then what each URL answered through the proxy (or curl's error).
std::vector<std::string> token_and_fetch(const std::vector<std::string>& urls) {
  std::string script = "printf 'token=%s\\n' \"${TOKEN:-none}\"";
  for (const auto& u : urls) script += "; curl -sS --max-time 10 -p " + u + " 2>&1; echo";
  return {"sh", "-c", script};
}

}  // namespace

// The policy is bound at the hand-over, per call: two calls of one warm tool (one template,
// children prepared ahead for both) with different rules and different users' credentials.
// The second, whose rules allow only B, is refused A and told so, and sees none of the first's
// credential; the first's allowance (A) never reaches it.
TEST(EgressWarm, ACallsPolicyAndCredentialsDoNotReachTheNextCall) {
  Hello a("A"), b("B");
  backend::LocalBackend local(nullptr, std::make_shared<const std::vector<Endpoint>>(), 1);
  backend::RunContext context;
  context.rule_set = "the egress rules of tool probe";
  Spec alice_rules, bob_rules;
  allow(alice_rules, a.rule());
  allow(bob_rules, b.rule());
  alice_rules.limits.wall_time = bob_rules.limits.wall_time = std::chrono::seconds(60);
  ASSERT_TRUE(warm_up(local, alice_rules, context));

  const auto argv = token_and_fetch({a.url(), b.url()});
  Outcome alice = as_probe_outcome(local.run(probe_request(alice_rules, argv, {{"TOKEN", "alice-secret"}}), context));
  Outcome bob = as_probe_outcome(local.run(probe_request(bob_rules, argv), context));
  EXPECT_TRUE(alice.warm && bob.warm) << alice.cold_reason << bob.cold_reason;
  // Alice: A answers, B is refused.
  EXPECT_EQ(alice.stdout_data.rfind("token=alice-secret\nhello A\n", 0), 0u) << describe(alice);
  EXPECT_NE(alice.stdout_data.find("403"), std::string::npos) << describe(alice);
  // Bob: no token, A refused and named, B answers.
  EXPECT_EQ(bob.stdout_data.rfind("token=none\n", 0), 0u) << describe(bob);
  EXPECT_EQ(bob.stdout_data.find("hello A"), std::string::npos) << describe(bob);
  EXPECT_NE(bob.stdout_data.find("hello B"), std::string::npos) << describe(bob);
  EXPECT_EQ(bob.stdout_data.find("alice-secret"), std::string::npos) << describe(bob);
  // Each call's records are its own proxy's: A allowed then B denied, and the reverse.
  ASSERT_EQ(alice.egress.size(), 2u) << describe(alice);
  ASSERT_EQ(bob.egress.size(), 2u) << describe(bob);
  EXPECT_TRUE(alice.egress[0].allowed);
  EXPECT_FALSE(alice.egress[1].allowed);
  EXPECT_FALSE(bob.egress[0].allowed);
  EXPECT_NE(bob.egress[0].rule.find("matches no IP or CIDR rule for port " + std::to_string(a.server.port())),
            std::string::npos) << bob.egress[0].rule;
  EXPECT_NE(bob.stdout_data.find("403"), std::string::npos) << describe(bob);
  EXPECT_TRUE(bob.egress[1].allowed);
  EXPECT_EQ(a.server.connections(), 1);
  EXPECT_EQ(b.server.connections(), 1);
  local.shutdown();
}

// Header injection needs the call's CA bundle bound into its sandbox at launch, which a warm
// child's binds (its template's) cannot have: such a call runs cold, saying why, and never in
// a warm child without the CA it would need.
TEST(EgressWarm, ACallWithHeaderInjectionRunsColdAndSaysWhy) {
  backend::LocalBackend local(nullptr, std::make_shared<const std::vector<Endpoint>>(), 1);
  Spec rules;
  allow(rules, "api.example:443");
  rules.limits.wall_time = std::chrono::seconds(60);
  ASSERT_TRUE(warm_up(local, rules, {}));  // the template of this shape is ready
  rules.egress.inject.push_back({"api.example", 443, "Authorization", "Bearer sample"});
  backend::RunResult r = local.run(probe_request(rules, {"true"}), {});
  EXPECT_EQ(r.verdict, Verdict::ok) << describe(r);
  EXPECT_FALSE(r.warm);
  EXPECT_NE(r.cold_reason.find("header injection"), std::string::npos) << r.cold_reason;
  local.shutdown();
}

}  // namespace airlock::egress::fixtures
