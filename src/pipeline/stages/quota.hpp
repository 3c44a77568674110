// The quota stage, after authorize: admits the call under its principal's and its user's
// quotas (quota_book.hpp) or refuses it with quota_exceeded naming the quota and when to try
// again. In the daemon it then hands the call to the fair queue: it suspends with
// kQueuedForWorker, and the daemon resumes it on a worker when its principal's turn comes
// (server/core/executor.hpp). The admitted call's hold stays with the invocation until it ends.
#pragma once

#include <memory>

#include "pipeline/quotas/quota_book.hpp"
#include "pipeline/stage.hpp"

namespace airlock::pipeline {

// The suspension's reason when a call waits for its turn on a worker: never persisted.
inline constexpr const char* kQueuedForWorker = "queued for a worker";
inline constexpr const char* kQuotaStageName = "quota";

class QuotaStage : public Stage {
 public:
  // `queue`: suspend an admitted call for the fair queue (the daemon); false: go on.
  QuotaStage(std::shared_ptr<QuotaBook> book, bool queue) : book_(std::move(book)), queue_(queue) {}
  std::string_view name() const override { return kQuotaStageName; }
  StageResult run(Invocation& inv, StageContext& ctx) override;

 private:
  std::shared_ptr<QuotaBook> book_;
  bool queue_;
};

// Whether `inv` waits for its turn in the fair queue (suspended by the quota stage).
bool queued_for_worker(const Invocation& inv);
// The principal and user keys the book counts `inv` under ("" for none).
std::string quota_principal(const Invocation& inv);
std::string quota_user(const Invocation& inv);

}  // namespace airlock::pipeline
