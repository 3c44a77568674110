// tiers.<risk>.backend, .gvisor, .kubernetes and tools[].kubernetes: what is read, and that a
// mistake is named.
#include <gtest/gtest.h>

#include "policy/config.hpp"

namespace airlock::policy {
namespace {

std::string config_with(const std::string& tiers, const std::string& tool_extra = "") {
  return R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
tiers:
)" + tiers + R"(
tools:
  - name: wipe
    risk: high
    runtime: {type: command, command: [/bin/cat]}
)" + tool_extra;
}

Result<Config> parse(const std::string& yaml) { return parse_config(yaml, "test.yaml", "/tmp"); }

TEST(BackendsConfig, AbsentMeansTheDefault) {
  auto c = parse(config_with("  high: {timeout: 5s}"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->tier_backends.empty());
  EXPECT_EQ(c->tiers.at(Risk::high).wall_time, std::chrono::seconds(5));
}

TEST(BackendsConfig, ReadsEachSection) {
  auto c = parse(config_with(R"(  high:
    timeout: 60s
    backend: kubernetes
    kubernetes:
      kubeconfig: kube/config
      namespace: tools-ns
      runtimeClassName: gvisor
      image: registry.example/airlock-tool:1
      egressProxy:
        host: airlock-egress.airlock.svc
        port: 3129
        cidrs: [10.0.0.5/32]
        pods: {namespace: airlock, labels: {app.kubernetes.io/component: daemon}}
        listen: 127.0.0.1:3130
      gcInterval: 30s
  critical:
    backend: gvisor
    gvisor: {runsc: /usr/bin/runsc, platform: ptrace})",
                             R"(    kubernetes:
      image: registry.example/gpu-tool:2
      arch: arm64
      gpus: 1
      nodeSelector: {pool: gpu}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
)"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto& high = c->tier_backends.at(Risk::high);
  EXPECT_EQ(high.kind, BackendKind::kubernetes);
  EXPECT_EQ(high.kubernetes.kubeconfig, "/tmp/kube/config");
  EXPECT_EQ(high.kubernetes.namespace_name, "tools-ns");
  EXPECT_EQ(high.kubernetes.runtime_class, "gvisor");
  EXPECT_EQ(high.kubernetes.egress_proxy_host, "airlock-egress.airlock.svc");
  EXPECT_EQ(high.kubernetes.egress_proxy_port, 3129);
  EXPECT_EQ(high.kubernetes.egress_proxy_cidrs, std::vector<std::string>{"10.0.0.5/32"});
  EXPECT_EQ(high.kubernetes.egress_proxy_pod_namespace, "airlock");
  EXPECT_EQ(high.kubernetes.egress_proxy_pod_labels.at("app.kubernetes.io/component"), "daemon");
  EXPECT_EQ(high.kubernetes.egress_proxy_listen_address, "127.0.0.1");
  EXPECT_EQ(high.kubernetes.egress_proxy_listen_port, 3130);
  EXPECT_EQ(high.kubernetes.gc_interval, std::chrono::seconds(30));
  EXPECT_EQ(c->tiers.at(Risk::high).wall_time, std::chrono::seconds(60));
  const auto& critical = c->tier_backends.at(Risk::critical);
  EXPECT_EQ(critical.kind, BackendKind::gvisor);
  EXPECT_EQ(critical.gvisor.platform, "ptrace");
  const auto& placement = c->tools.at(0).placement;
  EXPECT_EQ(placement.arch, "arm64");
  EXPECT_EQ(placement.gpus, 1u);
  EXPECT_EQ(placement.node_selector.at("pool"), "gpu");
  ASSERT_EQ(placement.tolerations.size(), 1u);
  EXPECT_EQ(placement.tolerations[0].op, "Exists");
}

TEST(BackendsConfig, EachMistakeIsNamed) {
  struct Case {
    std::string tiers, tool_extra, expected;
  };
  const std::vector<Case> cases = {
      {"  high: {backend: docker}", "", "tiers.high.backend: expected local, gvisor or kubernetes, got 'docker'"},
      {"  high: {gvisor: {platform: hvf}}", "", "tiers.high.gvisor.platform: expected ptrace, systrap or kvm"},
      {"  high: {gvisor: {rootless: true}}", "", "rootless"},
      {"  high: {kubernetes: {namespace: Tools_NS}}", "", "tiers.high.kubernetes.namespace: 'Tools_NS' is not a Kubernetes name"},
      {"  high: {backendd: local}", "", "backendd"},
      {"  high: {kubernetes: {egressProxy: {host: gw.svc}}}", "", "egressProxy: cidrs or pods is required"},
      {"  high: {kubernetes: {egressProxy: {cidrs: [10.0.0.1/32]}}}", "", "egressProxy.host: the gateway's address"},
      {"  high: {kubernetes: {egressProxy: {host: gw.svc, cidrs: [10.0.0.1]}}}", "", "'10.0.0.1' is not ADDRESS/PREFIX"},
      {"  high: {kubernetes: {egressProxy: {host: gw.svc, cidrs: [10.0.0.1/33]}}}", "", "'10.0.0.1/33' is not ADDRESS/PREFIX"},
      {"  high: {kubernetes: {egressProxy: {host: gw.svc, cidrs: [10.0.0.1/32], listen: gw:80}}}", "", "egressProxy.listen: 'gw' is not an IP address"},
      {"  high: {kubernetes: {egressProxy: {host: gw.svc, pods: {labels: {a: b}}}}}", "", "pods: needs the daemon's namespace"},
      {"  high: {}", "    kubernetes: {arch: s390x}\n", "tool wipe.kubernetes.arch: expected amd64 or arm64"},
      {"  high: {}", "    kubernetes: {tolerations: [{key: a, effect: Sometimes}]}\n", "effect: expected NoSchedule"},
  };
  for (const auto& c : cases) {
    auto parsed = parse(config_with(c.tiers, c.tool_extra));
    ASSERT_FALSE(parsed.ok()) << c.tiers << c.tool_extra;
    EXPECT_NE(parsed.error().message.find(c.expected), std::string::npos)
        << parsed.error().message;
    EXPECT_NE(parsed.error().message.find("test.yaml:"), std::string::npos);
  }
}

}  // namespace
}  // namespace airlock::policy
