// The objects one tool call is made of in the cluster, as the JSON sent to the API server:
// the Pod (gated until its Secret and NetworkPolicy exist), the Secret holding its
// credentials, stdin and files, and the NetworkPolicy that isolates it. docs/kubernetes.md.
#pragma once

#include <cstdint>
#include <map>
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
  std::vector<EgressCidr> egress;
};

// A label value naming the invocation: [a-z0-9.-], at most 63, alphanumeric at both ends.
std::string label_value(const std::string& text);

nlohmann::json pod_json(const PodPlan& plan);
nlohmann::json secret_json(const PodPlan& plan, const std::string& pod_uid);
nlohmann::json network_policy_json(const PodPlan& plan, const std::string& pod_uid);

// The allow rules as CIDRs. A rule naming a host (not an address or a CIDR) is an error: a
// NetworkPolicy cannot name hosts, and the per-invocation proxy is not there (kubernetes.md).
Result<std::vector<EgressCidr>> egress_cidrs(const egress::EgressRules& rules);

std::string base64_encode(const std::string& bytes);

}  // namespace airlock::backend::kubernetes
