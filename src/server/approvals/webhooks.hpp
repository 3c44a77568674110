// Webhooks (docs/webhooks.md): the events approval.requested and invocation.completed,
// POSTed to the configured receivers, signed with HMAC-SHA256. An event is stored in the
// outbox (state.db) before it is acknowledged; a thread of its own delivers it, off every
// request thread, trying again with exponential backoff until the receiver answers 2xx or the
// webhook's retry policy gives up (then the delivery is failed: a log line and an audit
// record). A daemon that starts resumes what is pending. A few threads deliver, at most one
// attempt per webhook at a time: a receiver that hangs delays its own deliveries only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "pipeline/invocation.hpp"
#include "server/core/generation.hpp"
#include "server/approvals/webhook_outbox.hpp"

namespace airlock::audit {
class AuditLog;
}

namespace airlock::server {

class ApprovalService;

class Metrics;

inline constexpr const char* kWebhookSchema = "airlock.webhook/v1";
inline constexpr std::chrono::milliseconds kHeldFor{5000};

// "v1=" and the lower-case hex HMAC-SHA256 of `timestamp` "." `body`, keyed with `secret`:
// the Airlock-Webhook-Signature header.
std::string webhook_signature(const std::string& secret, const std::string& timestamp, const std::string& body);

// The wait before attempt `attempts` + 1, after `attempts` failed ones (at least 1):
// retry.initial doubled each time, at most retry.max.
std::chrono::milliseconds webhook_backoff(const policy::WebhookRetry& retry, std::uint32_t attempts);

class WebhookService {
 public:
  WebhookService(WebhookOutbox& outbox, const GenerationSlot& generation, audit::AuditLog* audit,
                 Metrics* metrics);
  ~WebhookService();

  // Stores one delivery of `event` for each webhook of the current configuration that wants
  // it for `tool`: {"id", "event", "created_at"} and `fields` ({"approval": ...} or
  // {"invocation": ...}). Durable when it returns ok. `held`: not sent before release() (or
  // kHeldFor, should the caller never get there): the caller releases it once what the event
  // announces exists.
  Status enqueue(const std::string& event, const std::string& tool, const std::string& invocation_id,
                 const nlohmann::json& fields, bool held = false);
  void release(const std::string& event, const std::string& invocation_id);
  // invocation.completed: the row as GET /v1/invocations/{id} answers it (with the approval it
  // needed, if any: who let it run), stored in the outbox before anyone hears of the outcome
  // (the caller, a long poll). The daemon's ApiServices::completed.
  void announce_completed(const pipeline::Invocation& inv, nlohmann::json stored, ApprovalService* approvals);
  void wake();

  void start();  // the deliverers: pending rows (a restart's too) go out at once
  void stop();   // after the attempts under way; what is pending stays for the next start

 private:
  enum class Round { sent, busy, idle };  // an attempt made; all due ones' webhooks busy; none due
  void loop();
  Round deliver_one();
  std::optional<WebhookDelivery> claim(const std::vector<WebhookDelivery>& due);
  void attempt(const WebhookDelivery& delivery);
  void give_up(const WebhookDelivery& delivery, std::uint32_t attempts, const std::string& error);

  WebhookOutbox& outbox_;
  const GenerationSlot& generation_;
  audit::AuditLog* audit_;
  Metrics* metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::uint64_t wakes_ = 0;            // counts wake(), and the end of each attempt
  std::set<std::string> busy_;         // webhooks with an attempt under way: one each at a time
  std::vector<std::thread> threads_;
};

}  // namespace airlock::server
