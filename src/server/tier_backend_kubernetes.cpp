// tiers.<risk>.backend: kubernetes (backend/kubernetes/).
#include "server/tier_backends.hpp"

namespace airlock::server {

Result<std::unique_ptr<backend::Backend>> make_kubernetes_backend(const policy::KubernetesConfig&,
                                                                  const BackendServices&) {
  return Error::make("kubernetes", "the kubernetes backend is not built yet");
}

}  // namespace airlock::server
