#include "server/approvals/webhooks.hpp"

#include <algorithm>
#include <iostream>
#include <optional>

#include "audit/audit_log.hpp"
#include "audit/invocation_record.hpp"
#include "common/digest.hpp"
#include "common/utc_time.hpp"
#include "identity/http_fetch.hpp"
#include "pipeline/stages/approval.hpp"
#include "server/approvals/approvals.hpp"
#include "server/core/metrics.hpp"

namespace airlock::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::system_clock;

constexpr int kBatch = 64;      // due rows read per round
constexpr int kDeliverers = 4;  // threads; at most one attempt per webhook at a time
constexpr std::size_t kMaxAnswerBytes = 1 << 20;

const policy::WebhookConfig* find_webhook(const policy::Config& config, const std::string& name) {
  for (const auto& w : config.webhooks)
    if (w.name == name) return &w;
  return nullptr;
}

std::string body_of(const std::string& id, const std::string& event, const json& fields) {
  json body = {{"id", id}, {"event", event}, {"created_at", rfc3339_ms(Clock::now())}};
  for (const auto& [k, v] : fields.items()) body[k] = v;
  return body.dump();
}

// One POST; the receiver's failure ("HTTP 500", "connect failed: ...") or nothing.
std::optional<std::string> post(const policy::WebhookConfig& w, const WebhookDelivery& d) {
  const std::string timestamp =
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count());
  identity::FetchRequest request;
  request.method = "POST";
  request.url = w.url;
  request.what = "webhook " + w.name;
  request.body = d.body;
  request.headers = {{"Content-Type", "application/json"},
                     {"Airlock-Webhook-Id", d.id},
                     {"Airlock-Webhook-Event", d.event},
                     {"Airlock-Webhook-Timestamp", timestamp},
                     {"Airlock-Webhook-Signature", webhook_signature(w.secret, timestamp, d.body)}};
  identity::FetchOptions options;
  options.timeout = w.timeout;
  options.max_bytes = kMaxAnswerBytes;
  auto answer = identity::http_request(request, options);
  if (!answer) return answer.error().message;
  if (answer->status < 200 || answer->status > 299) return "HTTP " + std::to_string(answer->status);
  return std::nullopt;
}

}  // namespace

std::string webhook_signature(const std::string& secret, const std::string& timestamp, const std::string& body) {
  return "v1=" + hmac_sha256_hex(secret, timestamp + "." + body);
}

std::chrono::milliseconds webhook_backoff(const policy::WebhookRetry& retry, std::uint32_t attempts) {
  auto wait = retry.initial;
  for (std::uint32_t n = 1; n < attempts && wait < retry.max; ++n) wait *= 2;
  return std::min(wait, retry.max);
}

WebhookService::WebhookService(WebhookOutbox& outbox, const GenerationSlot& generation, audit::AuditLog* audit,
                               Metrics* metrics)
    : outbox_(outbox), generation_(generation), audit_(audit), metrics_(metrics) {}

WebhookService::~WebhookService() { stop(); }

Status WebhookService::enqueue(const std::string& event, const std::string& tool, const std::string& invocation_id,
                               const json& fields, bool held) {
  const auto generation = generation_.load();
  std::vector<WebhookDelivery> deliveries;
  for (const auto& w : generation->config->webhooks) {
    if (!w.wants(event) || !w.covers(tool)) continue;
    WebhookDelivery d;
    d.id = "whd-" + audit::new_invocation_id();
    d.webhook = w.name;
    d.event = event;
    d.subject = invocation_id;
    d.body = body_of(d.id, event, fields);
    d.created_ms = unix_ms_now();
    d.next_ms = d.created_ms + (held ? kHeldFor.count() : 0);
    deliveries.push_back(std::move(d));
  }
  if (deliveries.empty()) return {};
  if (auto s = outbox_.add(deliveries); !s)
    return Error::make("webhook", "storing the " + event + " deliveries: " + s.error().message);
  if (!held) wake();
  return {};
}

void WebhookService::announce_completed(const pipeline::Invocation& inv, nlohmann::json stored,
                                        ApprovalService* approvals) {
  stored.erase("principal");
  if (auto approval = approvals ? approvals->of_invocation(inv.id) : std::nullopt) stored["approval"] = std::move(*approval);
  auto queued = enqueue(policy::kEventInvocationCompleted, inv.tool_name, inv.id, {{"invocation", std::move(stored)}});
  if (!queued) std::cerr << "airlock: invocation " << inv.id << ": " << queued.error().message << "\n";
}

void WebhookService::release(const std::string& event, const std::string& invocation_id) {
  if (auto s = outbox_.release(event, invocation_id, unix_ms_now()); !s)
    std::cerr << "airlock: webhook: " << s.error().message << "\n";  // sent kHeldFor later
  wake();
}

void WebhookService::wake() {
  std::lock_guard lock(mu_);
  ++wakes_;
  cv_.notify_all();
}

void WebhookService::start() {
  std::lock_guard lock(mu_);
  if (!threads_.empty()) return;
  stopping_ = false;
  for (int i = 0; i < kDeliverers; ++i) threads_.emplace_back([this] { loop(); });
}

void WebhookService::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
}

// Sends what is due, one attempt at a time; then sleeps until the next row is due, an event,
// the end of another thread's attempt (its webhook is free again), or stop().
void WebhookService::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const std::uint64_t seen = wakes_;
    lock.unlock();
    const Round round = deliver_one();
    const auto next = round == Round::idle ? outbox_.next_due() : std::nullopt;
    lock.lock();
    if (round == Round::sent) continue;
    const auto until = next ? Clock::time_point(std::chrono::milliseconds(*next))
                            : Clock::now() + (round == Round::busy ? std::chrono::seconds(1) : std::chrono::seconds(60));
    cv_.wait_until(lock, until, [&] { return stopping_ || wakes_ != seen; });
  }
}

// The oldest due delivery whose webhook has no attempt under way, marked busy.
std::optional<WebhookDelivery> WebhookService::claim(const std::vector<WebhookDelivery>& due) {
  std::lock_guard lock(mu_);
  if (stopping_) return std::nullopt;
  for (const auto& d : due)
    if (busy_.insert(d.webhook).second) return d;
  return std::nullopt;
}

WebhookService::Round WebhookService::deliver_one() {
  const auto due = outbox_.due(unix_ms_now(), kBatch);
  if (due.empty()) return Round::idle;
  const auto claimed = claim(due);
  if (!claimed) return Round::busy;
  // Read again now that its webhook is ours: another thread may have just attempted it.
  const auto fresh = outbox_.get(claimed->id);
  if (fresh && fresh->state == "pending" && fresh->next_ms <= unix_ms_now()) attempt(*fresh);
  std::lock_guard lock(mu_);
  busy_.erase(claimed->webhook);
  ++wakes_;
  cv_.notify_all();
  return Round::sent;
}

void WebhookService::attempt(const WebhookDelivery& d) {
  const auto generation = generation_.load();
  const auto* w = find_webhook(*generation->config, d.webhook);
  const std::uint32_t attempts = d.attempts + 1;
  if (!w) return give_up(d, d.attempts, "webhook " + d.webhook + " is no longer in the configuration");
  if (!d.body_error.empty()) return give_up(d, d.attempts, "its stored body does not decrypt: " + d.body_error);
  const auto failure = post(*w, d);
  if (!failure) {
    if (auto s = outbox_.delivered(d.id, attempts); !s) std::cerr << "airlock: webhook " << w->name << ": " << s.error().message << "\n";
    if (metrics_) metrics_->count("airlock_webhook_deliveries_total", {{"webhook", w->name}, {"result", "delivered"}});
    return;
  }
  const std::int64_t now = unix_ms_now();
  const bool out_of_attempts = w->retry.attempts != 0 && attempts >= w->retry.attempts;
  const bool out_of_time = now - d.created_ms >= w->retry.give_up_after.count();
  if (out_of_attempts || out_of_time) return give_up(d, attempts, *failure);
  const std::int64_t next = now + webhook_backoff(w->retry, attempts).count();
  if (auto s = outbox_.retry(d.id, attempts, next, *failure); !s)
    std::cerr << "airlock: webhook " << w->name << ": " << s.error().message << "\n";
  if (metrics_) metrics_->count("airlock_webhook_deliveries_total", {{"webhook", w->name}, {"result", "retried"}});
}

// Failed for good: kept in the outbox as failed, logged, and an audit record.
void WebhookService::give_up(const WebhookDelivery& d, std::uint32_t attempts, const std::string& error) {
  if (auto s = outbox_.failed(d.id, attempts, error); !s)
    std::cerr << "airlock: webhook " << d.webhook << ": " << s.error().message << "\n";
  std::cerr << "airlock: webhook " << d.webhook << ": delivery " << d.id << " (" << d.event << ", invocation "
            << d.subject << ") failed after " << attempts << " attempt(s): " << error << "\n";
  if (metrics_) metrics_->count("airlock_webhook_deliveries_total", {{"webhook", d.webhook}, {"result", "failed"}});
  if (!audit_) return;
  auto receipt = audit_->append({{"schema", kWebhookSchema},
                                 {"event", "webhook.failed"},
                                 {"invocation_id", d.subject},
                                 {"delivery_id", d.id},
                                 {"webhook", d.webhook},
                                 {"webhook_event", d.event},
                                 {"attempts", attempts},
                                 {"error", error}});
  if (!receipt) std::cerr << "airlock: webhook " << d.webhook << ": audit: " << receipt.error().message << "\n";
}

}  // namespace airlock::server
