// The kubernetes backend's API conversation against the API-server stand-in
// (standin/server.mjs): every object it sends validated against the official schemas, the
// pod lifecycle played out, faults injected. Not a cluster: real-cluster.sh runs against one.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <openssl/evp.h>

#include "backend/kubernetes/kubernetes_backend.hpp"
#include "common/base64.hpp"
#include "egress_fixtures.hpp"
#include "standin_process.hpp"

namespace airlock::backend::kubernetes {
namespace {

using nlohmann::json;
using sandbox::Verdict;
using test::StandIn;

class KubernetesBackendTest : public ::testing::Test {
 protected:
  std::unique_ptr<KubernetesBackend> make_backend(KubernetesOptions options = {}) {
    if (options.image.empty()) options.image = "registry.example/tools/ok:1";
    options.namespace_name = "airlock-tools";
    options.instance = "test-daemon";
    options.pending_allowance = std::chrono::milliseconds(1500);
    if (options.gc_interval == std::chrono::milliseconds(60'000)) options.gc_interval = std::chrono::hours(1);
    options.retry.default_retry = std::chrono::milliseconds(10);
    return std::make_unique<KubernetesBackend>(standin.endpoint(), options);
  }

  RunRequest request(const std::string& image = "") {
    RunRequest r;
    r.argv = {"python3", "/tool/main.py", "--flag"};
    r.env = {{"TOOL_MODE", "fast"}};
    r.credentials = {{"API_TOKEN", "s3cret-value"}};
    r.stdin_bytes = "{\"q\": 1}";
    r.limits.wall_time = std::chrono::milliseconds(2000);
    r.limits.memory_bytes = 256ULL << 20;
    r.limits.disk_bytes = 32ULL << 20;
    r.placement.image = image;
    return r;
  }

  RunContext context(const std::string& id = "inv-0001") {
    RunContext c;
    c.invocation_id = id;
    c.tool_name = "search";
    return c;
  }

  // Nothing is left in the stand-in and it saw nothing a real API server would refuse.
  void expect_clean() {
    json state = standin.state();
    EXPECT_EQ(state["pods"], json::array()) << state["pods"];
    EXPECT_EQ(state["secrets"], json::array());
    EXPECT_EQ(state["networkpolicies"], json::array());
    EXPECT_EQ(state["violations"], json::array()) << state["violations"];
  }

  std::vector<json> created(const std::string& kind) {
    std::vector<json> out;
    json state = standin.state();
    for (const auto& object : state["created"])
      if (object["kind"] == kind) out.push_back(object);
    return out;
  }

  int count_requests(const std::string& method, const std::string& prefix) {
    int n = 0;
    json state = standin.state();
    for (const auto& r : state["requests"])
      if (r["method"] == method && r["path"].get<std::string>().rfind(prefix, 0) == 0) ++n;
    return n;
  }

  StandIn standin;
};

const std::string kPods = "/api/v1/namespaces/airlock-tools/pods";
const std::string kSecrets = "/api/v1/namespaces/airlock-tools/secrets";

TEST_F(KubernetesBackendTest, RunsOnePodWithStdinCredentialsAndReturnsStdout) {
  auto backend = make_backend();
  RunResult result = backend->run(request(), context());
  ASSERT_EQ(result.verdict, Verdict::ok) << result.message;
  json out = json::parse(result.stdout_data);
  EXPECT_EQ(out["stdin"], "{\"q\": 1}");
  EXPECT_EQ(out["env"]["API_TOKEN"], "secret:s3cret-value");  // by secretKeyRef, not a value
  EXPECT_EQ(out["env"]["TOOL_MODE"], "fast");
  EXPECT_EQ(out["command"].back(), "--flag");
  EXPECT_EQ(result.stderr_data, "a line on stderr");
  expect_clean();
}

TEST_F(KubernetesBackendTest, ThePodIsHardenedPlacedAndOwnsItsSecretAndPolicy) {
  KubernetesOptions options;
  options.runtime_class = "gvisor";
  auto backend = make_backend(options);
  RunRequest r = request();
  r.placement.arch = "arm64";
  r.placement.gpus = 1;
  r.placement.node_selector = {{"pool", "tools"}};
  r.placement.tolerations = {{"nvidia.com/gpu", "Exists", "", "NoSchedule"}};
  r.egress.allow = {{"203.0.113.0/24", 443}};
  r.env["API_TOKEN"] = "a-plain-value";  // the credential of that name wins, and alone
  ASSERT_EQ(backend->run(r, context("Inv_ABC.7")).verdict, Verdict::ok);
  auto pods = created("Pod");
  ASSERT_EQ(pods.size(), 1u);
  const json& pod = pods[0];
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["restartPolicy"], "Never");
  EXPECT_EQ(spec["activeDeadlineSeconds"], 2);
  EXPECT_EQ(spec["automountServiceAccountToken"], false);
  EXPECT_EQ(spec["enableServiceLinks"], false);
  EXPECT_EQ(spec["runtimeClassName"], "gvisor");
  EXPECT_EQ(spec["schedulingGates"][0]["name"], kSchedulingGate);
  EXPECT_EQ(spec["nodeSelector"]["kubernetes.io/arch"], "arm64");
  EXPECT_EQ(spec["nodeSelector"]["pool"], "tools");
  EXPECT_EQ(spec["tolerations"][0]["operator"], "Exists");
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_EQ(c["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(c["resources"]["requests"], c["resources"]["limits"]);
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(c["resources"]["limits"]["memory"], std::to_string(256ULL << 20));
  int api_token_entries = 0;
  for (const auto& env : c["env"]) {
    EXPECT_NE(env.value("value", ""), "s3cret-value");
    if (env["name"] == "API_TOKEN") ++api_token_entries;
  }
  EXPECT_EQ(api_token_entries, 1);
  EXPECT_EQ(spec["volumes"][0]["emptyDir"]["sizeLimit"], std::to_string(32ULL << 20));
  EXPECT_EQ(pod["metadata"]["labels"][kManagedByLabel], "airlock");
  EXPECT_EQ(pod["metadata"]["labels"][kInvocationLabel], "inv-abc-7");

  auto policies = created("NetworkPolicy");
  ASSERT_EQ(policies.size(), 1u);
  const json& policy = policies[0];
  EXPECT_EQ(policy["spec"]["podSelector"]["matchLabels"][kPodLabel], pod["metadata"]["name"]);
  EXPECT_EQ(policy["spec"]["policyTypes"], json::array({"Ingress", "Egress"}));
  EXPECT_EQ(policy["spec"]["ingress"], json::array());
  ASSERT_EQ(policy["spec"]["egress"].size(), 1u);
  EXPECT_EQ(policy["spec"]["egress"][0]["to"][0]["ipBlock"]["cidr"], "203.0.113.0/24");
  EXPECT_EQ(policy["spec"]["egress"][0]["ports"][0]["port"], 443);
  auto secrets = created("Secret");
  ASSERT_EQ(secrets.size(), 1u);
  EXPECT_EQ(secrets[0]["metadata"]["ownerReferences"][0]["name"], pod["metadata"]["name"]);
  EXPECT_EQ(policy["metadata"]["ownerReferences"][0]["kind"], "Pod");
  expect_clean();  // the stand-in checked the owners' uids and that the pod started after both
}

TEST_F(KubernetesBackendTest, ExitCodesOomAndDeadlineMapToTheirVerdicts) {
  auto backend = make_backend();
  RunResult exit3 = backend->run(request("registry.example/tools/exit3:1"), context());
  EXPECT_EQ(exit3.verdict, Verdict::exit_nonzero);
  EXPECT_EQ(exit3.exit_code, 3);
  EXPECT_EQ(exit3.stderr_data, "it went wrong");
  EXPECT_EQ(backend->run(request("registry.example/tools/oom:1"), context()).verdict, Verdict::memory_limit);
  EXPECT_EQ(backend->run(request("registry.example/tools/deadline:1"), context()).verdict, Verdict::timeout);
  expect_clean();
}

TEST_F(KubernetesBackendTest, OutputPastItsCapIsCutAndTheVerdictSaysSo) {
  auto backend = make_backend();
  RunRequest r = request("registry.example/tools/bigout:1");  // the stand-in logs 5000 bytes
  r.limits.output_bytes = 1000;
  RunResult result = backend->run(r, context());
  EXPECT_EQ(result.verdict, Verdict::output_limit) << result.message;
  EXPECT_EQ(result.stdout_data.size(), 1000u);
  EXPECT_TRUE(result.stdout_truncated);
  expect_clean();
}

TEST_F(KubernetesBackendTest, AnImageThatCannotBePulledIsASetupErrorNamingIt) {
  auto backend = make_backend();
  RunResult result = backend->run(request("registry.example/tools/pullfail:9"), context());
  EXPECT_EQ(result.verdict, Verdict::setup_error);
  EXPECT_NE(result.message.find("registry.example/tools/pullfail:9"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("ErrImagePull"), std::string::npos) << result.message;
  expect_clean();
}

TEST_F(KubernetesBackendTest, APodStuckPendingPastItsDeadlineIsDeletedWithWhy) {
  auto backend = make_backend();
  RunRequest r = request("registry.example/tools/stuck:1");
  r.limits.wall_time = std::chrono::milliseconds(500);
  RunResult result = backend->run(r, context());
  EXPECT_EQ(result.verdict, Verdict::setup_error);
  EXPECT_NE(result.message.find("Pending at its deadline"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("Insufficient nvidia.com/gpu"), std::string::npos) << result.message;
  expect_clean();
}

TEST_F(KubernetesBackendTest, AWrongTokenIsASetupErrorSaying401) {
  KubeEndpoint endpoint = standin.endpoint();
  endpoint.bearer_token = "not-the-token";
  KubernetesOptions options;
  options.image = "registry.example/tools/ok:1";
  options.gc_interval = std::chrono::hours(1);
  KubernetesBackend backend(endpoint, options);
  RunResult result = backend.run(request(), context());
  EXPECT_EQ(result.verdict, Verdict::setup_error);
  EXPECT_NE(result.message.find("401 Unauthorized"), std::string::npos) << result.message;
  expect_clean();
}

TEST_F(KubernetesBackendTest, A403OnTheSecretFailsTheRunAndDeletesThePod) {
  auto backend = make_backend();
  standin.inject({{"status", 403}, {"method", "POST"}, {"resource", "secrets"}, {"reason", "Forbidden"},
                  {"message", "secrets is forbidden: User \"system:serviceaccount:airlock:airlock\" cannot create resource"}});
  RunResult result = backend->run(request(), context());
  EXPECT_EQ(result.verdict, Verdict::setup_error);
  EXPECT_NE(result.message.find("403 Forbidden"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("cannot create resource"), std::string::npos) << result.message;
  EXPECT_FALSE(result.quota_exceeded);  // RBAC's 403 is not a quota
  EXPECT_EQ(count_requests("DELETE", kPods + "/"), 1);
  expect_clean();
}

// The namespace's ResourceQuota (deploy/kubernetes/tools-quota.yaml) refusing the pod is the
// caller's quota_exceeded (the execute stage's mapping), not Airlock's setup failure.
TEST_F(KubernetesBackendTest, AnExceededResourceQuotaIsMarkedAsTheCallersQuota) {
  auto backend = make_backend();
  standin.inject({{"status", 403}, {"method", "POST"}, {"resource", "pods"}, {"reason", "Forbidden"},
                  {"message", "pods \"airlock-x\" is forbidden: exceeded quota: airlock-tools, requested: pods=1, "
                              "used: pods=20, limited: pods=20"}});
  RunResult result = backend->run(request(), context());
  EXPECT_EQ(result.verdict, Verdict::setup_error);
  EXPECT_TRUE(result.quota_exceeded) << result.message;
  EXPECT_NE(result.message.find("exceeded quota"), std::string::npos) << result.message;
  expect_clean();
}

TEST_F(KubernetesBackendTest, A409OnThePodNameRetriesWithANewName) {
  auto backend = make_backend();
  standin.inject({{"status", 409}, {"method", "POST"}, {"resource", "pods"}, {"reason", "AlreadyExists"}});
  RunResult result = backend->run(request(), context());
  EXPECT_EQ(result.verdict, Verdict::ok) << result.message;
  EXPECT_EQ(count_requests("POST", kPods), 2);
  expect_clean();
}

TEST_F(KubernetesBackendTest, A422IsASetupErrorWithTheServersMessage) {
  auto backend = make_backend();
  standin.inject({{"status", 422}, {"method", "POST"}, {"resource", "networkpolicies"}, {"reason", "Invalid"},
                  {"message", "NetworkPolicy.networking.k8s.io \"x\" is invalid: spec.egress[0].to[0].ipBlock.cidr: Invalid value"}});
  RunResult result = backend->run(request(), context());
  EXPECT_EQ(result.verdict, Verdict::setup_error);
  EXPECT_NE(result.message.find("422 Invalid"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("ipBlock.cidr"), std::string::npos) << result.message;
  expect_clean();
}

// The stand-in's schema check is real: an invalid Pod gets the 422 an API server gives.
TEST_F(KubernetesBackendTest, TheStandInRefusesAnInvalidPodWith422) {
  KubeClient client(standin.endpoint());
  KubeApi api(client, "airlock-tools");
  auto made = api.create("pods", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "bad"}}},
                                  {"spec", {{"containers", json::array({{{"image", "x"}}})}}}});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("422 Invalid"), std::string::npos) << made.error().message;
  EXPECT_NE(made.error().message.find("name"), std::string::npos);
}

// A field the schema does not declare is refused too: a real API server would drop a misspelt
// hardening field with only a warning, and the pod would run without it.
TEST_F(KubernetesBackendTest, TheStandInRefusesAnUnknownFieldWith422) {
  KubeClient client(standin.endpoint());
  KubeApi api(client, "airlock-tools");
  json container = {{"name", "c"}, {"image", "x"}, {"securityContext", {{"allowPrivilegeEscalaton", false}}}};
  auto made = api.create("pods", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "misspelt"}}},
                                  {"spec", {{"containers", json::array({container})}}}});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("422 Invalid"), std::string::npos) << made.error().message;
  EXPECT_NE(made.error().message.find("/spec/containers/0/securityContext/allowPrivilegeEscalaton"),
            std::string::npos) << made.error().message;
}

// And its ordering check is real: a pod that can start before its Secret and NetworkPolicy
// exist (no scheduling gate) is a violation, which expect_clean() would report.
TEST_F(KubernetesBackendTest, TheStandInFlagsAPodThatStartsBeforeItsSecretAndPolicy) {
  KubeClient client(standin.endpoint());
  KubeApi api(client, "airlock-tools");
  PodPlan plan;
  plan.name = "airlock-ungated-1";
  plan.namespace_name = "airlock-tools";
  plan.image = "registry.example/tools/ok:1";
  plan.argv = {"true"};
  json pod = pod_json(plan);
  pod["spec"].erase("schedulingGates");
  ASSERT_TRUE(api.create("pods", pod).ok());
  json violations = standin.state()["violations"];
  ASSERT_EQ(violations.size(), 2u) << violations;
  EXPECT_NE(violations[0].get<std::string>().find("before its Secret"), std::string::npos);
  EXPECT_NE(violations[1].get<std::string>().find("NetworkPolicy"), std::string::npos);
}

TEST_F(KubernetesBackendTest, A429IsRetriedAfterItsRetryAfterAndThenGivenUp) {
  auto backend = make_backend();
  standin.inject({{"status", 429}, {"method", "POST"}, {"resource", "pods"}, {"retryAfter", 1}, {"reason", "TooManyRequests"}});
  EXPECT_EQ(backend->run(request(), context()).verdict, Verdict::ok);
  EXPECT_EQ(count_requests("POST", kPods), 2);
  standin.inject({{"status", 429}, {"method", "POST"}, {"resource", "pods"}, {"count", 10}, {"reason", "TooManyRequests"},
                  {"message", "Too many requests, please try again later."}});
  RunResult refused = backend->run(request(), context());
  EXPECT_EQ(refused.verdict, Verdict::setup_error);
  EXPECT_NE(refused.message.find("429"), std::string::npos) << refused.message;
  EXPECT_EQ(count_requests("POST", kPods), 2 + 4);  // bounded: four attempts
  expect_clean();
}

TEST_F(KubernetesBackendTest, AWatchThatBreaksMidStreamIsReListedAndResumed) {
  auto backend = make_backend();
  standin.inject({{"kind", "broken-watch"}, {"count", 3}});
  // patient: the stand-in's pod ends only once an unbroken watch follows it.
  RunResult result = backend->run(request("registry.example/tools/patient:1"), context());
  EXPECT_EQ(result.verdict, Verdict::ok) << result.message;
  EXPECT_GE(count_requests("GET", kPods + "?watch=true"), 4) << standin.state()["requests"].dump(1);
  expect_clean();
}

// Waits until the stand-in shows a pod Running (the test's own pacing, not an assertion).
void wait_running(StandIn& standin) {
  for (int i = 0; i < 500; ++i) {
    json state = standin.state();
    for (const auto& pod : state["objects"]["pods"])
      if (pod["status"].value("phase", "") == "Running") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST_F(KubernetesBackendTest, CancellingARunDeletesItsPod) {
  auto backend = make_backend();
  CancelSignal cancel;
  RunContext c = context();
  c.cancel = &cancel;
  RunRequest r = request("registry.example/tools/sleep:1");
  r.limits.wall_time = std::chrono::seconds(60);
  std::thread canceller([&] { wait_running(standin); cancel.cancel(); });
  RunResult result = backend->run(r, c);
  canceller.join();
  EXPECT_EQ(result.verdict, Verdict::signaled) << result.message;
  expect_clean();
}

TEST_F(KubernetesBackendTest, ShutdownStopsRunsInFlightAndRefusesNewOnes) {
  auto backend = make_backend();
  RunRequest r = request("registry.example/tools/sleep:1");
  r.limits.wall_time = std::chrono::seconds(60);
  std::thread stopper([&] { wait_running(standin); backend->shutdown(); });
  RunResult result = backend->run(r, context());
  stopper.join();
  EXPECT_EQ(result.verdict, Verdict::signaled);
  EXPECT_TRUE(backend->stopping());
  EXPECT_EQ(backend->run(request(), context()).verdict, Verdict::signaled);
  expect_clean();
}

PodPlan left_behind(const std::string& name, std::int64_t expires_at) {
  PodPlan plan;
  plan.name = name;
  plan.namespace_name = "airlock-tools";
  plan.invocation_id = name;
  plan.instance = "a-daemon-that-died";
  plan.expires_at = expires_at;
  plan.image = "registry.example/tools/sleep:1";
  plan.argv = {"sleep", "1000"};
  return plan;
}

TEST_F(KubernetesBackendTest, GarbageCollectionAtStartDeletesExpiredPodsAndWhatTheyOwn) {
  KubeClient client(standin.endpoint());
  KubeApi api(client, "airlock-tools");
  auto expired = api.create("pods", pod_json(left_behind("airlock-expired-1", 1)));
  ASSERT_TRUE(expired.ok()) << expired.error().message;
  ASSERT_TRUE(api.create("secrets", secret_json(left_behind("airlock-expired-1", 1), (*expired)["metadata"]["uid"])).ok());
  ASSERT_TRUE(api.create("pods", pod_json(left_behind("airlock-current-1", 4102444800))).ok());  // 2100
  json foreign = pod_json(left_behind("not-airlocks", 1));
  foreign["metadata"]["labels"].erase(kManagedByLabel);
  ASSERT_TRUE(api.create("pods", foreign).ok());

  auto backend = make_backend();  // its first pass runs at start
  GcPass pass = backend->collect_garbage_now();
  EXPECT_EQ(pass.error, "");
  json state = standin.state();
  EXPECT_EQ(state["pods"], json::array({"airlock-current-1", "not-airlocks"}));
  EXPECT_EQ(state["secrets"], json::array());  // owned by the expired pod: cascaded
}

// Failover (docs/daemon.md): a dead replica's invocation has its pod deleted at once, not
// expired; another invocation's pod and a pod not Airlock's stay.
TEST_F(KubernetesBackendTest, AbandonDeletesTheDeadReplicasPodOfThatInvocationOnly) {
  KubeClient client(standin.endpoint());
  KubeApi api(client, "airlock-tools");
  auto orphan = api.create("pods", pod_json(left_behind("airlock-orphan-1", 4102444800)));
  ASSERT_TRUE(orphan.ok()) << orphan.error().message;
  ASSERT_TRUE(api.create("secrets", secret_json(left_behind("airlock-orphan-1", 4102444800), (*orphan)["metadata"]["uid"])).ok());
  ASSERT_TRUE(api.create("pods", pod_json(left_behind("airlock-other-1", 4102444800))).ok());
  json foreign = pod_json(left_behind("airlock-orphan-1-foreign", 4102444800));
  foreign["metadata"]["labels"][kInvocationLabel] = label_value("airlock-orphan-1");
  foreign["metadata"]["labels"].erase(kManagedByLabel);
  ASSERT_TRUE(api.create("pods", foreign).ok());

  auto backend = make_backend();
  ASSERT_TRUE(backend->abandon("airlock-orphan-1"));
  json state = standin.state();
  EXPECT_EQ(state["pods"], json::array({"airlock-other-1", "airlock-orphan-1-foreign"}));
  EXPECT_EQ(state["secrets"], json::array());  // owned by the deleted pod: cascaded
  EXPECT_TRUE(backend->abandon("airlock-orphan-1")) << "nothing left: nothing to do";
}

TEST_F(KubernetesBackendTest, GarbageCollectionRunsPeriodically) {
  KubernetesOptions options;
  options.gc_interval = std::chrono::milliseconds(50);
  auto backend = make_backend(options);
  KubeClient client(standin.endpoint());
  KubeApi api(client, "airlock-tools");
  ASSERT_TRUE(api.create("pods", pod_json(left_behind("airlock-late-1", 1))).ok());
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = standin.state()["pods"].empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
}

TEST_F(KubernetesBackendTest, WhatAPodCannotHaveIsRefusedBeforeAnythingIsCreated) {
  auto backend = make_backend();
  RunRequest data = request();
  data.mounts = {{Mount::Kind::data, "/srv/data", "/data", true}};
  RunResult refused = backend->run(data, context());
  EXPECT_EQ(refused.verdict, Verdict::setup_error);
  EXPECT_NE(refused.message.find("data mount /srv/data"), std::string::npos) << refused.message;

  RunRequest named = request();
  named.egress.allow = {{"api.example.com", 443}};
  RunResult by_name = backend->run(named, context());
  EXPECT_EQ(by_name.verdict, Verdict::setup_error);
  EXPECT_NE(by_name.message.find("api.example.com"), std::string::npos) << by_name.message;

  KubernetesBackend imageless(standin.endpoint(), [] { KubernetesOptions o; o.gc_interval = std::chrono::hours(1); return o; }());
  RunResult without = imageless.run(request(), context());
  EXPECT_EQ(without.verdict, Verdict::setup_error);
  EXPECT_NE(without.message.find("no image"), std::string::npos) << without.message;

  RunRequest huge = request();
  huge.stdin_bytes.assign(2 << 20, 'x');
  EXPECT_EQ(backend->run(huge, context()).verdict, Verdict::setup_error);
  EXPECT_EQ(count_requests("POST", kPods), 0);
}

// Host-name egress through the daemon's egress gateway: the pod (the stand-in's "fetch" image)
// GETs a URL through the HTTP_PROXY its Secret gave it; the gateway holds the connection to
// this invocation's rules, another invocation's rules do not let it through, and the
// credentials die with the call.
class GatewayEgressTest : public KubernetesBackendTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(gateway->listen("127.0.0.1", 0).ok());
    gateway->start();
  }
  KubernetesOptions options(const std::string& host = "127.0.0.1") {
    KubernetesOptions o;
    o.gateway = gateway;
    o.gateway_route.host = host;
    o.gateway_route.port = gateway->port();
    o.gateway_route.cidrs = {"127.0.0.1/32"};
    return o;
  }
  RunRequest fetch(const std::string& allowed_host) {
    RunRequest r = request("registry.example/tools/fetch:1");
    const auto port = static_cast<std::uint16_t>(upstream.port());
    r.env["FETCH_URL"] = "http://api.example.test:" + std::to_string(port) + "/data";
    r.egress.allow = {{allowed_host, port}};
    r.egress.resolve = {{allowed_host, "127.0.0.1"}};
    return r;
  }
  std::shared_ptr<egress::EgressGateway> gateway = std::make_shared<egress::EgressGateway>();
  egress::fixtures::LoopbackServer upstream{[](int fd) {
    egress::fixtures::read_head(fd);
    egress::fixtures::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nthe-data");
  }};
};

std::string decoded(const std::string& base64) {
  std::string out(base64.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(base64.data()), static_cast<int>(base64.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

TEST_F(GatewayEgressTest, AHostNameRuleIsDecidedByTheGatewayForThisInvocationOnly) {
  auto backend = make_backend(options());
  RunResult result = backend->run(fetch("api.example.test"), context("inv-gw-1"));
  ASSERT_EQ(result.verdict, Verdict::ok) << result.message;
  json fetched = json::parse(result.stdout_data);
  EXPECT_EQ(fetched["status"], 200) << fetched;
  EXPECT_EQ(fetched["body"], "the-data") << fetched;
  ASSERT_EQ(result.egress.size(), 1u);
  EXPECT_TRUE(result.egress[0].allowed);
  EXPECT_EQ(result.egress[0].host, "api.example.test");

  // The proxy URL (with its password) is in the Secret, and only referenced by the Pod.
  auto secrets = created("Secret");
  ASSERT_EQ(secrets.size(), 1u);
  const std::string proxy_url = decoded(secrets[0]["data"]["egress-proxy-http"].get<std::string>());
  EXPECT_EQ(proxy_url.rfind("http://inv-gw-1:", 0), 0u) << proxy_url;
  const std::string password = proxy_url.substr(16, proxy_url.find('@') - 16);
  EXPECT_EQ(password.size(), 64u);
  const json pod = created("Pod")[0];
  for (const auto& env : pod["spec"]["containers"][0]["env"]) {
    EXPECT_EQ(env.dump().find(password), std::string::npos) << env;
    if (env["name"] == "HTTP_PROXY" || env["name"] == "all_proxy") {
      EXPECT_TRUE(env.contains("valueFrom")) << env;
    }
  }
  // The NetworkPolicy: the gateway's address on its port, and no DNS (it is an address).
  const json egress = created("NetworkPolicy")[0]["spec"]["egress"];
  ASSERT_EQ(egress.size(), 1u) << egress;
  EXPECT_EQ(egress[0]["to"][0]["ipBlock"]["cidr"], "127.0.0.1/32");
  EXPECT_EQ(egress[0]["ports"][0]["port"], gateway->port());

  // After the call the credentials are nobody's.
  auto admitted_again = gateway->admit(*egress::EgressPolicy::compile({}), "x", "inv-gw-1");
  EXPECT_TRUE(admitted_again.ok()) << "the call's admission is closed, its name free";
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(gateway->port());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string target = "api.example.test:" + std::to_string(upstream.port());
  egress::fixtures::send_all(fd, "GET http://" + target + "/data HTTP/1.1\r\nHost: " + target +
                                     "\r\nProxy-Authorization: Basic " + base64_encode("inv-gw-1:" + password) + "\r\n\r\n");
  EXPECT_NE(egress::fixtures::read_head(fd).find(" 407 "), std::string::npos);
  ::close(fd);
  EXPECT_EQ(upstream.connections(), 1);
  expect_clean();
}

TEST_F(GatewayEgressTest, AnotherRuleSetDoesNotReachTheHost) {
  auto backend = make_backend(options());
  RunResult result = backend->run(fetch("elsewhere.example.test"), context("inv-gw-2"));
  ASSERT_EQ(result.verdict, Verdict::ok) << result.message;
  json fetched = json::parse(result.stdout_data);
  EXPECT_EQ(fetched["status"], 403) << fetched;
  ASSERT_EQ(result.egress.size(), 1u);
  EXPECT_FALSE(result.egress[0].allowed);
  EXPECT_EQ(upstream.connections(), 0);
  expect_clean();
}

TEST_F(GatewayEgressTest, AGatewayNamedByAServiceLetsThePodAskTheClusterDnsAndNothingElse) {
  auto backend = make_backend(options("airlock-egress.airlock.svc"));
  RunRequest r = request();
  r.egress.allow = {{"api.example.com", 443}, {"203.0.113.7", 8443}};
  ASSERT_EQ(backend->run(r, context("inv-gw-3")).verdict, Verdict::ok);
  const json egress = created("NetworkPolicy")[0]["spec"]["egress"];
  ASSERT_EQ(egress.size(), 3u) << egress;  // the address rule, the gateway, DNS
  EXPECT_EQ(egress[0]["to"][0]["ipBlock"]["cidr"], "203.0.113.7/32");
  EXPECT_EQ(egress[1]["ports"][0]["port"], gateway->port());
  EXPECT_EQ(egress[2]["to"][0]["podSelector"]["matchLabels"]["k8s-app"], "kube-dns");
  EXPECT_EQ(egress[2]["ports"][0]["port"], 53);
  auto secret = created("Secret")[0];
  EXPECT_NE(decoded(secret["data"]["egress-proxy-socks"].get<std::string>()).find("@airlock-egress.airlock.svc:"),
            std::string::npos);
  expect_clean();
}

TEST_F(KubernetesBackendTest, ToolCodeAndRunnerFilesArriveAsProjectedSecretFiles) {
  auto backend = make_backend();
  std::string dir = standin.dir() + "/tool";
  std::filesystem::create_directories(dir + "/lib");
  std::ofstream(dir + "/main.py") << "print('hi')\n";
  std::ofstream(dir + "/lib/util.py") << "X = 1\n";
  RunRequest r = request();
  r.mounts = {{Mount::Kind::tool_code, dir, "/tool", true}};
  ASSERT_EQ(backend->run(r, context()).verdict, Verdict::ok);
  auto pods = created("Pod");
  ASSERT_EQ(pods.size(), 1u);
  std::set<std::string> mounted;
  for (const auto& m : pods[0]["spec"]["containers"][0]["volumeMounts"]) mounted.insert(m["mountPath"]);
  EXPECT_TRUE(mounted.count("/tool/main.py"));
  EXPECT_TRUE(mounted.count("/tool/lib/util.py"));
  expect_clean();
}

TEST_F(KubernetesBackendTest, AKubeconfigLeadsToTheStandInAndAWrongCaIsRefused) {
  auto endpoint = load_kubeconfig(standin.write_kubeconfig("", "localhost"));
  ASSERT_TRUE(endpoint.ok()) << endpoint.error().message;
  EXPECT_EQ(endpoint->host, "localhost");
  KubeClient client(*endpoint);
  auto listed = client.request("GET", kPods);
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_EQ(listed->status, 200u);

  KubeEndpoint stranger = *endpoint;
  std::ifstream other(standin.dir() + "/other-ca.pem");
  stranger.ca_pem.assign(std::istreambuf_iterator<char>(other), {});
  KubeClient untrusting(stranger);
  auto refused = untrusting.request("GET", kPods);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("TLS"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace airlock::backend::kubernetes
