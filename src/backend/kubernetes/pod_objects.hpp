// The objects one tool call is made of in the cluster, as the JSON sent to the API server:
// the Pod (gated until its Secret and NetworkPolicy exist), the Secret holding its
// credentials, stdin and files, and the NetworkPolicy that isolates it. docs/kubernetes.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "common/result.hpp"

namespace airlock::backend::kubernetes {

inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kInvocationLabel = "airlock.dev/invocation";
inline constexpr const char* kPodLabel = "airlock.dev/pod";
inline constexpr const char* kInstanceAnnotation = "airlock.dev/instance";
inline constexpr const char* kExpiresAnnotation = "airlock.dev/expires-at";  // unix seconds
inline constexpr const char* kSchedulingGate = "airlock.dev/objects-ready";
inline constexpr const char* kInputDir = "/airlock/input";  // stdin arrives as a file here

// A file the pod sees, projected from the Secret: `path_inside` absolute.
struct ProjectedFile {
  std::string path_inside;
  std::string content;
};

// The CIDR the NetworkPolicy lets the pod reach, and its TCP port (none: every port).
struct EgressCidr {
  std::string cidr;
  std::optional<std::uint16_t> port;
};

// How a pod reaches the daemon's egress gateway (egress/gateway.hpp): the host and port in
// its proxy URLs, the gateway's addresses for its NetworkPolicy, and this invocation's
// credentials (in the Secret, never in the Pod's spec).
struct ProxyRoute {
  std::string host;  // an address or a Service's DNS name (then the pod may ask kube-dns)
  std::uint16_t port = 3128;
  std::vector<std::string> cidrs;                 // and/or the daemon's pods:
  std::string pod_namespace;
  std::map<std::string, std::string> pod_labels;  // empty: by cidrs only
  std::string username, password;
};

struct PodPlan {
  std::string name;  // of the Pod, the Secret and the NetworkPolicy
  std::string namespace_name;
  std::string invocation_id, tool_name;
  std::string instance;            // this daemon
  std::int64_t expires_at = 0;     // unix seconds: after this, garbage
  std::string image;
  std::string runtime_class;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::vector<Credential> credentials;
  std::vector<ProjectedFile> files;
  std::string stdin_bytes;
  sandbox::Limits limits;
  Placement placement;
  std::vector<EgressCidr> egress;     // reached directly (addresses and CIDRs)
  std::optional<ProxyRoute> proxy;    // set: the rest through the gateway, per invocation
};

// A label value naming the invocation: [a-z0-9.-], at most 63, alphanumeric at both ends.
std::string label_value(const std::string& text);

nlohmann::json pod_json(const PodPlan& plan);
nlohmann::json secret_json(const PodPlan& plan, const std::string& pod_uid);
nlohmann::json network_policy_json(const PodPlan& plan, const std::string& pod_uid);

// The allow rules that name addresses or CIDRs, which the NetworkPolicy lets the pod reach
// directly. A rule naming a host is for the egress gateway to decide: an error when there is
// none (`via_gateway` false), since a NetworkPolicy cannot name hosts. Port forwards and
// header injection are refused either way (they need a listener or a CA in the pod).
Result<std::vector<EgressCidr>> egress_cidrs(const egress::EgressRules& rules, bool via_gateway);

}  // namespace airlock::backend::kubernetes
