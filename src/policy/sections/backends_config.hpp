// Where each risk tier's calls run (tiers.<risk>.backend and its sections), and where a tool's
// Kubernetes pod may be placed (tools[].kubernetes). docs/backends.md, docs/gvisor.md,
// docs/kubernetes.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

enum class BackendKind { local, gvisor, kubernetes };
std::string_view backend_kind_name(BackendKind kind);

// tiers.<risk>.gvisor: runsc, the gVisor runtime, on this machine.
struct GvisorConfig {
  std::string runsc = "runsc";  // the program, looked up in PATH when it has no '/'
  std::string platform;         // ptrace, systrap, kvm; "": the first that works here
  bool operator==(const GvisorConfig&) const = default;
};

// tiers.<risk>.kubernetes: one pod per call in a cluster.
struct KubernetesConfig {
  std::string kubeconfig;                  // a kubeconfig file; "": in-cluster service account
  std::string namespace_name = "airlock-tools";
  std::string runtime_class;               // runtimeClassName of the pods; "": the cluster's default
  std::string image;                       // for tools without tools[].kubernetes.image
  // egressProxy: the daemon's egress gateway (egress/gateway.hpp), as the pods reach it. Set
  // (host not empty): the daemon serves it on `listen` and pods with egress go through it.
  std::string egress_proxy_host;           // an address or a Service DNS name
  std::uint16_t egress_proxy_port = 3128;
  // The gateway as the pods' NetworkPolicy names it: its addresses, and/or the daemon's pods
  // by namespace and labels (a Service's ClusterIP is not what most CNIs match ipBlock on).
  std::vector<std::string> egress_proxy_cidrs;
  std::string egress_proxy_pod_namespace;
  std::map<std::string, std::string> egress_proxy_pod_labels;
  std::string egress_proxy_listen_address = "0.0.0.0";  // where the daemon listens for it
  std::uint16_t egress_proxy_listen_port = 3128;
  std::chrono::milliseconds gc_interval{60'000};
  bool operator==(const KubernetesConfig&) const = default;
};

struct TierBackend {
  // Unset: local for low and medium; gvisor for high and critical where runsc works here.
  std::optional<BackendKind> kind;
  GvisorConfig gvisor;
  KubernetesConfig kubernetes;
  bool operator==(const TierBackend&) const = default;
};

// tools[].kubernetes.tolerations[]
struct Toleration {
  std::string key;
  std::string op = "Equal";  // Equal or Exists
  std::string value;
  std::string effect;        // "", NoSchedule, PreferNoSchedule, NoExecute
  bool operator==(const Toleration&) const = default;
};

// tools[].kubernetes: the pod's image and where it may run.
struct ToolPlacement {
  std::string image;  // "": the tier's kubernetes.image
  std::string arch;   // "", amd64 or arm64 (nodeSelector kubernetes.io/arch)
  std::uint32_t gpus = 0;  // nvidia.com/gpu requested (= limited)
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  bool operator==(const ToolPlacement&) const = default;
};

}  // namespace airlock::policy
