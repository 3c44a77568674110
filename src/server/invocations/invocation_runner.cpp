#include "server/invocations/invocation_runner.hpp"

#include <chrono>

#include "server/core/api_services.hpp"
#include "server/invocations/invocation_store.hpp"
#include "server/core/responses.hpp"
#include "server/core/invocation_response.hpp"
#include "pipeline/stages/quota.hpp"
#include "server/core/executor.hpp"
#include "server/invocations/invocation_changes.hpp"
#include "server/invocations/invocation_waiters.hpp"
#include "server/core/verified_callers.hpp"

#include <iostream>

namespace airlock::server {
namespace {

void count_invocation(Metrics& metrics, const pipeline::Invocation& inv, const std::string& tool_label) {
  // The status as the API names it: a call held for its approvers is "pending_approval".
  const bool held = inv.suspended && !inv.error && inv.suspended->stage == "approval";
  metrics.count("airlock_invocations_total",
                {{"tool", tool_label}, {"status", held ? std::string("pending_approval") : inv.status()}});
  if (inv.error && inv.error->error_class == pipeline::ErrorClass::denied)
    metrics.count("airlock_denials_total", {{"reason", std::string(inv.error->kind_name())}});
  if (!inv.redactions.empty())
    metrics.count("airlock_redactions_total", {}, static_cast<double>(inv.redactions.size()));
  if (inv.error && inv.error->kind == pipeline::ErrorKind::quota_exceeded)
    metrics.count("airlock_quota_rejections_total",
                  {{"principal", inv.actor ? inv.actor->principal : "(user)"}, {"quota", inv.error->quota}});
  if (inv.outcome)
    metrics.count("airlock_invocation_starts_total",
                  {{"tool", tool_label}, {"start", inv.outcome->warm ? "warm" : "cold"}});
  double total_ms = 0;
  for (const auto& t : inv.stage_times) total_ms += t.ms;
  metrics.observe("airlock_invocation_seconds", total_ms / 1000.0, {{"tool", tool_label}});
}

// The invocation's end: its row, metrics and waiters, its quota place given back, its caller.
void finish(const ApiServices& s, const Generation& generation, pipeline::Invocation& inv, const InvocationDone& done) {
  record_finished(s, generation, inv);
  inv.quota_hold.reset();  // before the caller hears: its next call may take the place
  done(generation, inv);
}

// Waited past server.queueTimeout for a worker: a refusal the caller may retry, not a silent wait.
pipeline::InvocationError queue_timed_out(const pipeline::Invocation& inv, std::chrono::milliseconds waited,
                                          const policy::Config& config) {
  auto error = pipeline::deny(pipeline::ErrorKind::quota_exceeded,
                              "waited " + std::to_string(waited.count()) + " ms for a worker behind " +
                                  (inv.actor ? "principal " + inv.actor->principal : std::string("its user")) +
                                  "'s earlier calls, past server.queueTimeout (" +
                                  std::to_string(config.server.queue_timeout.count()) + " ms); retry in 1 s");
  error.quota = "queueTimeout";
  error.retry_after_seconds = 1;
  return error;
}

// An admitted invocation waits in its principal's lane (a user's, without an agent), then
// goes on from the stage after the quota stage. Still waiting at server.queueTimeout, it ends
// there without running (the executor runs `expired` as intake work, at the deadline).
void queue_admitted(const ApiServices& s, std::shared_ptr<const Generation> generation,
                    std::shared_ptr<pipeline::Invocation> inv, InvocationDone done) {
  const std::string principal = pipeline::quota_principal(*inv), user = pipeline::quota_user(*inv);
  const auto queued = std::chrono::steady_clock::now();
  // Exactly one of the two runs; both end the invocation the same way.
  auto proceed = std::make_shared<std::function<void()>>([s, generation, inv, queued, done = std::move(done)] {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - queued);
    if (waited >= generation->config->server.queue_timeout) inv->error = queue_timed_out(*inv, waited, *generation->config);
    generation->pipeline->run(*inv);  // with that error: no further stage, audited and answered
    finish(s, *generation, *inv, done);
  });
  InvocationExecutor::Expiry expiry{queued + generation->config->server.queue_timeout, [proceed] { (*proceed)(); }};
  submit_in_lane(s, *generation->config, principal, user, [proceed] { (*proceed)(); }, std::move(expiry));
}

// The intake's share is the caller's: the principal its credential was verified as before,
// else the credential itself, unverified (authentication comes at admission).
IntakeCaller intake_caller(const ApiServices& s, const pipeline::Invocation& inv) {
  if (s.verified_callers) return s.verified_callers->intake_caller(inv);
  return VerifiedCallers(0).intake_caller(inv);  // none kept: every caller is unverified
}

}  // namespace

void submit_in_lane(const ApiServices& s, const policy::Config& config, const std::string& principal,
                    const std::string& user_key, std::function<void()> job,
                    std::optional<InvocationExecutor::Expiry> expiry) {
  const std::string lane = lane_of(principal, user_key);
  const unsigned weight = config.quotas.for_principal(principal).weight.value_or(1);
  if (expiry)
    s.executor->submit_to_lane(lane, weight, std::move(job), std::move(*expiry));
  else
    s.executor->submit_to_lane(lane, weight, std::move(job));
}

void record_finished(const ApiServices& s, const Generation& generation, const pipeline::Invocation& inv) {
  nlohmann::json stored = to_response(inv);
  stored["principal"] = inv.principal_name();
  stored["log"] = pipeline::log_with_notes(inv);  // the tool's stderr, capped and DLP-redacted
  // Only authenticated invocations are kept (their row began in the record_start stage).
  // A call held for approval has its row already (written by the approval service before
  // the approval could be decided, so that this cannot overwrite its outcome).
  const bool held = inv.suspended && !inv.error && inv.suspended->stage == "approval";
  if ((inv.actor || inv.subject) && !held) {
    (void)s.store->finish(inv.id, inv.status(), stored);
    if (s.completed) s.completed(inv, stored);
  }
  count_invocation(*s.metrics, inv, tool_label(*generation.config, inv.tool_name));
  // What its sandbox used (a tool of an MCP server: its server's sandbox during the call)
  // counts against its principal's and user's cpuSeconds.
  if (const sandbox::Usage* usage = inv.usage(); s.quotas && usage)
    s.quotas->charge_cpu(generation.config->quotas, pipeline::quota_principal(inv), pipeline::quota_user(inv),
                         static_cast<double>(usage->cpu_user_ms + usage->cpu_sys_ms) / 1000.0);
  if (s.waiters && !inv.suspended) s.waiters->notify(inv.id);
  if (s.changes && (inv.actor || inv.subject) && !inv.suspended) s.changes->publish(inv.id, stored);
}

Rejection run_invocation(const ApiServices& s, InvocationRequest request, InvocationDone done,
                         std::function<void()> displaced) {
  if (s.draining && s.draining->load()) {
    s.metrics->count("airlock_rejected_total", {{"reason", "draining"}});
    return Rejection::draining;
  }
  auto inv = std::make_shared<pipeline::Invocation>();
  inv->id = s.new_id();
  inv->tool_name = std::move(request.tool);
  inv->headers = std::move(request.headers);
  inv->client_certificate = std::move(request.client_certificate);
  inv->raw_body = std::move(request.raw_body);
  inv->peer = std::move(request.peer);
  inv->control = std::move(request.control);
  // The invocation keeps its generation to its end: a reload meanwhile does not touch it.
  // The job holds copies of what it uses: it may outlive the caller.
  auto generation = s.generation->load();
  const IntakeCaller caller = intake_caller(s, *inv);
  auto job = [services = s, generation, inv, done = std::move(done)]() mutable {
    generation->pipeline->run(*inv);
    if (services.verified_callers) services.verified_callers->remember(*inv);
    if (pipeline::queued_for_worker(*inv))  // admitted: the rest when its principal's turn comes
      return queue_admitted(services, std::move(generation), std::move(inv), std::move(done));
    finish(services, *generation, *inv, done);
  };
  auto on_displaced = [metrics = s.metrics, displaced = std::move(displaced)] {
    metrics->count("airlock_rejected_total", {{"reason", "queue_full"}});
    displaced();
  };
  bool accepted = s.executor->submit(caller, std::move(job), std::move(on_displaced));
  if (accepted) return Rejection::none;
  s.metrics->count("airlock_rejected_total", {{"reason", "queue_full"}});
  return Rejection::queue_full;
}

}  // namespace airlock::server
