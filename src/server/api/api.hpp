// The HTTP API, without the sockets: a request in, a response out (docs/daemon.md and
// src/server/api/openapi.json). Tests and the fuzz target call it directly.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "identity/signer.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/quota_book.hpp"
#include "policy/config.hpp"
#include "server/daemon/executor.hpp"
#include "server/daemon/generation.hpp"
#include "server/invocations/invocation_store.hpp"
#include "server/daemon/metrics.hpp"
#include "server/http/peer_certificate.hpp"

namespace airlock::audit {
class AuditLog;
}
namespace airlock::creds {
class RevokedTokens;
}
namespace airlock::pipeline {
class FailedAuthLog;
}

namespace airlock::server {

class ApprovalService;
class InvocationWaiters;
class WebhookService;
class VerifiedCallers;
class FirstListings;

struct HttpRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string peer;  // the client's IP address ("" when unknown)
  // Over TLS with server.tls.clientCAFile: the certificate the client presented and the
  // handshake verified against that CA. None: no TLS, or no certificate presented.
  std::optional<PeerCertificate> client_certificate;
};

// The body of a response written while it is produced (Server-Sent Events on /mcp). Usable
// from any thread; writes are sent in order.
class BodyWriter {
 public:
  virtual ~BodyWriter() = default;
  // False once the client has gone (nothing more will be sent).
  virtual bool write(std::string bytes) = 0;
  // Ends the body; the connection is kept alive if the request allowed it.
  virtual void finish() = 0;
  // Called once if the client goes away before finish() (at once if it already has).
  virtual void on_client_gone(std::function<void()> callback) = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Set: `body` is ignored; the server sends the head (chunked), then calls `stream` once
  // with the writer of the body. Not read timeout bound.
  std::function<void(std::shared_ptr<BodyWriter>)> stream;
};

// Everything a request may touch, owned by the daemon.
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
  WebhookService* webhooks = nullptr;     // null: no webhooks (docs/webhooks.md)
  pipeline::FailedAuthLog* failed_auth = nullptr;  // null: refused console sign-ins are not audited
  std::shared_ptr<pipeline::QuotaBook> quotas;  // null: no quotas; ended calls' CPU is charged here
  VerifiedCallers* verified_callers = nullptr;   // null: every caller waits in intake unverified
  const FirstListings* first_listings = nullptr;  // null: /healthz never says "starting"
};

class TokenIntrospection;
class McpServer;
class McpHttp;
namespace console {
class Console;
}

class Api {
 public:
  explicit Api(ApiServices services);
  // `reply` is called exactly once, perhaps later and from a worker thread.
  void handle(const HttpRequest& request, std::function<void(HttpResponse)> reply) const;
  // The MCP server behind /mcp, for the other transport (`airlock mcp`, stdio).
  McpServer& mcp() const { return *mcp_; }
  // The web console behind /console (its sessions, for tests).
  console::Console& console() const { return *console_; }

 private:
  void invoke(const HttpRequest& request, const std::string& tool, std::function<void(HttpResponse)> reply) const;
  void token(const HttpRequest& request, std::function<void(HttpResponse)> reply) const;
  void verify_audit(std::function<void(HttpResponse)> reply) const;
  void invocation(const std::string& target, const std::string& id, const pipeline::Caller& caller, bool reads_all,
                  std::function<void(HttpResponse)> reply) const;
  void handle_mcp(const HttpRequest& request, const std::vector<std::string>& parts,
                  std::function<void(HttpResponse)> reply) const;
  void handle_v1(const HttpRequest& request, const std::vector<std::string>& parts,
                 std::function<void(HttpResponse)> reply) const;

  ApiServices s_;
  std::shared_ptr<const TokenIntrospection> introspection_;  // POST /v1/token/{introspect,revoke}
  std::shared_ptr<McpServer> mcp_;
  std::shared_ptr<const McpHttp> mcp_http_;  // /mcp and /.well-known/oauth-protected-resource
  std::shared_ptr<console::Console> console_;  // /console (server/console/console.hpp)
};

HttpResponse json_response(int status, const nlohmann::json& body);
HttpResponse error_response(int status, const std::string& kind, const std::string& message);
// A refusal of the access decision (401, 403, 404) outside an invocation.
HttpResponse refusal_response(const pipeline::InvocationError& error);

// The value of a `tool` metrics label: configured names only, never request text (a caller
// without a key must not be able to add series to /metrics).
inline constexpr const char* kUnknownToolLabel = "(unknown)";
std::string tool_label(const policy::Config& config, const std::string& name);

// The OpenAPI 3.1 document the server serves at /openapi.json.
const std::string& openapi_document();

}  // namespace airlock::server
