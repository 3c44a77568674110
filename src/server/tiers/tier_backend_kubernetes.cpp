// tiers.<risk>.backend: kubernetes (backend/kubernetes/, docs/kubernetes.md).
#include <unistd.h>

#include "backend/kubernetes/kubernetes_backend.hpp"
#include "server/tiers/tier_backends.hpp"

namespace airlock::server {
namespace {

std::string instance_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + "/" + std::to_string(getpid());
}

// egressProxy: the daemon serves the egress gateway the pods reach (egress/gateway.hpp).
Status serve_egress_gateway(const policy::KubernetesConfig& config, const BackendServices& services,
                            backend::kubernetes::KubernetesOptions& options) {
  if (config.egress_proxy_host.empty()) return {};
  auto gateway = std::make_shared<egress::EgressGateway>();
  if (auto listening = gateway->listen(config.egress_proxy_listen_address, config.egress_proxy_listen_port); !listening)
    return Error::make("kubernetes", "egressProxy.listen: " + listening.error().message);
  gateway->start();
  options.gateway = std::move(gateway);
  options.gateway_route.host = config.egress_proxy_host;
  options.gateway_route.port = config.egress_proxy_port;
  options.gateway_route.cidrs = config.egress_proxy_cidrs;
  options.gateway_route.pod_namespace = config.egress_proxy_pod_namespace;
  options.gateway_route.pod_labels = config.egress_proxy_pod_labels;
  options.forbidden = services.forbidden;
  return {};
}

}  // namespace

Result<std::unique_ptr<backend::Backend>> make_kubernetes_backend(const policy::KubernetesConfig& config,
                                                                  const BackendServices& services) {
  namespace k8s = backend::kubernetes;
  auto endpoint = config.kubeconfig.empty() ? k8s::load_in_cluster() : k8s::load_kubeconfig(config.kubeconfig);
  if (!endpoint) return endpoint.error();
  k8s::KubernetesOptions options;
  options.namespace_name = config.namespace_name;
  options.runtime_class = config.runtime_class;
  options.image = config.image;
  options.gc_interval = config.gc_interval;
  options.instance = instance_name();
  if (auto served = serve_egress_gateway(config, services, options); !served) return served.error();
  return std::unique_ptr<backend::Backend>(
      std::make_unique<k8s::KubernetesBackend>(std::move(*endpoint), std::move(options)));
}

}  // namespace airlock::server
