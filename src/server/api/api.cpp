// The router: each request of /v1/*, /mcp, /console and /healthz to the folder that answers it,
// and the endpoints that need no folder of their own (health, metrics, the tool list, the audit
// log and its proofs, an invocation by id).
#include "server/api/api.hpp"

#include "audit/audit_log.hpp"
#include "common/split.hpp"
#include "audit/log_reader.hpp"
#include "pipeline/stages/access.hpp"
#include "server/approvals/approvals.hpp"
#include "server/approvals/approvals_api.hpp"
#include "server/core/first_listings.hpp"
#include "server/invocations/invocations_api.hpp"
#include "server/console/console.hpp"
#include "pipeline/failed_auth.hpp"
#include "audit/verify.hpp"
#include "server/core/invocation_response.hpp"
#include "server/invocations/invocation_waiters.hpp"
#include "common/units.hpp"
#include "server/invocations/invocation_runner.hpp"
#include "server/mcp_server/mcp_http.hpp"
#include "server/mcp_server/mcp_server.hpp"
#include "server/sessions/sessions_api.hpp"
#include "server/identity_endpoints/token_exchange.hpp"
#include "server/identity_endpoints/token_introspection.hpp"
#include "server/http/http_server.hpp"

namespace airlock::server {

extern const char* const kOpenApiDocument;  // generated from openapi.json

namespace {

// Splits "/v1/tools/x/invoke?y" into {"v1", "tools", "x", "invoke"} (the query is ignored).
std::vector<std::string> path_segments(const std::string& target) {
  return split_nonempty(std::string_view(target).substr(0, target.find('?')), '/');
}

nlohmann::json tool_summary(const policy::ToolConfig& t) {
  return {{"name", t.name}, {"description", t.description}, {"risk", policy::risk_name(t.risk)}};
}

}  // namespace

const std::string& openapi_document() {
  static const std::string doc = kOpenApiDocument;
  return doc;
}

RequestHandler Api::handler() const {
  return [this](const HttpRequest& request, std::function<void(HttpResponse)> reply) {
    handle(request, std::move(reply));
  };
}

std::string handle_raw_request(const Api& api, const std::string& bytes, std::uint64_t max_body_bytes) {
  return handle_raw_request(api.handler(), bytes, max_body_bytes);
}

namespace {

// HEAD is answered like GET (the HTTP layer sends the head without the body).
bool is_get(const HttpRequest& r) {
  return r.method == "GET" || r.method == "HEAD";
}

// /healthz once it is neither draining nor without its database: 503 "starting" while an MCP
// server configured at start has not been listed once (its tools would be missing from a
// tools/list), naming those still pending; then 200, naming the servers whose first listing
// failed (the daemon serves without their tools: the failure is theirs, named, not a restart).
HttpResponse health_of_first_listings(const FirstListings* listings) {
  if (!listings) return json_response(200, {{"status", "ok"}});
  const auto report = listings->report();
  const nlohmann::json failed = failed_servers(report);
  if (!report.pending.empty()) {
    auto resp = json_response(503, {{"status", "starting"}, {"mcp_servers_pending", report.pending},
                                    {"mcp_servers_failed", failed}});
    resp.headers.emplace_back("Retry-After", "1");
    return resp;
  }
  nlohmann::json body = {{"status", "ok"}};
  if (!failed.empty()) body["mcp_servers_failed"] = failed;
  return json_response(200, body);
}

HttpResponse use_get() {
  auto resp = error_response(405, "method_not_allowed", "use GET or HEAD");
  resp.headers.emplace_back("Allow", "GET, HEAD");
  return resp;
}

}  // namespace

Api::Api(ApiServices services)
    : s_(std::move(services)),
      mcp_(std::make_shared<McpServer>(s_)),
      mcp_http_(std::make_shared<McpHttp>(mcp_, s_.generation)) {
  if (s_.token_signer && s_.revoked_tokens)
    if (auto made = TokenIntrospection::create(*s_.token_signer, *s_.revoked_tokens)) introspection_ = std::move(*made);
  console_ = std::make_shared<console::Console>(
      *s_.generation, [this](const HttpRequest& r, std::function<void(HttpResponse)> reply) { handle(r, std::move(reply)); },
      [failed = s_.failed_auth](const std::string& peer) {
        if (failed) failed->note(peer.empty() ? "unknown" : peer, console::kSignInLabel, "invalid_key");
      },
      console::SessionOptions{}, console::Console::Shared{s_.console_sessions, s_.console_logins});
}

void Api::handle(const HttpRequest& r, std::function<void(HttpResponse)> reply) const {
  const auto parts = path_segments(r.target);
  const bool get = is_get(r);

  if (parts.size() == 1 && parts[0] == "healthz") {
    if (!get) return reply(use_get());
    if (s_.draining && s_.draining->load()) {
      auto resp = json_response(503, {{"status", "draining"}});
      resp.headers.emplace_back("Retry-After", "5");
      return reply(resp);
    }
    if (auto problem = s_.storage_problem ? s_.storage_problem() : std::nullopt) {
      auto resp = json_response(503, {{"status", "storage_unavailable"}, {"message", *problem}});
      resp.headers.emplace_back("Retry-After", "1");
      return reply(resp);
    }
    return reply(health_of_first_listings(s_.first_listings));
  }
  if (parts.size() == 1 && parts[0] == "metrics") {
    if (!get) return reply(use_get());
    HttpResponse resp;
    resp.content_type = "text/plain; version=0.0.4; charset=utf-8";
    resp.body = s_.metrics->exposition();
    return reply(resp);
  }
  if (parts.size() == 1 && parts[0] == "openapi.json") {
    if (!get) return reply(use_get());
    HttpResponse resp;
    resp.body = openapi_document();
    return reply(resp);
  }
  if (parts.size() == 2 && parts[0] == ".well-known" && parts[1] == "jwks.json" && s_.token_signer) {
    if (!get) return reply(use_get());
    return reply(jwks_response(*s_.token_signer));
  }
  if (is_mcp_path(parts) || is_resource_metadata_path(parts)) return handle_mcp(r, parts, std::move(reply));
  if (console::is_console_path(parts)) return console_->handle(r, parts, std::move(reply));
  if (parts.empty() || parts[0] != "v1") return reply(error_response(404, "not_found", "no such endpoint"));
  // POST /v1/token: RFC 8693 token exchange (server/identity_endpoints/token_exchange.hpp).
  if (parts.size() == 2 && parts[1] == "token" && s_.token_signer) {
    if (r.method != "POST") return reply(error_response(405, "method_not_allowed", "use POST"));
    return token(r, std::move(reply));
  }
  // POST /v1/token/introspect (RFC 7662), /v1/token/revoke (RFC 7009): token_introspection.hpp.
  if (parts.size() == 3 && parts[1] == "token" && (parts[2] == "introspect" || parts[2] == "revoke") && introspection_) {
    if (r.method != "POST") return reply(error_response(405, "method_not_allowed", "use POST"));
    const auto generation = s_.generation->load();
    return reply(parts[2] == "introspect" ? introspection_->introspect(r, *generation->authenticator)
                                          : introspection_->revoke(r, *generation->authenticator));
  }
  // POST /v1/tools/{name}/invoke: an invocation (the pipeline authenticates it).
  if (parts.size() == 4 && parts[1] == "tools" && parts[3] == "invoke") {
    if (r.method != "POST") return reply(error_response(405, "method_not_allowed", "use POST"));
    return invoke(r, parts[2], std::move(reply));
  }
  if (is_approvals_path(parts)) return handle_approvals(s_, r, parts, reply);
  if (is_sessions_path(parts) && s_.sessions) return handle_sessions(s_, *s_.sessions, r, parts, std::move(reply));
  handle_v1(r, parts, std::move(reply));
}

// /mcp and its protected resource metadata, unless server.mcp.enabled is false.
void Api::handle_mcp(const HttpRequest& r, const std::vector<std::string>& parts,
                     std::function<void(HttpResponse)> reply) const {
  if (!s_.generation->load()->config->server.mcp.enabled)
    return reply(error_response(404, "not_found", "the MCP endpoint is disabled (server.mcp.enabled)"));
  if (is_mcp_path(parts)) return mcp_http_->handle(r, std::move(reply));
  if (!is_get(r)) return reply(use_get());
  reply(mcp_http_->resource_metadata(r));
}

namespace {

// ?wait=30s: how long GET /v1/invocations/{id} may hold an unfinished invocation's answer
// (at most 60 s; 0 without one).
Result<std::chrono::milliseconds> wait_of(const std::string& target) {
  const auto q = target.find('?');
  if (q == std::string::npos) return std::chrono::milliseconds(0);
  for (const auto& param : split_nonempty(std::string_view(target).substr(q + 1), '&')) {
    if (param.rfind("wait=", 0) != 0) continue;
    auto d = parse_duration(param.substr(5));
    if (!d || *d < std::chrono::nanoseconds(0) || *d > std::chrono::seconds(60))
      return Error::make("invalid_input", "wait: a duration up to 60s (\"30s\"), got '" + param.substr(5) + "'");
    return std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  }
  return std::chrono::milliseconds(0);
}

}  // namespace

// GET /v1/tools: what the caller may invoke, once every MCP server configured at start has been
// listed or has failed (at most server.mcp.firstListingWait), under the generation current then;
// the servers whose tools it lacks are named (mcp_servers_pending, mcp_servers_failed).
void Api::list_tools(const pipeline::Caller& caller, std::function<void(HttpResponse)> reply) const {
  auto answer = [slot = s_.generation, listings = s_.first_listings, caller, reply] {
    const auto generation = slot->load();
    const auto& config = *generation->config;
    const pipeline::Actor* actor = caller.actor ? &*caller.actor : nullptr;
    const pipeline::Subject* subject = caller.subject ? &*caller.subject : nullptr;
    auto tools = nlohmann::json::array();
    for (const auto& t : config.tools)
      if (!(t.mcp && t.mcp->is_content()) &&  // a gateway server's resources and prompts: by name
          !pipeline::may_invoke(config, actor, subject, t.name, caller.scope).refusal)
        tools.push_back(tool_summary(t));
    nlohmann::json body = {{"tools", tools}};
    if (listings) {
      const auto report = listings->report();
      if (!report.pending.empty()) body["mcp_servers_pending"] = report.pending;
      if (!report.failed.empty()) body["mcp_servers_failed"] = failed_servers(report);
    }
    reply(json_response(200, body));
  };
  if (!s_.first_listings) return answer();
  s_.first_listings->when_done(s_.generation->load()->config->server.mcp.first_listing_wait, std::move(answer));
}

// The GET endpoints under /v1: each needs a valid credential.
void Api::handle_v1(const HttpRequest& r, const std::vector<std::string>& parts,
                    std::function<void(HttpResponse)> reply) const {
  const auto generation = s_.generation->load();  // the config this request is answered under
  const policy::Config& config = *generation->config;
  auto who = authenticate_request(*generation->authenticator, r);
  if (auto* refused = std::get_if<HttpResponse>(&who)) return reply(std::move(*refused));
  const auto& caller = std::get<pipeline::Caller>(who);
  const pipeline::Actor* actor = caller.actor ? &*caller.actor : nullptr;
  const pipeline::Subject* subject = caller.subject ? &*caller.subject : nullptr;
  if (!is_get(r)) return reply(use_get());

  if (parts.size() == 2 && parts[1] == "tools") return list_tools(caller, std::move(reply));
  if (parts.size() == 3 && parts[1] == "tools") {
    if (auto decided = pipeline::may_invoke(config, actor, subject, parts[2], caller.scope); decided.refusal)
      return reply(refusal_response(*decided.refusal));
    const auto* tool = config.find_tool(parts[2]);
    auto detail = tool_summary(*tool);
    detail["inputSchema"] = tool->input_schema;
    detail["outputSchema"] = tool->output_schema ? *tool->output_schema : nlohmann::json();
    return reply(json_response(200, detail));
  }
  if ((parts.size() == 2 || parts.size() == 3) && parts[1] == "invocations") {
    const bool reads_all =
        access::decide(config, actor, subject, policy::Action::read_all_invocations, "").allowed;
    if (parts.size() == 2) return reply(list_invocations(*s_.store, r.target, caller, reads_all));
    return invocation(r.target, parts[2], caller, reads_all, std::move(reply));
  }
  if (parts.size() >= 3 && parts[1] == "audit") {
    auto decided = access::decide(config, actor, subject, policy::Action::read_audit, "");
    if (!decided.allowed) return reply(error_response(403, "forbidden", decided.reason));
  }
  if (parts.size() == 3 && parts[1] == "audit" && parts[2] == "checkpoint") {
    auto cp = s_.audit->checkpoint();
    if (!cp) return reply(error_response(500, "audit", cp.error().message));
    return reply(json_response(200, audit::checkpoint_envelope(*cp, s_.audit->public_key())));
  }
  if (parts.size() == 3 && parts[1] == "audit" && parts[2] == "verify") return verify_audit(reply);
  if (parts.size() == 4 && parts[1] == "audit" && parts[2] == "proof") {
    std::uint64_t index = 0;
    if (parts[3].empty() || parts[3].size() > 19 || parts[3].find_first_not_of("0123456789") != std::string::npos)
      return reply(error_response(400, "invalid_input", "the index must be a whole number"));
    index = std::stoull(parts[3]);
    auto reader = audit::LogReader::open(s_.audit->location());
    if (!reader) return reply(error_response(500, "audit", reader.error().message));
    auto proof = audit::prove_record(*reader, index);
    if (!proof) return reply(error_response(404, "not_found", proof.error().message));
    return reply(json_response(200, *proof));
  }
  return reply(error_response(404, "not_found", "no such endpoint"));
}

namespace {

// An invocation's row as GET /v1/invocations/{id} shows it, when the caller may read it.
// With the approval it needed, if any: who decided it, when and why (docs/approvals.md).
std::optional<nlohmann::json> readable_invocation(InvocationStore& store, ApprovalService* approvals,
                                                  const std::string& id, const pipeline::Caller& caller,
                                                  bool reads_all) {
  auto owner = store.owner(id);
  if (!owner || (!reads_all && !owns_invocation(caller, *owner))) return std::nullopt;
  auto stored = store.get(id);
  if (!stored) return stored;
  stored->erase("principal");
  if (auto approval = approvals ? approvals->of_invocation(id) : std::nullopt) (*stored)["approval"] = std::move(*approval);
  return stored;
}

HttpResponse invocation_reply(const std::optional<nlohmann::json>& stored, const std::string& id) {
  if (!stored) return error_response(404, "not_found", "no invocation " + id + " of yours");
  return json_response(200, *stored);
}

}  // namespace

// GET /v1/invocations/{id}[?wait=30s]: the caller's own (or any, with read_all_invocations).
// A long poll checks again when it answers.
void Api::invocation(const std::string& target, const std::string& id, const pipeline::Caller& caller,
                     bool reads_all, std::function<void(HttpResponse)> reply) const {
  auto stored = readable_invocation(*s_.store, s_.approvals, id, caller, reads_all);
  if (!stored) return reply(invocation_reply(stored, id));
  auto wait = wait_of(target);
  if (!wait) return reply(error_response(400, "invalid_input", wait.error().message));
  if (*wait > std::chrono::milliseconds(0) && is_unfinished(*stored) && s_.waiters) {
    // Answered when the invocation finishes, or with what is stored at the deadline.
    auto answer = [store = s_.store, approvals = s_.approvals, id, caller, reads_all, reply] {
      reply(invocation_reply(readable_invocation(*store, approvals, id, caller, reads_all), id));
    };
    if (s_.waiters->add(id, InvocationWaiters::Clock::now() + *wait, answer)) {
      if (auto again = s_.store->get(id); again && !is_unfinished(*again)) s_.waiters->notify(id);
      return;
    }
  }
  reply(invocation_reply(stored, id));
}

namespace {

// Server-Timing (milliseconds per stage): where the time of an invocation went.
std::string server_timing(const pipeline::Invocation& inv) {
  std::string timing;
  for (const auto& t : inv.stage_times) {
    char dur[32];
    std::snprintf(dur, sizeof dur, "%.3f", t.ms);
    timing += (timing.empty() ? "" : ", ") + t.stage + ";dur=" + dur;
  }
  return timing;
}

// The HTTP answer of a finished invocation (its row and metrics are the runner's).
HttpResponse invocation_answer(const pipeline::Invocation& inv) {
  HttpResponse resp = json_response(http_status(inv), to_response(inv));
  if (auto timing = server_timing(inv); !timing.empty()) resp.headers.emplace_back("Server-Timing", timing);
  if (inv.error && inv.error->kind == pipeline::ErrorKind::unauthenticated)
    resp.headers.emplace_back("WWW-Authenticate", "Bearer");
  if (inv.error && inv.error->kind == pipeline::ErrorKind::quota_exceeded)
    resp.headers.emplace_back("Retry-After", std::to_string(inv.error->retry_after_seconds));
  if (inv.error && inv.error->kind == pipeline::ErrorKind::storage_unavailable)
    resp.headers.emplace_back("Retry-After", "1");  // the stores reconnect at most once a second
  return resp;
}

}  // namespace

// GET /v1/audit/verify on a worker: the whole log verified from its records up, as `airlock
// audit verify` does, under the daemon's own key.
void Api::verify_audit(std::function<void(HttpResponse)> reply) const {
  const audit::LogLocation location = s_.audit->location();
  const audit::PublicKey key = s_.audit->public_key();
  bool accepted = s_.executor->submit([location, key, reply] {
    auto reader = audit::LogReader::open(location);
    if (!reader) return reply(error_response(500, "audit", reader.error().message));
    audit::VerifyOptions options;
    options.expected_key = key;
    auto report = audit::verify_log(*reader, options);
    if (!report) return reply(error_response(500, "audit", report.error().message));
    nlohmann::json body = audit::to_json(*report);
    if (!report->intact()) body["headline"] = audit::describe(report->findings.front());
    reply(json_response(200, body));
  });
  if (!accepted) {
    auto resp = error_response(429, "queue_full", "too many requests are queued; retry later");
    resp.headers.emplace_back("Retry-After", "1");
    reply(resp);
  }
}

// POST /v1/token on a worker: verifying the user's token may fetch its issuer's keys.
void Api::token(const HttpRequest& r, std::function<void(HttpResponse)> reply) const {
  auto generation = s_.generation->load();
  const identity::TokenSigner* signer = s_.token_signer;
  bool accepted = s_.executor->submit([generation, signer, r, reply] {
    reply(exchange_token(r, *generation->authenticator, *signer));
  });
  if (!accepted) {
    s_.metrics->count("airlock_rejected_total", {{"reason", "queue_full"}});
    auto resp = error_response(429, "queue_full", "too many requests are queued; retry later");
    resp.headers.emplace_back("Retry-After", "1");
    reply(resp);
  }
}

void Api::invoke(const HttpRequest& r, const std::string& tool, std::function<void(HttpResponse)> reply) const {
  InvocationRequest request{tool, r.headers, r.client_certificate, r.body, r.peer, nullptr};
  auto queue_full = [reply] {
    auto resp = error_response(429, "queue_full", "too many invocations are queued; retry later");
    resp.headers.emplace_back("Retry-After", "1");
    reply(resp);
  };
  auto rejected = run_invocation(
      s_, std::move(request), [reply](const Generation&, const pipeline::Invocation& inv) { reply(invocation_answer(inv)); },
      queue_full);
  if (rejected == Rejection::draining) {
    auto resp = error_response(503, "draining", "the server is shutting down");
    resp.headers.emplace_back("Retry-After", "5");
    reply(resp);
  } else if (rejected == Rejection::queue_full) {
    queue_full();
  }
}

}  // namespace airlock::server
