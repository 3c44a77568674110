// tiers.<risk>.backend: gvisor (backend/gvisor.hpp).
#include "server/tier_backends.hpp"

namespace airlock::server {

Result<std::unique_ptr<backend::Backend>> make_gvisor_backend(const policy::GvisorConfig&,
                                                              const BackendServices&) {
  return Error::make("gvisor", "the gvisor backend is not built yet");
}

}  // namespace airlock::server
