#include "pipeline/stages/quota.hpp"

namespace airlock::pipeline {

std::string quota_principal(const Invocation& inv) { return inv.actor ? inv.actor->principal : ""; }

std::string quota_user(const Invocation& inv) {
  return inv.subject ? quota_user_key(inv.subject->issuer, inv.subject->sub) : "";
}

bool queued_for_worker(const Invocation& inv) {
  return inv.suspended && !inv.error && inv.suspended->stage == kQuotaStageName;
}

StageResult QuotaStage::run(Invocation& inv, StageContext& ctx) {
  auto admitted = book_->admit(ctx.config().quotas, quota_principal(inv), quota_user(inv));
  if (auto* failed = std::get_if<Error>(&admitted))  // fail closed: never admitted unaccounted
    return fail(ErrorKind::storage_unavailable,
                "the call's quotas could not be checked, so it did not run: " + failed->message);
  if (auto* refusal = std::get_if<QuotaRefusal>(&admitted)) {
    InvocationError error = deny(ErrorKind::quota_exceeded, refusal->message + "; retry in " +
                                                                std::to_string(refusal->retry_after.count()) + " s");
    error.quota = refusal->quota;
    error.retry_after_seconds = static_cast<std::uint32_t>(refusal->retry_after.count());
    return error;
  }
  inv.quota_hold = std::get<std::shared_ptr<QuotaHold>>(std::move(admitted));
  if (queue_) return StageResult::suspend(kQueuedForWorker);
  return StageResult::next();
}

}  // namespace airlock::pipeline
