// tiers.<risk>.backend: kubernetes (backend/kubernetes/, docs/kubernetes.md).
#include <unistd.h>

#include "backend/kubernetes/kubernetes_backend.hpp"
#include "server/tier_backends.hpp"

namespace airlock::server {
namespace {

std::string instance_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + "/" + std::to_string(getpid());
}

}  // namespace

Result<std::unique_ptr<backend::Backend>> make_kubernetes_backend(const policy::KubernetesConfig& config,
                                                                  const BackendServices&) {
  namespace k8s = backend::kubernetes;
  auto endpoint = config.kubeconfig.empty() ? k8s::load_in_cluster() : k8s::load_kubeconfig(config.kubeconfig);
  if (!endpoint) return endpoint.error();
  k8s::KubernetesOptions options;
  options.namespace_name = config.namespace_name;
  options.runtime_class = config.runtime_class;
  options.image = config.image;
  options.gc_interval = config.gc_interval;
  options.instance = instance_name();
  return std::unique_ptr<backend::Backend>(
      std::make_unique<k8s::KubernetesBackend>(std::move(*endpoint), std::move(options)));
}

}  // namespace airlock::server
