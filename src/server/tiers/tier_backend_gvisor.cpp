// tiers.<risk>.backend: gvisor (backend/gvisor_backend.hpp).
#include <filesystem>

#include "backend/gvisor_backend.hpp"
#include "server/tiers/tier_backends.hpp"

namespace airlock::server {

Result<std::unique_ptr<backend::Backend>> make_gvisor_backend(const policy::GvisorConfig& config,
                                                              const BackendServices& services) {
  if (services.data_dir.empty())
    return Error::make("gvisor", "the gvisor backend keeps its runs under storage.dataDir, "
                                 "which is not set");
  backend::GvisorOptions options;
  options.runsc = config.runsc;
  options.platform = config.platform;
  std::error_code ec;
  options.state_dir = (std::filesystem::absolute(services.data_dir, ec) / "gvisor").string();
  options.forbidden = services.forbidden;
  auto made = backend::GvisorBackend::create(options);
  if (!made) return made.error();
  return std::unique_ptr<backend::Backend>(std::move(*made));
}

}  // namespace airlock::server
