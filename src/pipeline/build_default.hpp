// The daemon's pipeline, composed in one place (the stage table in docs/pipeline.md):
//
//   authenticate -> record_start -> authorize -> check_input -> validate_code -> scan_input ->
//   tier -> approval -> credentials -> execute -> scan_output, then (always, when the invocation ends)
//   the finalizers (credentials revoked) and audit
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "creds/broker.hpp"
#include "pipeline/authenticator.hpp"
#include "pipeline/failed_auth.hpp"
#include "pipeline/mcp_tool_caller.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/quotas/quota_book.hpp"
#include "pipeline/stages/approval.hpp"

namespace airlock::audit {
class AuditLog;
}

namespace airlock::pipeline {

// What the stages share with the daemon (and with every configuration it reloads).
struct PipelineDeps {
  audit::AuditLog* audit = nullptr;  // null: no audit stage (`airlock serve --check`)
  FailedAuthLog* failed_auth = nullptr;
  backend::Backend* backend = nullptr;  // runs low and medium tools; null: `serve --check`
  // Tiers that run elsewhere (tiers.<risk>.backend: gvisor, kubernetes), over `backend`'s;
  // and the tiers no backend runs here, with why (named in the tier_unavailable error).
  std::map<policy::Risk, backend::Backend*> tier_backends;
  std::map<policy::Risk, std::string> tier_unavailable;
  std::string runner_dir;
  StageObserver* observer = nullptr;
  // Called for each invocation once it is authenticated (the daemon's invocation store); an
  // error ends the call with storage_unavailable before anything runs.
  std::function<Status(const Invocation&)> record_start;
  // Signs and verifies Airlock's own tokens (null: they are not accepted).
  const identity::TokenSigner* token_signer = nullptr;
  // Credentials: where leases are kept, and the providers for a configuration (null: tools
  // with credentials fail with credential_unavailable, e.g. `serve --check`).
  creds::LeaseStore* leases = nullptr;
  std::function<creds::Providers(const policy::Config&)> make_providers;
  // Airlock's tokens revoked since (creds::RevokedTokens); empty: none is refused as revoked.
  RevokedCheck token_revoked;
  // Calls the tools of the config's MCP servers (the gateway); null: such a tool fails with
  // tool_server_failed.
  McpToolCaller* mcp = nullptr;
  // Keeps a critical call's pending approval (the daemon's approval service); empty: a
  // critical tool is refused (tier_unavailable).
  ApprovalHold hold_for_approval;
  // The daemon's quota book (docs/daemon.md, "Quotas"); null: no quota stage. With
  // `fair_queue`, an admitted call suspends for the daemon's fair queue (stages/quota.hpp).
  std::shared_ptr<QuotaBook> quotas;
  bool fair_queue = false;
};

// Builds every stage from `config` (compiling schemas, the DLP scanner, the code validator).
// A configuration a stage cannot be built from is refused with the reason.
// `authenticator` is the generation's (Authenticator::create with the same config).
Result<std::unique_ptr<const Pipeline>> build_default(std::shared_ptr<const policy::Config> config,
                                                      const PipelineDeps& deps,
                                                      std::shared_ptr<const Authenticator> authenticator);

}  // namespace airlock::pipeline
