// The kubernetes backend through the daemon: a `risk: high` tool whose tier runs on
// kubernetes, invoked over HTTP like any tool, its pod played by the API-server stand-in
// (standin/server.mjs). The whole pipeline runs (RBAC, schema, DLP, audit); the pod gets the
// runner and the tool's files, its output comes back as the invocation's; host-name egress
// goes through the daemon's egress gateway with the invocation's credentials.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "egress_fixtures.hpp"
#include "server_test_support.hpp"
#include "standin_process.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;

class KubernetesDaemon : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string yaml = ws.config_text();
    const std::string low = "  low: {timeout: 10s, memory: 128Mi, pids: 16, output: 64Ki}\n";
    const auto at = yaml.find(low);
    ASSERT_NE(at, std::string::npos);
    const std::string gateway = std::to_string(free_port(1100));  // below the ephemeral range
    yaml.insert(at + low.size(),
                "  high:\n"
                "    timeout: 10s\n"
                "    backend: kubernetes\n"
                "    kubernetes:\n"
                "      kubeconfig: " + standin.write_kubeconfig() + "\n"
                "      namespace: airlock-tools\n"
                "      image: registry.example/tools/ok:1\n"
                "      egressProxy: {host: 127.0.0.1, port: " + gateway + ", cidrs: [127.0.0.1/32], listen: 127.0.0.1:" + gateway + "}\n");
    yaml += "  - name: fetch-high\n"
            "    risk: high\n"
            "    runtime: {type: python, file: tools/echo.py}\n"
            "    kubernetes: {image: registry.example/tools/fetch:1}\n"
            "    env: {FETCH_URL: 'http://api.example.test:" + std::to_string(upstream.port()) + "/data'}\n"
            "    network:\n"
            "      allow: ['api.example.test:" + std::to_string(upstream.port()) + "']\n"
            "      resolve: {api.example.test: 127.0.0.1}\n";
    ws.write_config(yaml);
  }

  std::vector<json> created(const std::string& kind) {
    std::vector<json> out;
    const json state = standin.state();  // held: a range over a temporary's member would dangle
    for (const auto& object : state["created"])
      if (object["kind"] == kind) out.push_back(object);
    return out;
  }

  // The high tier's pods of a `sleep` image, which the stand-in keeps Running (its other
  // images end like a call's), and `extra` appended to the config.
  void use_running_pods(const std::string& extra) {
    std::string yaml = ws.config_text();
    const std::string image = "image: registry.example/tools/ok:1";
    ASSERT_NE(yaml.find(image), std::string::npos);
    yaml.replace(yaml.find(image), image.size(), "image: registry.example/tools/sleep:1");
    ws.write_config(yaml + extra);
  }

  // A gateway server `pods` (the stand-in's standin-mcp) on the high tier, so each instance is
  // a session pod of its own; `options` are more of the server's lines, `extra` is appended.
  void use_pod_mcp_server(const std::string& options, const std::string& extra = "") {
    ws.write_config(ws.config_text() +
                    "mcpServers:\n"
                    "  - name: pods\n"
                    "    command: [standin-mcp]\n"
                    "    risk: high\n" +
                    options + "    kubernetes: {image: registry.example/tools/sleep:1}\n" + extra);
  }

  // The gateway lists its servers after the daemon starts: true once `tool` is among its tools.
  static bool listed_within_30s(const RunningDaemon& d, const std::string& tool) {
    for (int i = 0; i < 300; ++i) {
      const json tools = http(d.port, "GET", "/v1/tools").json().value("tools", json::array());
      for (const auto& t : tools)
        if (t.value("name", "") == tool) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  void expect_clean() {
    json state = standin.state();
    EXPECT_EQ(state["pods"], json::array()) << state["pods"];
    EXPECT_EQ(state["secrets"], json::array());
    EXPECT_EQ(state["networkpolicies"], json::array());
    EXPECT_EQ(state["violations"], json::array()) << state["violations"];
  }

  backend::kubernetes::test::StandIn standin;
  Workspace ws;
  egress::fixtures::LoopbackServer upstream{[](int fd) {
    egress::fixtures::read_head(fd);
    egress::fixtures::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nthe-data");
  }};
};

TEST_F(KubernetesDaemon, AHighToolRunsAsAPodThroughTheWholePipeline) {
  RunningDaemon d(ws);
  auto r = invoke(d.port, "dangerous", {{"n", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json output = r.json()["output"];
  // The stand-in's pod "prints" its command and stdin: the runner, with the call's arguments.
  const std::string command = output["command"].dump();
  EXPECT_NE(command.find("/airlock/airlock_runner.py"), std::string::npos) << command;
  EXPECT_NE(output["stdin"].get<std::string>().find("\"n\":3"), std::string::npos) << output["stdin"];
  auto pods = created("Pod");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["metadata"]["annotations"]["airlock.dev/invocation-id"], r.json()["id"]);
  EXPECT_EQ(pods[0]["metadata"]["annotations"]["airlock.dev/tool"], "dangerous");
  expect_clean();
  // Stored like any other call.
  auto stored = http(d.port, "GET", "/v1/invocations/" + r.json()["id"].get<std::string>());
  EXPECT_EQ(stored.json()["status"], "ok") << stored.body;
}

// Issue #37: a session template of risk high whose tier runs on kubernetes is a pod for the
// session's life (backend/kubernetes/kube_session.hpp): created over the API, its execs through
// pods/exec, its pod and objects deleted when it ends.
TEST_F(KubernetesDaemon, AHighSessionIsAPodItsExecsGoThroughPodsExec) {
  use_running_pods("sessionTemplates:\n  - name: pod\n    risk: high\n");
  RunningDaemon d(ws);
  auto made = http(d.port, "POST", "/v1/sessions", json{{"template", "pod"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string id = made.json()["id"];
  auto pods = created("Pod");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["spec"]["securityContext"]["runAsNonRoot"], true) << pods[0];
  auto ran = http_with(d.port, "POST", "/v1/sessions/" + id + "/exec",
                       json{{"command", json::array({"echo", "from", "the", "pod"})}}.dump(), kKey,
                       {{"accept", "application/json"}});
  ASSERT_EQ(ran.status, 200) << ran.body;
  EXPECT_EQ(ran.json()["stdout"], "from the pod\n") << ran.body;
  EXPECT_EQ(ran.json()["exit_code"], 0) << ran.body;
  auto ended = http(d.port, "DELETE", "/v1/sessions/" + id);
  ASSERT_EQ(ended.status, 200) << ended.body;
  expect_clean();
}

// A session pod's CPU (its cgroup's counter, read after each exec) is charged to the owner's
// cpuSeconds: an exec that burns past the budget has it in its usage, the session's usage
// shows it, and the owner's next exec is refused by the quota.
TEST_F(KubernetesDaemon, ASessionPodsCpuIsChargedToItsOwnersCpuSeconds) {
  use_running_pods("sessionTemplates:\n  - name: pod\n    risk: high\n"
                   "quotas:\n  principals:\n    agent: {cpuSeconds: 1/60s}\n");
  RunningDaemon d(ws);
  auto made = http(d.port, "POST", "/v1/sessions", json{{"template", "pod"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string id = made.json()["id"];
  auto exec = [&](const json& command) {
    return http_with(d.port, "POST", "/v1/sessions/" + id + "/exec", json{{"command", command}}.dump(), kKey,
                     {{"accept", "application/json"}});
  };
  auto burnt = exec(json::array({"standin-burn", "1200", "300"}));  // 1.5 CPU-seconds in the pod
  ASSERT_EQ(burnt.status, 200) << burnt.body;
  EXPECT_EQ(burnt.json()["usage"]["cpu_user_ms"], 1200) << burnt.body;
  EXPECT_EQ(burnt.json()["usage"]["cpu_sys_ms"], 300) << burnt.body;
  auto shown = http(d.port, "GET", "/v1/sessions/" + id);
  EXPECT_EQ(shown.json()["usage"]["cpu_user_ms"], 1200) << shown.body;
  auto next = exec(json::array({"echo", "more"}));
  EXPECT_EQ(next.status, 429) << next.body;
  EXPECT_EQ(next.json()["error"]["kind"], "quota_exceeded") << next.body;
  EXPECT_EQ(next.json()["error"]["quota"], "cpuSeconds") << next.body;
  auto ended = http(d.port, "DELETE", "/v1/sessions/" + id);
  ASSERT_EQ(ended.status, 200) << ended.body;
  expect_clean();
}

// A code cell's CPU in a session pod: the interpreter is one long-lived exec whose end no cell
// waits for, so the pod's counter is read after each cell (one pods/exec). A cell that burns
// has that CPU in its usage and it is charged to the owner's cpuSeconds, whose next cell is
// refused. Without the reading a cell showed 0 and charged nothing: an owner doing all the
// work in cells escaped the quota.
TEST_F(KubernetesDaemon, ACodeCellsCpuInASessionPodIsChargedToItsOwnersCpuSeconds) {
  use_running_pods("sessionTemplates:\n  - name: pod\n    risk: high\n"
                   "quotas:\n  principals:\n    agent: {cpuSeconds: 1/60s}\n");
  RunningDaemon d(ws);
  auto made = http(d.port, "POST", "/v1/sessions", json{{"template", "pod"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string id = made.json()["id"];
  auto cell = [&](const std::string& code) {
    return http(d.port, "POST", "/v1/sessions/" + id + "/code", json{{"code", code}}.dump());
  };
  auto idle = cell("x = 1");  // starts the interpreter (the stand-in's: python3 -c, played)
  ASSERT_EQ(idle.status, 200) << idle.body;
  EXPECT_EQ(idle.json()["verdict"], "ok") << idle.body;
  EXPECT_EQ(idle.json()["usage"]["cpu_ms"], 0) << idle.body;
  auto burnt = cell("standin_burn(1200, 300)");  // 1.5 CPU-seconds in the pod, in the interpreter
  ASSERT_EQ(burnt.status, 200) << burnt.body;
  EXPECT_EQ(burnt.json()["stdout"], "burnt 1200 300\n") << burnt.body;
  EXPECT_EQ(burnt.json()["interpreter"]["state"], "kept") << burnt.body;
  EXPECT_EQ(burnt.json()["usage"]["cpu_ms"], 1500) << burnt.body;
  auto shown = http(d.port, "GET", "/v1/sessions/" + id);
  EXPECT_EQ(shown.json()["usage"]["cpu_user_ms"], 1200) << shown.body;
  auto next = cell("x = 2");
  EXPECT_EQ(next.status, 429) << next.body;
  EXPECT_EQ(next.json()["error"]["kind"], "quota_exceeded") << next.body;
  EXPECT_EQ(next.json()["error"]["quota"], "cpuSeconds") << next.body;
  auto ended = http(d.port, "DELETE", "/v1/sessions/" + id);
  ASSERT_EQ(ended.status, 200) << ended.body;
  expect_clean();
}

// A daemon SIGKILLed while a HIGH session runs leaves the session's pod in the cluster (its
// expiry is the session's whole life). The next start records the session aborted and deletes
// its pod, its Secret and its NetworkPolicy at once.
TEST_F(KubernetesDaemon, AKilledDaemonsSessionPodIsDeletedByTheNextStart) {
  use_running_pods("sessionTemplates:\n  - name: pod\n    risk: high\n");
  const std::uint16_t port = free_port(26000);
  const pid_t daemon = ::fork();
  if (daemon == 0) {
    const std::string listen = "127.0.0.1:" + std::to_string(port);
    ::execl(AIRLOCK_BINARY, "airlock", "serve", "--config", ws.config_path().c_str(), "--listen", listen.c_str(),
            nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 500 && http(port, "GET", "/healthz", "", "").status != 200; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto made = http(port, "POST", "/v1/sessions", json{{"template", "pod"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  ::kill(daemon, SIGKILL);
  ::waitpid(daemon, nullptr, 0);
  ASSERT_EQ(standin.state()["pods"].size(), 1u) << "the killed daemon left its session's pod";

  RunningDaemon next(ws);
  expect_clean();
}

// Issue #38: a third-party MCP server whose risk's tier runs on Kubernetes runs there, not in a
// weaker sandbox and not refused: each instance is a session pod of its own (the hardened pod,
// its Secret and NetworkPolicy; the server is the pod's one exec, its stdio through
// pods/exec). Its tools are listed and called through the whole pipeline, and its pod and
// objects are deleted when the instance stops (its idle timeout).
TEST_F(KubernetesDaemon, AHighMcpServerRunsInAPodOfItsOwn) {
  use_pod_mcp_server("    idleTimeout: 2s\n");
  RunningDaemon d(ws);
  ASSERT_TRUE(listed_within_30s(d, "pods.where")) << http(d.port, "GET", "/v1/tools").body;

  auto r = invoke(d.port, "pods.where", json::object());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["status"], "ok") << r.body;
  std::vector<json> server_pods;
  for (const auto& pod : created("Pod"))
    if (pod["metadata"]["annotations"]["airlock.dev/tool"] == "mcp server pods") server_pods.push_back(pod);
  ASSERT_FALSE(server_pods.empty()) << "no pod was made for the server";
  const std::string name = server_pods.back()["metadata"]["name"];
  EXPECT_NE(r.body.find("in pod " + name), std::string::npos) << "the call did not reach the pod: " << r.body;
  const json& spec = server_pods.back()["spec"];
  EXPECT_EQ(spec["securityContext"]["runAsNonRoot"], true) << spec;
  EXPECT_EQ(spec["automountServiceAccountToken"], false) << spec;
  EXPECT_EQ(spec["containers"][0]["image"], "registry.example/tools/sleep:1") << spec;
  EXPECT_EQ(spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"], true) << spec;
  EXPECT_EQ(created("NetworkPolicy").size(), created("Pod").size()) << "each pod has its NetworkPolicy";

  // Idle for its 2 s: the instance stops, and its pod goes with it.
  for (int i = 0; i < 150 && !standin.state()["pods"].empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  expect_clean();
}

// A call to an MCP server in a pod has the pod's CPU in its usage and is charged to the
// caller's cpuSeconds: the server is the pod's one exec, which ends only with the instance, so
// its counter is read as each call ends (one pods/exec). Without that a call's usage was null
// and charged nothing: a server's work on Kubernetes was outside every quota.
TEST_F(KubernetesDaemon, AnMcpCallInAPodIsMeasuredAndChargedToCpuSeconds) {
  use_pod_mcp_server("", "quotas:\n  principals:\n    agent: {cpuSeconds: 1/60s}\n");
  RunningDaemon d(ws);
  ASSERT_TRUE(listed_within_30s(d, "pods.burn")) << http(d.port, "GET", "/v1/tools").body;

  auto idle = invoke(d.port, "pods.where", json::object());
  ASSERT_EQ(idle.status, 200) << idle.body;
  ASSERT_TRUE(idle.json()["usage"].is_object()) << idle.body;
  EXPECT_EQ(idle.json()["usage"]["cpu_user_ms"], 0) << idle.body;
  auto burnt = invoke(d.port, "pods.burn", {{"user_ms", 1100}, {"sys_ms", 400}});
  ASSERT_EQ(burnt.status, 200) << burnt.body;
  EXPECT_EQ(burnt.json()["status"], "ok") << burnt.body;
  ASSERT_TRUE(burnt.json()["usage"].is_object()) << burnt.body;
  EXPECT_EQ(burnt.json()["usage"]["cpu_user_ms"], 1100) << burnt.body;
  EXPECT_EQ(burnt.json()["usage"]["cpu_sys_ms"], 400) << burnt.body;
  auto next = invoke(d.port, "pods.where", json::object());
  EXPECT_EQ(next.status, 429) << next.body;
  EXPECT_EQ(next.json()["error"]["kind"], "quota_exceeded") << next.body;
  EXPECT_EQ(next.json()["error"]["quota"], "cpuSeconds") << next.body;
}

TEST_F(KubernetesDaemon, HostNameEgressGoesThroughTheDaemonsGateway) {
  RunningDaemon d(ws);
  auto r = invoke(d.port, "fetch-high", json::object());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["output"]["status"], 200) << r.body;
  EXPECT_EQ(r.json()["output"]["body"], "the-data") << r.body;
  EXPECT_EQ(upstream.connections(), 1);
  expect_clean();
}

}  // namespace
}  // namespace airlock::server::test
