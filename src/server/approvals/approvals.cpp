#include "server/approvals/approvals.hpp"

#include <iostream>

#include "access/decide.hpp"
#include "audit/audit_log.hpp"
#include "audit/jcs.hpp"
#include "common/utc_time.hpp"
#include "pipeline/decision_basis.hpp"
#include "pipeline/invocation_state.hpp"
#include "pipeline/quotas/quota_book.hpp"
#include "pipeline/stages/audit_record.hpp"
#include "server/core/invocation_response.hpp"
#include "server/invocations/invocation_runner.hpp"
#include "server/invocations/invocation_changes.hpp"
#include "server/invocations/invocation_store.hpp"
#include "server/invocations/invocation_waiters.hpp"
#include "server/approvals/webhooks.hpp"

namespace airlock::server {
namespace {

using nlohmann::json;

// A credential by what it grants: the provider, the audience and scopes (or grants).
json credential_summary(const policy::CredentialSpec& c) {
  json j = {{"env", c.env}, {"provider", std::string(c.provider())}};
  if (const auto* t = std::get_if<policy::TokenCredential>(&c.source)) {
    j["audience"] = t->audience;
    j["scopes"] = t->scopes;
  } else if (const auto* p = std::get_if<policy::PostgresCredential>(&c.source)) {
    j["server"] = p->server;
    j["grant"] = p->grant;
  } else if (const auto* o = std::get_if<policy::OAuthExchangeCredential>(&c.source)) {
    j["audience"] = o->audience;
    j["scopes"] = o->scopes;
  } else if (const auto* s = std::get_if<policy::SecretCredential>(&c.source)) {
    j["secret"] = s->name;
  }
  if (c.inject) j["injected_into"] = c.inject->host + ":" + std::to_string(c.inject->port);
  return j;
}

// `text` without a UTF-8 sequence cut at its end.
std::string whole_characters(std::string text) {
  for (std::size_t back = 1; back <= 4 && back <= text.size(); ++back) {
    const auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need > back) text.resize(text.size() - back);
    break;
  }
  return text;
}

// The first bytes of the arguments' JSON for a list (cut on a character) and its size, as
// stored with the approval.
void add_preview(json& j, const ApprovalRecord& r) {
  j["arguments_preview"] = whole_characters(r.arguments_preview.substr(0, kArgumentsPreviewBytes));
  j["arguments_bytes"] = r.arguments_bytes;
}

// The arguments, and their canonical JSON text (RFC 8785, integers with all their digits):
// the very text arguments_sha256 is the SHA-256 of. A console shows that text, never a value
// a JavaScript engine parsed (which rounds 9007199254740993 to 9007199254740992).
void add_arguments(json& j, const ApprovalRecord& r) {
  const json arguments = r.invocation.is_object() ? r.invocation.value("arguments", json::object()) : json::object();
  auto text = audit::jcs(arguments);
  j["arguments_json"] = text ? json(*text) : json();  // stored arguments are valid JSON: jcs holds them
  j["arguments"] = arguments;
  // The agent's stated reason for the call (DLP-redacted like the arguments), or null.
  const std::string reason = r.invocation.is_object() ? r.invocation.value("reason", "") : "";
  j["reason"] = reason.empty() ? json() : json(reason);
}

json decision_json(const ApprovalDecision& d) {
  return {{"approver", {{"issuer", d.approver_issuer}, {"sub", d.approver_sub}}},
          {"relayed_by", d.relayed_by.empty() ? json() : json(d.relayed_by)},
          {"decision", d.verdict},
          {"reason", d.reason},
          {"at", rfc3339_ms(d.at_ms)}};
}

// The person who decides: the subject of a token from a configured issuer (the bearer, or
// relayed by an agent in Airlock-Subject-Token). Airlock's own tokens and agents alone do not.
Result<ApprovalDecision> approver_of(const pipeline::Caller& caller) {
  if (!caller.subject || caller.user_token.empty())
    return Error::make("forbidden",
                       "a decision is a person's: send your own token from a configured issuer as the "
                       "bearer, or have an agent relay it in Airlock-Subject-Token");
  ApprovalDecision d;
  d.approver_issuer = caller.subject->issuer;
  d.approver_sub = caller.subject->sub;
  d.relayed_by = caller.actor ? caller.actor->principal : "";
  return d;
}

// Separation of duties: neither the user nor the agent that asked may decide.
std::optional<std::string> own_request(const ApprovalRecord& r, const pipeline::Caller& caller) {
  if (caller.subject && !r.requester_sub.empty() && caller.subject->issuer == r.requester_issuer &&
      caller.subject->sub == r.requester_sub)
    return "user " + r.requester_sub + " asked for this call and may not decide it (separation of duties)";
  if (caller.actor && caller.actor->principal == r.requester_principal)
    return "agent " + r.requester_principal + " asked for this call and may not decide it, for any user "
           "(separation of duties)";
  return std::nullopt;
}

bool may_approve(const policy::Config& config, const pipeline::Caller& caller, const std::string& tool) {
  if (!caller.subject || caller.user_token.empty()) return false;
  return access::decide(config, nullptr, &*caller.subject, policy::Action::approve, tool).allowed;
}

bool is_requester(const ApprovalRecord& r, const pipeline::Caller& caller) {
  if (caller.actor) return caller.actor->principal == r.requester_principal;
  return caller.subject && caller.subject->issuer == r.requester_issuer && caller.subject->sub == r.requester_sub;
}

// What the approver needs besides the arguments: the validator's findings, what DLP
// redacted, the egress the tool may reach and the credentials it would get (by scope; never a
// value), as the current configuration says.
json tool_context(const ApprovalRecord& r, const policy::Config& config) {
  json egress = json::array(), credentials = json::array(), risk, description, input_schema;
  if (const auto* tool = config.find_tool(r.tool)) {
    risk = policy::risk_name(tool->risk);
    description = tool->description;
    input_schema = tool->input_schema;
    for (const auto& a : tool->network.allow)
      egress.push_back({{"host", a.host}, {"port", a.port ? json(*a.port) : json("*")}});
    for (const auto& f : tool->network.forwards)
      egress.push_back({{"host", f.host}, {"port", f.port}, {"forward", f.listen_port}});
    for (const auto& c : tool->credentials) credentials.push_back(credential_summary(c));
  }
  const json& inv = r.invocation.is_object() ? r.invocation : json::object();
  return {{"risk", std::move(risk)},
          {"description", std::move(description)},
          {"input_schema", std::move(input_schema)},
          {"validator_findings", inv.value("validator_findings", json::array())},
          {"validator_findings_total", inv.value("validator_findings_total", 0)},
          {"redactions", inv.value("redactions", json::array())},
          {"egress", std::move(egress)},
          {"credentials", std::move(credentials)}};
}

// Why it expired when the user's token bounded it (the approval stage): the credential the
// tool exchanges that token for could not be had after it.
std::string expiry_cause(const ApprovalRecord& r) {
  const json suspended = r.invocation.is_object() ? r.invocation.value("suspended", json()) : json();
  const json data = suspended.is_object() ? suspended.value("data", json::object()) : json::object();
  if (!data.is_object() || !data.value("expires_with_user_token", false)) return "";
  return " (the user's token, which the tool's oauth-exchange credential exchanges, expired then: the call "
         "could not have had its credential after it)";
}

ApprovalAnswer answer_error(int status, const std::string& kind, const std::string& message) {
  return {status, {{"error", {{"kind", kind}, {"message", message}}}}};
}

}  // namespace

json approval_json(const ApprovalRecord& r, bool with_arguments) {
  json decisions = json::array();
  for (const auto& d : r.decisions) decisions.push_back(decision_json(d));
  json j = {{"id", r.id},
            {"invocation_id", r.invocation_id},
            {"tool", r.tool},
            {"status", r.state},
            {"config_version", r.config_version},
            {"decision_basis_sha256", r.decision_basis_sha256.empty() ? json() : json(r.decision_basis_sha256)},
            {"arguments_sha256", r.arguments_sha256},
            {"approvers_required", r.approvers_required},
            {"approvals", r.approvals()},
            {"requested_by",
             {{"principal", r.requester_principal.empty() ? json() : json(r.requester_principal)},
              {"subject", r.requester_sub.empty() ? json()
                                                  : json{{"issuer", r.requester_issuer}, {"sub", r.requester_sub}}}}},
            {"requested_at", rfc3339_ms(r.requested_ms)},
            {"expires_at", rfc3339_ms(r.expires_ms)},
            {"decided_at", r.decided_ms ? json(rfc3339_ms(r.decided_ms)) : json()},
            {"decisions", std::move(decisions)},
            {"url", "/v1/approvals/" + r.id}};
  if (with_arguments) add_arguments(j, r);
  else add_preview(j, r);
  return j;
}

Status ApprovalService::audit_event(const ApprovalRecord& r, const std::string& event, json extra) {
  if (!s_.audit) return {};
  json fields = {{"schema", kApprovalSchema}, {"event", event},
                 {"invocation_id", r.invocation_id}, {"approval_id", r.id}, {"tool", r.tool}};
  for (auto& [k, v] : extra.items()) fields[k] = v;
  auto receipt = s_.audit->append(fields);
  if (!receipt) return receipt.error();
  return {};
}

// approval.requested: the approval as GET /v1/approvals/{id} shows it, with its tool's risk
// and where the invocation's outcome will be.
Status ApprovalService::announce_requested(const ApprovalRecord& r) {
  if (!s_.webhooks) return {};
  json approval = approval_json(r, true);
  approval["risk"] = "critical";
  approval["invocation_url"] = "/v1/invocations/" + r.invocation_id;
  return s_.webhooks->enqueue(policy::kEventApprovalRequested, r.tool, r.invocation_id,
                              {{"approval", std::move(approval)}}, /*held=*/true);
}

Status ApprovalService::hold(const pipeline::Invocation& inv, const pipeline::ApprovalRequest& request) {
  auto persisted = pipeline::persist(inv);
  if (!persisted) return persisted.error();
  ApprovalRecord r;
  r.id = request.approval_id;
  r.invocation_id = inv.id;
  r.tool = inv.tool_name;
  r.config_version = inv.config_version;
  auto basis = pipeline::basis_sha256(inv.decision_basis);
  if (!basis) return basis.error();
  r.decision_basis_sha256 = std::move(*basis);
  r.arguments_sha256 = request.arguments_sha256;
  r.approvers_required = request.approvers;
  r.requester_principal = inv.actor ? inv.actor->principal : "";
  if (inv.subject) {
    r.requester_issuer = inv.subject->issuer;
    r.requester_sub = inv.subject->sub;
  }
  r.requested_ms = unix_ms(request.requested_at);
  r.expires_ms = unix_ms(request.expires_at);
  r.state = "pending";
  r.invocation = std::move(*persisted);
  r.user_token = inv.user_token;  // set only for a tool that exchanges it (the approval stage)
  // The invocation's row first (GET /v1/invocations/{id}: pending_approval), then the
  // approval: once that exists it may be decided, and the outcome's row must come after.
  json row = to_response(inv);
  row["principal"] = inv.principal_name();
  if (auto s = s_.store->finish(inv.id, "suspended", row); !s) return s;
  // Stored before the approval exists (none is acknowledged without its webhooks), held until
  // it does (an approver following the webhook finds it).
  if (auto s = announce_requested(r); !s) return s;
  if (auto s = store_.create(r); !s) return s;
  if (s_.webhooks) s_.webhooks->release(policy::kEventApprovalRequested, r.invocation_id);
  return audit_event(r, "approval.requested",
                     {{"arguments_sha256", r.arguments_sha256},
                      {"config_version", r.config_version},
                      {"decision_basis_sha256", r.decision_basis_sha256},
                      {"approvers_required", r.approvers_required},
                      {"principal", r.requester_principal},
                      {"subject", r.requester_sub.empty() ? json() : json{{"issuer", r.requester_issuer}, {"sub", r.requester_sub}}},
                      {"expires_at", rfc3339_ms(r.expires_ms)},
                      {"reason", r.invocation.value("reason", "")}});
}

json ApprovalService::list(const pipeline::Caller& caller, const policy::Config& config) {
  json out = json::array();
  std::map<std::string, bool> approvable;  // by tool: one RBAC decision per tool, not per row
  for (const auto& r : store_.pending()) {
    auto [it, fresh] = approvable.try_emplace(r.tool, false);
    if (fresh) it->second = may_approve(config, caller, r.tool);
    if (!it->second || own_request(r, caller)) continue;
    out.push_back(approval_json(r, false));
    const auto* tool = config.find_tool(r.tool);
    out.back()["risk"] = tool ? json(policy::risk_name(tool->risk)) : json();
  }
  return out;
}

ApprovalAnswer ApprovalService::show(const std::string& id, const pipeline::Caller& caller,
                                     const policy::Config& config) {
  auto r = store_.get(id);
  if (!r || !(may_approve(config, caller, r->tool) || is_requester(*r, caller)))
    return answer_error(404, "not_found", "no approval " + id + " you may see");
  // Never an approval shown without the arguments it is for.
  if (r->sealed_error == "sealed_other_key")
    return answer_error(503, "sealed_other_key", "this replica cannot open approval " + id + ": " + r->sealed_error_message);
  if (!r->sealed_error.empty())
    return answer_error(500, "internal", "approval " + id + " cannot be shown: " + r->sealed_error_message);
  json j = approval_json(*r, true);
  j["context"] = tool_context(*r, config);
  // Whether this caller may decide it now (what decide() would check first): a console shows
  // its buttons only then, and decide() refuses anyway.
  const auto own = own_request(*r, caller);
  const bool person = approver_of(caller).ok();
  j["may_decide"] = r->state == "pending" && person && !own && may_approve(config, caller, r->tool);
  return {200, std::move(j)};
}

std::optional<json> ApprovalService::of_invocation(const std::string& invocation_id) {
  auto r = store_.by_invocation(invocation_id);
  if (!r) return std::nullopt;
  json decisions = json::array();
  for (const auto& d : r->decisions) decisions.push_back(decision_json(d));
  const std::string reason = r->invocation.is_object() ? r->invocation.value("reason", "") : "";
  return json{{"id", r->id},
              {"status", r->state},
              {"url", "/v1/approvals/" + r->id},
              {"approvers", r->approvers_required},
              {"approvals", r->approvals()},
              {"arguments_sha256", r->arguments_sha256},
              {"reason", reason.empty() ? json() : json(reason)},
              {"requested_at", rfc3339_ms(r->requested_ms)},
              {"expires_at", rfc3339_ms(r->expires_ms)},
              {"decided_at", r->decided_ms ? json(rfc3339_ms(r->decided_ms)) : json()},
              {"decisions", std::move(decisions)}};
}

ApprovalAnswer ApprovalService::decide(const std::string& id, const pipeline::Caller& caller,
                                       const policy::Config& config, const std::string& verdict,
                                       const json& body) {
  auto current = store_.get(id);
  if (!current || !(may_approve(config, caller, current->tool) || is_requester(*current, caller)))
    return answer_error(404, "not_found", "no approval " + id + " you may see");
  auto approver = approver_of(caller);
  if (!approver) return answer_error(403, "forbidden", approver.error().message);
  if (auto own = own_request(*current, caller)) return answer_error(403, "forbidden", *own);
  if (auto d = access::decide(config, nullptr, &*caller.subject, policy::Action::approve, current->tool); !d.allowed)
    return answer_error(403, "forbidden", d.reason + " (decided by: " + d.rule + ")");
  if (!body.is_object() || (body.contains("reason") && !body["reason"].is_string()))
    return answer_error(400, "invalid_input", "the body must be {\"reason\": string}");
  // What the approver saw: approving other arguments than those is refused.
  if (auto seen = body.find("arguments_sha256"); seen != body.end() &&
                                                 (!seen->is_string() || *seen != current->arguments_sha256))
    return answer_error(409, "arguments_changed",
                        "approval " + id + " is for arguments with SHA-256 " + current->arguments_sha256 +
                            ", not those you approved");
  approver->verdict = verdict;
  approver->reason = body.value("reason", "");
  auto decided = store_.decide(id, *approver, unix_ms_now());
  if (!decided) {
    if (decided.error().code == "expired") expire_due();  // record the expiry now, once
    const std::string kind = decided.error().code == "expired" ? "approval_expired" : decided.error().code;
    return answer_error(409, kind, decided.error().message);
  }
  (void)audit_event(*decided, "approval.decision",
                    {{"decision", verdict},
                     {"approver", {{"issuer", approver->approver_issuer}, {"sub", approver->approver_sub}}},
                     {"relayed_by", approver->relayed_by.empty() ? json() : json(approver->relayed_by)},
                     {"reason", approver->reason},
                     {"approvals", decided->approvals()},
                     {"approvers_required", decided->approvers_required},
                     {"status", decided->state}});
  auto full = store_.get(id);
  if (full && full->state == "denied")
    end_unrun(*full, pipeline::deny(pipeline::ErrorKind::approval_denied,
                                    "approval " + id + " was denied by " + approver->approver_sub +
                                        (approver->reason.empty() ? "" : ": " + approver->reason)));
  if (full && full->state == "approved") schedule(*full);
  return {200, approval_json(full ? *full : *decided, false)};
}

Status ApprovalService::withdraw(const std::string& invocation_id, const std::string& by) {
  const auto current = store_.by_invocation(invocation_id);
  if (!current) return Error::make("not_found", "invocation " + invocation_id + " waits for no approval");
  auto withdrawn = store_.withdraw(current->id, unix_ms_now());
  if (!withdrawn) return withdrawn.error();
  (void)audit_event(*withdrawn, "approval.withdrawn",
                    {{"by", by}, {"approvals", withdrawn->approvals()}, {"approvers_required", withdrawn->approvers_required}});
  end_unrun(*withdrawn, pipeline::fail(pipeline::ErrorKind::cancelled,
                                       "approval " + withdrawn->id + " was withdrawn by its requester (" + by +
                                           ") before anyone decided: the call never ran"));
  return {};
}

void ApprovalService::tick() {
  expire_due();
  schedule_approved();
  store_.forget_spent_user_tokens();
}

void ApprovalService::expire_due() {
  for (const auto& r : store_.expire_due(unix_ms_now())) {
    (void)audit_event(r, "approval.expired", {{"approvals", r.approvals()}, {"approvers_required", r.approvers_required}});
    end_unrun(r, pipeline::deny(pipeline::ErrorKind::approval_expired,
                                "approval " + r.id + " expired at " + rfc3339_ms(r.expires_ms) + " with " +
                                    std::to_string(r.approvals()) + " of " + std::to_string(r.approvers_required) +
                                    " approval(s): no decision in time is a deny" + expiry_cause(r)));
  }
}

void ApprovalService::schedule_approved() {
  for (const auto& r : store_.approved_not_resumed()) schedule(r);
}

bool ApprovalService::schedule(const ApprovalRecord& r) {
  {
    std::lock_guard lock(scheduled_mu_);
    if (!scheduled_.insert(r.id).second) return true;
  }
  const std::string id = r.id;
  // In its requester's lane of the fair queue, like any admitted call: it runs a tool, so
  // never on the intake queue, whose thread must stay free to admit calls.
  if (s_.executor && !(s_.draining && s_.draining->load())) {
    submit_in_lane(s_, *s_.generation->load()->config, r.requester_principal,
                   r.requester_principal.empty() ? pipeline::quota_user_key(r.requester_issuer, r.requester_sub) : "",
                   [this, id] { run_approved(id); });
    return true;
  }
  std::lock_guard lock(scheduled_mu_);  // draining: the next start runs it
  scheduled_.erase(id);
  return false;
}

// On a worker: the approved invocation goes on from the stage after the gate, under the
// current configuration (a changed one refuses it: config_changed), with the arguments it was
// approved for, byte for byte.
void ApprovalService::run_approved(const std::string& id) {
  auto r = store_.get(id);
  if (!r) return;
  // Sealed by a replica with another key: left to one that holds it (docs/approvals.md).
  if (r->sealed_error == "sealed_other_key") {
    std::cerr << "airlock: approval " << id << ": " << r->sealed_error_message << "\n";
    return;
  }
  if (!store_.claim_resume(id)) return;  // another worker ran it (or it is not approved)
  // Read once, by the run that claimed it: the stored copy goes now, this one with the run.
  (void)store_.forget_user_token(id);
  auto inv = pipeline::restore(r->invocation);
  auto digest = inv ? pipeline::canonical_sha256(inv->arguments) : Result<std::string>(inv.error());
  if (!r->sealed_error.empty() || !inv || !digest || *digest != r->arguments_sha256) {
    const std::string why = !r->sealed_error.empty() ? "it does not decrypt (" + r->sealed_error_message + ")"
                                                     : "its arguments' SHA-256 differs";
    (void)audit_event(*r, "approval.refused", {{"reason", "the stored invocation is not what was approved"}});
    return end_unrun(*r, pipeline::deny(pipeline::ErrorKind::approval_denied,
                                        "the stored invocation of approval " + id + " is not what was approved (" +
                                            why + "): not run"));
  }
  inv->user_token = std::move(r->user_token);
  const json running = {{"id", inv->id}, {"tool", inv->tool_name}, {"status", "running"}};
  (void)s_.store->finish(inv->id, "running", running);
  if (s_.changes) s_.changes->publish(inv->id, running);  // approved: it works now
  auto generation = s_.generation->load();
  generation->pipeline->run(*inv);
  record_finished(s_, *generation, *inv);
}

void ApprovalService::end_unrun(const ApprovalRecord& r, pipeline::InvocationError error) {
  auto restored = pipeline::restore(r.invocation);
  pipeline::Invocation inv;
  if (restored) inv = std::move(*restored);
  inv.id = r.invocation_id;
  inv.tool_name = r.tool;
  if (!inv.actor && !r.requester_principal.empty()) inv.actor = pipeline::Actor{r.requester_principal};
  inv.suspended.reset();
  inv.error = std::move(error);
  auto generation = s_.generation->load();
  if (s_.audit) {
    pipeline::AuditStage record(*s_.audit);
    pipeline::StageContext ctx(*generation->config);
    const pipeline::StageResult recorded = record.run(inv, ctx);
    if (const auto* failed = recorded.error()) inv.error = *failed;
  }
  record_finished(s_, *generation, inv);
}

}  // namespace airlock::server
