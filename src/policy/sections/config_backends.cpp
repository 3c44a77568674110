// tiers.<risk>.backend, .gvisor and .kubernetes, and tools[].kubernetes (placement).
#include <cctype>

#include "netrules/address.hpp"
#include "policy/config_reader.hpp"

namespace airlock::policy {

std::string_view backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::local: return "local";
    case BackendKind::gvisor: return "gvisor";
    case BackendKind::kubernetes: return "kubernetes";
  }
  return "local";
}

namespace detail {
namespace {

BackendKind backend_kind(Reader& r, const YAML::Node& n, const std::string& what) {
  std::string s = r.string(n, what);
  if (s == "local") return BackendKind::local;
  if (s == "gvisor") return BackendKind::gvisor;
  if (s == "kubernetes") return BackendKind::kubernetes;
  fail(n, what + ": expected local, gvisor or kubernetes, got '" + s + "'");
}

// A DNS-1123 label or subdomain, as Kubernetes names namespaces, classes and Services.
bool dns_name(const std::string& s, bool dots) {
  if (s.empty() || s.size() > 253) return false;
  if (!std::isalnum(static_cast<unsigned char>(s.front())) ||
      !std::isalnum(static_cast<unsigned char>(s.back())))
    return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (dots && c == '.');
    if (!ok) return false;
  }
  return true;
}

std::string dns_field(Reader& r, const YAML::Node& v, const std::string& what, bool dots) {
  std::string s = r.string(v, what);
  if (!dns_name(s, dots))
    fail(v, what + ": '" + s + "' is not a Kubernetes name (lower-case letters, digits, '-'" +
                (dots ? std::string(", '.'") : std::string()) + ")");
  return s;
}

// "ADDRESS/PREFIX", as a NetworkPolicy's ipBlock takes it.
bool is_cidr(const std::string& text) {
  auto slash = text.find('/');
  if (slash == std::string::npos || slash + 1 >= text.size() || text.size() - slash > 4) return false;
  auto address = netrules::parse_ip_strict(std::string_view(text).substr(0, slash));
  if (!address) return false;
  const std::string prefix = text.substr(slash + 1);
  if (prefix.find_first_not_of("0123456789") != std::string::npos) return false;
  return std::stoi(prefix) <= (address->v6 ? 128 : 32);
}

}  // namespace

void read_gvisor(Reader& r, const YAML::Node& n, const std::string& what, GvisorConfig& out) {
  r.expect_map(n, what);
  r.only_keys(n, what, {"runsc", "platform"});
  r.field(n, "runsc", [&](const YAML::Node& v) { out.runsc = r.string(v, what + ".runsc"); });
  r.field(n, "platform", [&](const YAML::Node& v) {
    out.platform = r.string(v, what + ".platform");
    if (out.platform != "ptrace" && out.platform != "systrap" && out.platform != "kvm")
      fail(v, what + ".platform: expected ptrace, systrap or kvm, got '" + out.platform + "'");
  });
}

void read_kubernetes(Reader& r, const YAML::Node& n, const std::string& what, KubernetesConfig& out) {
  r.expect_map(n, what);
  r.only_keys(n, what, {"kubeconfig", "namespace", "runtimeClassName", "image", "egressProxy",
                        "gcInterval"});
  r.field(n, "kubeconfig", [&](const YAML::Node& v) { out.kubeconfig = r.path(v, what + ".kubeconfig"); });
  r.field(n, "namespace",
          [&](const YAML::Node& v) { out.namespace_name = dns_field(r, v, what + ".namespace", false); });
  r.field(n, "runtimeClassName", [&](const YAML::Node& v) {
    out.runtime_class = dns_field(r, v, what + ".runtimeClassName", true);
  });
  r.field(n, "image", [&](const YAML::Node& v) { out.image = r.string(v, what + ".image"); });
  r.field(n, "gcInterval",
          [&](const YAML::Node& v) { out.gc_interval = r.duration(v, what + ".gcInterval"); });
  r.field(n, "egressProxy", [&](const YAML::Node& v) {
    const std::string at = what + ".egressProxy";
    r.expect_map(v, at);
    r.only_keys(v, at, {"host", "port", "cidrs", "pods", "listen"});
    r.field(v, "host", [&](const YAML::Node& h) {
      std::string host = r.string(h, at + ".host");
      out.egress_proxy_host = netrules::parse_ip_strict(host) ? host : dns_field(r, h, at + ".host", true);
    });
    r.field(v, "port", [&](const YAML::Node& p) {
      out.egress_proxy_port = static_cast<std::uint16_t>(r.unsigned_int(p, at + ".port", 65535));
      out.egress_proxy_listen_port = out.egress_proxy_port;
    });
    r.field(v, "cidrs", [&](const YAML::Node& c) {
      out.egress_proxy_cidrs = r.strings(c, at + ".cidrs");
      for (const auto& cidr : out.egress_proxy_cidrs)
        if (!is_cidr(cidr)) fail(c, at + ".cidrs: '" + cidr + "' is not ADDRESS/PREFIX (10.96.0.0/12)");
    });
    r.field(v, "pods", [&](const YAML::Node& p) {
      r.expect_map(p, at + ".pods");
      r.only_keys(p, at + ".pods", {"namespace", "labels"});
      r.field(p, "namespace", [&](const YAML::Node& ns) {
        out.egress_proxy_pod_namespace = dns_field(r, ns, at + ".pods.namespace", false);
      });
      r.field(p, "labels", [&](const YAML::Node& l) {
        r.expect_map(l, at + ".pods.labels");
        for (const auto& entry : l)
          out.egress_proxy_pod_labels[entry.first.as<std::string>()] = r.string(entry.second, at + ".pods.labels");
      });
      if (out.egress_proxy_pod_namespace.empty() || out.egress_proxy_pod_labels.empty())
        fail(p, at + ".pods: needs the daemon's namespace and its pods' labels");
    });
    r.field(v, "listen", [&](const YAML::Node& l) {
      auto listen = parse_listen(r.string(l, at + ".listen"));
      if (!listen) fail(l, at + ".listen: " + listen.error().message);
      out.egress_proxy_listen_address = listen->host;
      out.egress_proxy_listen_port = listen->port;
    });
    if (out.egress_proxy_host.empty()) fail(v, at + ".host: the gateway's address or Service name, as the pods reach it, is required");
    if (out.egress_proxy_cidrs.empty() && out.egress_proxy_pod_labels.empty())
      fail(v, at + ": cidrs or pods is required: the pods' NetworkPolicy lets them reach only the gateway's addresses or the daemon's pods");
  });
}

void read_tier_backend(Reader& r, const YAML::Node& n, const std::string& what, TierBackend& out) {
  r.field(n, "backend", [&](const YAML::Node& v) { out.kind = backend_kind(r, v, what + ".backend"); });
  r.field(n, "gvisor", [&](const YAML::Node& v) { read_gvisor(r, v, what + ".gvisor", out.gvisor); });
  r.field(n, "kubernetes",
          [&](const YAML::Node& v) { read_kubernetes(r, v, what + ".kubernetes", out.kubernetes); });
}

void read_placement(Reader& r, const YAML::Node& n, const std::string& what, ToolPlacement& out) {
  r.expect_map(n, what);
  r.only_keys(n, what, {"image", "arch", "gpus", "nodeSelector", "tolerations"});
  r.field(n, "image", [&](const YAML::Node& v) { out.image = r.string(v, what + ".image"); });
  r.field(n, "arch", [&](const YAML::Node& v) {
    out.arch = r.string(v, what + ".arch");
    if (out.arch != "amd64" && out.arch != "arm64")
      fail(v, what + ".arch: expected amd64 or arm64, got '" + out.arch + "'");
  });
  r.field(n, "gpus", [&](const YAML::Node& v) {
    out.gpus = static_cast<std::uint32_t>(r.unsigned_int(v, what + ".gpus", 64));
  });
  r.field(n, "nodeSelector", [&](const YAML::Node& v) {
    r.expect_map(v, what + ".nodeSelector");
    for (const auto& kv : v)
      out.node_selector[r.string(kv.first, what + ".nodeSelector")] =
          r.string(kv.second, what + ".nodeSelector." + kv.first.Scalar());
  });
  r.field(n, "tolerations", [&](const YAML::Node& v) {
    r.items(v, what + ".tolerations", [&](const YAML::Node& t) {
      const std::string at = what + ".tolerations[]";
      r.expect_map(t, at);
      r.only_keys(t, at, {"key", "operator", "value", "effect"});
      Toleration tol;
      r.field(t, "key", [&](const YAML::Node& x) { tol.key = r.string(x, at + ".key"); });
      r.field(t, "value", [&](const YAML::Node& x) { tol.value = r.string(x, at + ".value"); });
      r.field(t, "operator", [&](const YAML::Node& x) {
        tol.op = r.string(x, at + ".operator");
        if (tol.op != "Equal" && tol.op != "Exists")
          fail(x, at + ".operator: expected Equal or Exists, got '" + tol.op + "'");
      });
      r.field(t, "effect", [&](const YAML::Node& x) {
        tol.effect = r.string(x, at + ".effect");
        if (tol.effect != "NoSchedule" && tol.effect != "PreferNoSchedule" && tol.effect != "NoExecute")
          fail(x, at + ".effect: expected NoSchedule, PreferNoSchedule or NoExecute, got '" +
                      tol.effect + "'");
      });
      out.tolerations.push_back(std::move(tol));
    });
  });
}

}  // namespace detail
}  // namespace airlock::policy
