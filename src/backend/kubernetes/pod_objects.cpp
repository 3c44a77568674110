#include "backend/kubernetes/pod_objects.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include "common/base64.hpp"

namespace airlock::backend::kubernetes {

using nlohmann::json;

namespace {

constexpr int kNobody = 65534;
constexpr const char* kStdinKey = "stdin";
constexpr const char* kProxyHttpKey = "egress-proxy-http";    // http://USER:PASSWORD@host:port
constexpr const char* kProxySocksKey = "egress-proxy-socks";  // socks5h://USER:PASSWORD@host:port

std::string credential_key(std::size_t index) { return "credential-" + std::to_string(index); }
std::string file_key(std::size_t index) { return "file-" + std::to_string(index); }

json labels(const PodPlan& plan) {
  return {{kManagedByLabel, "airlock"},
          {kInvocationLabel, label_value(plan.invocation_id)},
          {kPodLabel, plan.name}};
}

json metadata(const PodPlan& plan) {
  return {{"name", plan.name},
          {"namespace", plan.namespace_name},
          {"labels", labels(plan)},
          {"annotations",
           {{kInstanceAnnotation, plan.instance},
            {kExpiresAnnotation, std::to_string(plan.expires_at)},
            {"airlock.dev/invocation-id", plan.invocation_id},
            {"airlock.dev/tool", plan.tool_name}}}};
}

// Deleting the Pod deletes what it owns (the cluster's garbage collector).
json owned_metadata(const PodPlan& plan, const std::string& pod_uid) {
  json meta = metadata(plan);
  meta["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                          {"kind", "Pod"},
                                          {"name", plan.name},
                                          {"uid", pod_uid},
                                          {"blockOwnerDeletion", false}}});
  return meta;
}

// PATH, HOME and LANG, the request's env over them, the credentials over both (one entry
// per name: a credential's name never also carries a plain value).
json env_list(const PodPlan& plan) {
  std::map<std::string, std::string> plain = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", "/work"},
      {"LANG", "C.UTF-8"}};
  for (const auto& [name, value] : plan.env) plain[name] = value;
  for (const auto& credential : plan.credentials) plain.erase(credential.env_name);
  auto from_secret = [&](const std::string& name, const std::string& key) {
    return json{{"name", name}, {"valueFrom", {{"secretKeyRef", {{"name", plan.name}, {"key", key}}}}}};
  };
  json proxied = json::array();
  if (plan.proxy) {
    for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
      proxied.push_back(from_secret(name, kProxyHttpKey));
    for (const char* name : {"ALL_PROXY", "all_proxy"}) proxied.push_back(from_secret(name, kProxySocksKey));
    for (const auto& entry : proxied) plain.erase(entry["name"].get<std::string>());
    plain["NO_PROXY"] = plain["no_proxy"] = "";
  }
  json env = json::array();
  for (const auto& [name, value] : plain) env.push_back({{"name", name}, {"value", value}});
  for (auto& entry : proxied) env.push_back(std::move(entry));
  for (std::size_t i = 0; i < plan.credentials.size(); ++i)
    env.push_back(from_secret(plan.credentials[i].env_name, credential_key(i)));
  return env;
}

json resources(const PodPlan& plan) {
  json amounts = {{"memory", std::to_string(plan.limits.memory_bytes)},
                  {"ephemeral-storage", std::to_string(plan.limits.disk_bytes)}};
  if (plan.placement.gpus > 0) amounts["nvidia.com/gpu"] = std::to_string(plan.placement.gpus);
  // The tier's CPU bandwidth as the pod's (the kubelet's CFS quota), in millicores.
  if (plan.limits.cpus && *plan.limits.cpus > 0)
    amounts["cpu"] = std::to_string(std::max<long long>(1, std::llround(*plan.limits.cpus * 1000))) + "m";
  return {{"requests", amounts}, {"limits", amounts}};
}

json container_security() {
  return {{"runAsNonRoot", true},
          {"runAsUser", kNobody},
          {"runAsGroup", kNobody},
          {"allowPrivilegeEscalation", false},
          {"privileged", false},
          {"readOnlyRootFilesystem", true},
          {"capabilities", {{"drop", json::array({"ALL"})}}},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

// stdin from the projected file; stderr to the termination message (Kubernetes keeps its
// first 4 KiB in the pod's status), so the log holds stdout alone.
json command(const PodPlan& plan) {
  json cmd = json::array({"/bin/sh", "-c",
                          std::string("exec \"$0\" \"$@\" <") + kInputDir + "/stdin 2>/dev/termination-log"});
  for (const auto& arg : plan.argv) cmd.push_back(arg);
  return cmd;
}

json volume_mounts(const PodPlan& plan) {
  json mounts = json::array({{{"name", "work"}, {"mountPath", "/work"}, {"subPath", "work"}},
                             {{"name", "work"}, {"mountPath", "/tmp"}, {"subPath", "tmp"}},
                             {{"name", "input"}, {"mountPath", kInputDir}, {"readOnly", true}}});
  for (std::size_t i = 0; i < plan.files.size(); ++i)
    mounts.push_back({{"name", "input"},
                      {"mountPath", plan.files[i].path_inside},
                      {"subPath", file_key(i)},
                      {"readOnly", true}});
  return mounts;
}

json volumes(const PodPlan& plan) {
  json items = json::array({{{"key", kStdinKey}, {"path", "stdin"}}});
  for (std::size_t i = 0; i < plan.files.size(); ++i)
    items.push_back({{"key", file_key(i)}, {"path", file_key(i)}});
  return json::array({{{"name", "work"}, {"emptyDir", {{"sizeLimit", std::to_string(plan.limits.disk_bytes)}}}},
                      {{"name", "input"},
                       {"secret", {{"secretName", plan.name}, {"items", items}, {"defaultMode", 0444}}}}});
}

json placement_selector(const PodPlan& plan) {
  json selector = json::object();
  for (const auto& [key, value] : plan.placement.node_selector) selector[key] = value;
  if (!plan.placement.arch.empty()) selector["kubernetes.io/arch"] = plan.placement.arch;
  return selector;
}

json tolerations(const PodPlan& plan) {
  json list = json::array();
  for (const auto& t : plan.placement.tolerations) {
    json entry = {{"key", t.key}, {"operator", t.op}};
    if (t.op != "Exists") entry["value"] = t.value;
    if (!t.effect.empty()) entry["effect"] = t.effect;
    list.push_back(entry);
  }
  return list;
}

json pod_spec(const PodPlan& plan) {
  auto deadline = (plan.limits.wall_time.count() + 999) / 1000;
  json spec = {
      {"restartPolicy", "Never"},
      {"activeDeadlineSeconds", deadline < 1 ? 1 : deadline},
      {"automountServiceAccountToken", false},
      {"enableServiceLinks", false},
      {"terminationGracePeriodSeconds", 1},
      {"schedulingGates", json::array({{{"name", kSchedulingGate}}})},
      {"securityContext",
       {{"runAsNonRoot", true}, {"runAsUser", kNobody}, {"runAsGroup", kNobody},
        {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
      {"containers", json::array({{{"name", "tool"},
                                   {"image", plan.image},
                                   {"imagePullPolicy", "IfNotPresent"},
                                   {"command", command(plan)},
                                   {"workingDir", "/work"},
                                   {"env", env_list(plan)},
                                   {"resources", resources(plan)},
                                   {"securityContext", container_security()},
                                   {"terminationMessagePolicy", "File"},
                                   {"volumeMounts", volume_mounts(plan)}}})},
      {"volumes", volumes(plan)}};
  if (!plan.runtime_class.empty()) spec["runtimeClassName"] = plan.runtime_class;
  if (json selector = placement_selector(plan); !selector.empty()) spec["nodeSelector"] = selector;
  if (json list = tolerations(plan); !list.empty()) spec["tolerations"] = list;
  return spec;
}

Result<std::string> as_cidr(const std::string& host) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  if (!ec) return host + (address.is_v4() ? "/32" : "/128");
  auto v4 = boost::asio::ip::make_network_v4(host, ec);
  if (!ec) return v4.canonical().to_string();
  auto v6 = boost::asio::ip::make_network_v6(host, ec);
  if (!ec) return v6.canonical().to_string();
  return Error::make("kubernetes", "egress to " + host + " is not an address or a CIDR");
}

bool is_address(const std::string& host) {
  boost::system::error_code ec;
  (void)boost::asio::ip::make_address(host, ec);
  return !ec;
}

json tcp_port(std::uint16_t port) { return json::array({{{"protocol", "TCP"}, {"port", port}}}); }

// The cluster's DNS (kube-dns / CoreDNS in kube-system), for a gateway named by a Service.
json dns_egress() {
  return {{"to", json::array({{{"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", "kube-system"}}}}},
                               {"podSelector", {{"matchLabels", {{"k8s-app", "kube-dns"}}}}}}})},
          {"ports", json::array({{{"protocol", "UDP"}, {"port", 53}}, {{"protocol", "TCP"}, {"port", 53}}})}};
}

}  // namespace

std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) out += static_cast<char>(std::tolower(u));
    else if (c == '-' || c == '.' || c == '_') out += '-';
    if (out.size() == 63) break;
  }
  while (!out.empty() && !std::isalnum(static_cast<unsigned char>(out.back()))) out.pop_back();
  while (!out.empty() && !std::isalnum(static_cast<unsigned char>(out.front()))) out.erase(0, 1);
  return out.empty() ? "none" : out;
}

json pod_json(const PodPlan& plan) {
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata(plan)}, {"spec", pod_spec(plan)}};
}

json secret_json(const PodPlan& plan, const std::string& pod_uid) {
  json data = {{kStdinKey, base64_encode(plan.stdin_bytes)}};
  for (std::size_t i = 0; i < plan.credentials.size(); ++i)
    data[credential_key(i)] = base64_encode(plan.credentials[i].value);
  for (std::size_t i = 0; i < plan.files.size(); ++i) data[file_key(i)] = base64_encode(plan.files[i].content);
  if (const auto& route = plan.proxy) {
    const std::string authority = route->username + ":" + route->password + "@" + route->host + ":" +
                                  std::to_string(route->port);
    data[kProxyHttpKey] = base64_encode("http://" + authority);
    data[kProxySocksKey] = base64_encode("socks5h://" + authority);
  }
  return {{"apiVersion", "v1"}, {"kind", "Secret"}, {"type", "Opaque"}, {"immutable", true},
          {"metadata", owned_metadata(plan, pod_uid)}, {"data", data}};
}

// Only this pod; no ingress at all; egress to the allowed CIDRs on their ports, to the egress
// gateway's addresses on its port when it goes through one, and nothing else. DNS only where
// a name must be resolved in the pod: the gateway's, when it is a Service name (the names in
// the rules are resolved by the gateway, not in the pod).
json network_policy_json(const PodPlan& plan, const std::string& pod_uid) {
  json egress = json::array();
  for (const auto& rule : plan.egress) {
    json entry = {{"to", json::array({{{"ipBlock", {{"cidr", rule.cidr}}}}})}};
    if (rule.port) entry["ports"] = tcp_port(*rule.port);
    egress.push_back(entry);
  }
  if (const auto& route = plan.proxy) {
    json to = json::array();
    for (const auto& cidr : route->cidrs) to.push_back({{"ipBlock", {{"cidr", cidr}}}});
    if (!route->pod_labels.empty())
      to.push_back({{"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", route->pod_namespace}}}}},
                    {"podSelector", {{"matchLabels", route->pod_labels}}}});
    egress.push_back({{"to", to}, {"ports", tcp_port(route->port)}});
    if (!is_address(route->host)) egress.push_back(dns_egress());
  }
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", owned_metadata(plan, pod_uid)},
          {"spec",
           {{"podSelector", {{"matchLabels", {{kPodLabel, plan.name}}}}},
            {"policyTypes", json::array({"Ingress", "Egress"})},
            {"ingress", json::array()},
            {"egress", egress}}}};
}

Result<std::vector<EgressCidr>> egress_cidrs(const egress::EgressRules& rules, bool via_gateway) {
  if (!rules.forwards.empty() || !rules.inject.empty())
    return Error::make("kubernetes", "port forwards and header injection need a listener or a CA inside the sandbox, which a pod of the kubernetes backend does not get: run this tool on the local or gvisor backend (docs/kubernetes.md)");
  std::vector<EgressCidr> out;
  for (const auto& rule : rules.allow) {
    auto cidr = as_cidr(rule.host);
    if (cidr) {
      out.push_back({*cidr, rule.port});
    } else if (!via_gateway) {
      return Error::make("kubernetes", "egress to " + rule.host +
                                           " names a host, which a NetworkPolicy cannot: set tiers.<risk>.kubernetes.egressProxy, so that the daemon's egress gateway decides it per invocation (docs/kubernetes.md)");
    }
  }
  return out;
}

}  // namespace airlock::backend::kubernetes
