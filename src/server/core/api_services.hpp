// What a request may touch, owned by the daemon and handed to every endpoint folder (api/,
// invocations/, approvals/, mcp_server/, console/, identity_endpoints/).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "identity/signer.hpp"
#include "pipeline/invocation.hpp"
#include "pipeline/quotas/quota_book.hpp"
#include "server/core/executor.hpp"
#include "server/core/generation.hpp"
#include "server/core/metrics.hpp"

namespace airlock::audit {
class AuditLog;
}
namespace airlock::creds {
class RevokedTokens;
}
namespace airlock::pipeline {
class FailedAuthLog;
}
namespace airlock::mcp {
class Gateway;
}

namespace airlock::server::console {
class SessionStore;
class PendingLogins;
}

namespace airlock::server {

class InvocationStore;
class ApprovalService;
class InvocationWaiters;
class InvocationChanges;
class WebhookService;
class VerifiedCallers;
class FirstListings;
class GenerationWatch;
class SessionService;
class SessionForwarder;
class McpSessionBook;

struct ApiServices {
  const GenerationSlot* generation = nullptr;  // the current config and pipeline
  InvocationExecutor* executor = nullptr;
  InvocationStore* store = nullptr;
  audit::AuditLog* audit = nullptr;
  const identity::TokenSigner* token_signer = nullptr;  // null: no token endpoint
  creds::RevokedTokens* revoked_tokens = nullptr;  // null (or no signer): no introspect, no revoke
  Metrics* metrics = nullptr;
  const std::atomic<bool>* draining = nullptr;
  // Why the shared database is unreachable (storage.postgres), or nullopt; unset: never.
  std::function<std::optional<std::string>()> storage_problem;
  std::function<std::string()> new_id;
  ApprovalService* approvals = nullptr;   // null: /v1/approvals answers 404
  InvocationWaiters* waiters = nullptr;   // null: ?wait is not honoured
  // Told when an invocation resumes after its approval or ends (MCP's task status
  // notifications listen). Null: nobody is told.
  InvocationChanges* changes = nullptr;
  WebhookService* webhooks = nullptr;     // null: no webhooks (docs/webhooks.md)
  // Told of each kept invocation that ended, with its stored row (the daemon: the webhooks'
  // invocation.completed, WebhookService::announce_completed). Unset: nobody is told.
  std::function<void(const pipeline::Invocation& inv, const nlohmann::json& stored)> completed;
  pipeline::FailedAuthLog* failed_auth = nullptr;  // null: refused console sign-ins are not audited
  std::shared_ptr<pipeline::QuotaBook> quotas;  // null: no quotas; ended calls' CPU is charged here
  VerifiedCallers* verified_callers = nullptr;   // null: every caller waits in intake unverified
  // null: /healthz never says "starting", and tools/list and GET /v1/tools never wait.
  FirstListings* first_listings = nullptr;
  GenerationWatch* generation_watch = nullptr;  // null: MCP clients are never told of changes
  SessionService* sessions = nullptr;  // null: /v1/sessions answers 404 (docs/sessions.md)
  // storage.postgres: requests for sessions other replicas hold go there. Null: they are 404.
  SessionForwarder* session_forwarder = nullptr;
  // The MCP servers' listings of resources and prompts (/mcp's resources/list, prompts/list).
  // Null: none are listed (their reads are invocations, which the pipeline's gateway runs).
  mcp::Gateway* gateway = nullptr;
  // storage.postgres: the MCP sessions every replica shares. Null: each replica's own.
  std::shared_ptr<McpSessionBook> mcp_session_book;
  // storage.postgres: the console's sessions every replica shares. Null: each replica's memory.
  std::shared_ptr<console::SessionStore> console_sessions;
  std::shared_ptr<console::PendingLogins> console_logins;  // its pending OpenID sign-ins, likewise
};

}  // namespace airlock::server
