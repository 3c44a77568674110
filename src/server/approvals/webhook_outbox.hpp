// The webhooks' outbox (docs/webhooks.md): one row per delivery (an event for one webhook),
// in state.db beside the invocations. A row is written when its event happens, before the
// event is acknowledged to anyone, and stays (delivered or failed) as the delivery's history;
// pending rows are what the deliverer sends, and what a restarted daemon resumes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"

struct sqlite3;

namespace airlock::creds {
class SealingKey;
}

namespace airlock::server {

struct WebhookDelivery {
  std::string id;       // whd-<uuid>: the Airlock-Webhook-Id header
  std::string webhook;  // its name in the configuration
  std::string event;    // approval.requested | invocation.completed
  std::string subject;  // the invocation's id (links it to the audit records)
  std::string body;     // the JSON sent, byte for byte on every attempt (sealed in the table)
  // Why the stored body did not open ("" when it did): such a delivery is failed, never sent.
  std::string body_error;
  std::int64_t created_ms = 0, next_ms = 0;
  std::uint32_t attempts = 0;
  std::string state = "pending";  // pending | delivered | failed
  std::string last_error;
};

class WebhookOutbox {
 public:
  // Bodies are sealed with `key` (the secret store's, creds/sealing_key.hpp): an
  // approval.requested body carries the pending call's arguments. Bodies an older daemon
  // stored in plain are sealed at open.
  static Result<std::unique_ptr<WebhookOutbox>> open(const std::string& path,
                                                     std::shared_ptr<const creds::SealingKey> key);
  ~WebhookOutbox();

  // All of them or none, in one transaction.
  Status add(const std::vector<WebhookDelivery>& deliveries);
  // Pending ones due at `now_ms`, oldest first, at most `limit`.
  std::vector<WebhookDelivery> due(std::int64_t now_ms, int limit);
  // When the earliest pending one is due; nullopt when none is pending.
  std::optional<std::int64_t> next_due();
  std::optional<WebhookDelivery> get(const std::string& id);
  // The not yet attempted deliveries of `event` for `subject`, due at `now_ms` (they were held).
  Status release(const std::string& event, const std::string& subject, std::int64_t now_ms);
  // An attempt's outcome: delivered, to be tried again at `next_ms`, or failed for good.
  Status delivered(const std::string& id, std::uint32_t attempts);
  Status retry(const std::string& id, std::uint32_t attempts, std::int64_t next_ms, const std::string& error);
  Status failed(const std::string& id, std::uint32_t attempts, const std::string& error);

 private:
  WebhookOutbox(sqlite3* db, std::shared_ptr<const creds::SealingKey> key) : db_(db), key_(std::move(key)) {}
  Status seal_plain_bodies();
  Status exec(const std::string& sql);
  Status update(const std::string& id, const char* state, std::uint32_t attempts, std::int64_t next_ms,
                const std::string& error);
  std::mutex mu_;
  sqlite3* db_;
  std::shared_ptr<const creds::SealingKey> key_;
};

}  // namespace airlock::server
