#include "pipeline/build_default.hpp"

#include "audit/audit_log.hpp"

#include "pipeline/stages/access.hpp"
#include "pipeline/stages/approval.hpp"
#include "pipeline/stages/audit_record.hpp"
#include "pipeline/stages/check_input.hpp"
#include "pipeline/stages/content.hpp"
#include "pipeline/stages/credentials.hpp"
#include "pipeline/stages/execute.hpp"
#include "pipeline/stages/quota.hpp"
#include "pipeline/stages/record_start.hpp"

namespace airlock::pipeline {
namespace {

// Why no backend runs the critical tier here ("" when one does): as the execute stage sees it.
std::string critical_unavailable(const PipelineDeps& deps) {
  if (auto b = deps.tier_backends.find(policy::Risk::critical); b != deps.tier_backends.end() && b->second) return "";
  if (deps.backend && runnable_tiers_on(*deps.backend).count(policy::Risk::critical)) return "";
  if (auto why = deps.tier_unavailable.find(policy::Risk::critical); why != deps.tier_unavailable.end())
    return why->second;
  return "no backend runs that tier here";
}

Result<std::unique_ptr<const Pipeline>> build(std::shared_ptr<const policy::Config> config,
                                              const PipelineDeps& deps,
                                              std::shared_ptr<const Authenticator> authenticator) {
  auto p = std::make_unique<Pipeline>(config);
  const policy::Config& cfg = *config;
  p->set_observer(deps.observer);
  p->add(std::make_unique<AuthenticateStage>(std::move(authenticator)));
  if (deps.record_start) p->add(std::make_unique<RecordStartStage>(deps.record_start));
  p->add(std::make_unique<AuthorizeStage>());
  if (deps.quotas) p->add(std::make_unique<QuotaStage>(deps.quotas, deps.fair_queue));
  auto check = CheckInputStage::create(cfg);
  if (!check) return check.error();
  p->add(std::move(*check));
  auto validate_code = ValidateCodeStage::create(cfg);
  if (!validate_code) return validate_code.error();
  p->add(std::move(*validate_code));
  auto scanner = make_scanner(cfg);
  if (!scanner) return scanner.error();
  p->set_scanner(*scanner);
  p->add(std::make_unique<ScanStage>(*scanner, ScanStage::Direction::input));
  p->add(std::make_unique<TierStage>());
  p->add(std::make_unique<ApprovalStage>(deps.hold_for_approval, critical_unavailable(deps)));
  std::shared_ptr<creds::Broker> broker;
  if (deps.leases && deps.make_providers)
    broker = std::make_shared<creds::Broker>(*deps.leases, deps.make_providers(cfg));
  p->set_credential_broker(broker);
  audit::AuditLog* audit = deps.audit;
  auto credentials = CredentialsStage::create(std::move(broker), [audit](std::string_view value) {
    return audit ? audit->credential_fingerprint(value) : std::string();
  });
  if (!credentials) return credentials.error();
  p->add(std::move(*credentials));
  ExecuteOptions exec_options;
  exec_options.runner_dir = deps.runner_dir;
  if (deps.backend) exec_options.backends = runnable_tiers_on(*deps.backend);
  for (const auto& [risk, b] : deps.tier_backends) exec_options.backends[risk] = b;
  exec_options.unavailable = deps.tier_unavailable;
  exec_options.mcp = deps.mcp;
  auto execute = ExecuteStage::create(cfg, exec_options);
  if (!execute) return execute.error();
  p->add(std::move(*execute));
  p->add(std::make_unique<ScanStage>(*scanner, ScanStage::Direction::output));
  if (deps.audit) p->set_final(std::make_unique<AuditStage>(*deps.audit, deps.failed_auth));
  return std::unique_ptr<const Pipeline>(std::move(p));
}

}  // namespace

Result<std::unique_ptr<const Pipeline>> build_default(std::shared_ptr<const policy::Config> config,
                                                      const PipelineDeps& deps,
                                                      std::shared_ptr<const Authenticator> authenticator) {
  // A stage that throws on a config it should have refused must not take a reloading daemon
  // down: the config is refused instead.
  try {
    return build(std::move(config), deps, std::move(authenticator));
  } catch (const std::exception& e) {
    return Error::make("config", std::string("the pipeline could not be built: ") + e.what());
  }
}

}  // namespace airlock::pipeline
