#include "server/generation.hpp"

#include "pipeline/stages/access.hpp"
#include "pipeline/stages/audit_record.hpp"
#include "pipeline/stages/check_input.hpp"
#include "pipeline/stages/content.hpp"
#include "pipeline/stages/execute.hpp"
#include "pipeline/stages/record_start.hpp"

namespace airlock::server {

namespace {

Result<std::shared_ptr<const Generation>> build(std::shared_ptr<const policy::Config> config,
                                                const PipelineServices& services) {
  auto gen = std::make_shared<Generation>();
  gen->config = std::move(config);
  const policy::Config& cfg = *gen->config;
  auto& p = gen->pipeline;
  p.set_observer(services.observer);
  p.add(std::make_unique<pipeline::AuthenticateStage>(cfg));
  if (services.record_start)
    p.add(std::make_unique<pipeline::RecordStartStage>(services.record_start));
  p.add(std::make_unique<pipeline::AuthorizeStage>(cfg));
  auto check = pipeline::CheckInputStage::create(cfg);
  if (!check) return check.error();
  p.add(std::move(*check));
  auto validate_code = pipeline::ValidateCodeStage::create(cfg);
  if (!validate_code) return validate_code.error();
  p.add(std::move(*validate_code));
  auto scanner = pipeline::make_scanner(cfg);
  if (!scanner) return scanner.error();
  using Direction = pipeline::ScanStage::Direction;
  p.add(std::make_unique<pipeline::ScanStage>(*scanner, Direction::input));
  p.add(std::make_unique<pipeline::TierStage>(cfg));
  pipeline::ExecuteOptions exec_options;
  exec_options.runner_dir = services.runner_dir;
  if (services.backend) exec_options.backends = pipeline::runnable_tiers_on(*services.backend);
  auto execute = pipeline::ExecuteStage::create(cfg, exec_options);
  if (!execute) return execute.error();
  p.add(std::move(*execute));
  p.add(std::make_unique<pipeline::ScanStage>(*scanner, Direction::output));
  if (services.audit)
    p.set_final(std::make_unique<pipeline::AuditStage>(*services.audit, services.failed_auth));
  return std::shared_ptr<const Generation>(std::move(gen));
}

}  // namespace

Result<std::shared_ptr<const Generation>> build_generation(
    std::shared_ptr<const policy::Config> config, const PipelineServices& services) {
  // A stage that throws on a config it should have refused must not take a reloading daemon
  // down: the config is refused instead.
  try {
    return build(std::move(config), services);
  } catch (const std::exception& e) {
    return Error::make("config", std::string("the pipeline could not be built: ") + e.what());
  }
}

}  // namespace airlock::server
