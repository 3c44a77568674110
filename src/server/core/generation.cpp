#include "server/core/generation.hpp"

namespace airlock::server {

Result<std::shared_ptr<const Generation>> build_generation(
    std::shared_ptr<const policy::Config> config, const pipeline::PipelineDeps& deps) {
  auto authenticator = pipeline::Authenticator::create(config, deps.token_signer, {}, deps.token_revoked);
  if (!authenticator) return authenticator.error();
  auto pipeline = pipeline::build_default(config, deps, *authenticator);
  if (!pipeline) return pipeline.error();
  auto gen = std::make_shared<Generation>();
  gen->config = std::move(config);
  gen->pipeline = std::move(*pipeline);
  gen->authenticator = std::move(*authenticator);
  return std::shared_ptr<const Generation>(std::move(gen));
}

}  // namespace airlock::server
