#include "server/approvals/webhook_outbox.hpp"

#include <sqlite3.h>

#include "creds/sealing_key.hpp"
#include "storage/sqlite_state.hpp"

namespace airlock::server {
namespace {

using Statement = storage::SqliteStatement;

constexpr const char* kOutboxStore = "state database (webhook_deliveries)";  // named in errors

constexpr const char* kOutboxSchema =
    "CREATE TABLE IF NOT EXISTS webhook_deliveries ("
    " id TEXT PRIMARY KEY, webhook TEXT NOT NULL, event TEXT NOT NULL, subject TEXT NOT NULL,"
    " body TEXT NOT NULL, created_ms INTEGER NOT NULL, next_ms INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL, last_error TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (state, next_ms)";

constexpr const char* kOutboxColumns =
    "SELECT id, webhook, event, subject, body, created_ms, next_ms, attempts, state, last_error"
    " FROM webhook_deliveries ";

// The body's associated data: a body sealed for one delivery does not open as another's.
std::string body_of(const std::string& id) { return "webhook delivery " + id + " body"; }

WebhookDelivery row_of(const Statement& s, const creds::SealingKey& key) {
  WebhookDelivery d;
  d.id = s.text(0);
  d.webhook = s.text(1);
  d.event = s.text(2);
  d.subject = s.text(3);
  const std::string sealed = s.text(4);
  auto body = creds::SealingKey::is_sealed_text(sealed)
                  ? key.open_text(body_of(d.id), sealed)
                  : Result<std::string>(Error::make("sealed_corrupt", "delivery " + d.id + ": its body is not sealed"));
  if (body) d.body = std::move(*body);
  else d.body_error = body.error().message;
  d.created_ms = s.integer(5);
  d.next_ms = s.integer(6);
  d.attempts = static_cast<std::uint32_t>(s.integer(7));
  d.state = s.text(8);
  d.last_error = s.text(9);
  return d;
}

}  // namespace

Result<std::unique_ptr<WebhookOutbox>> WebhookOutbox::open(const std::string& path,
                                                           std::shared_ptr<const creds::SealingKey> key) {
  if (!key) return Error::make("storage", "state database (webhook_deliveries): no key to seal bodies with");
  auto db = storage::open_sqlite_state(path, kOutboxSchema, kOutboxStore);
  if (!db) return db.error();
  std::unique_ptr<WebhookOutbox> outbox(new WebhookOutbox(db->release(), std::move(key)));
  if (auto s = outbox->exec("PRAGMA secure_delete = ON"); !s) return s.error();
  if (auto s = outbox->seal_plain_bodies(); !s) return s.error();
  return outbox;
}

// Bodies an older daemon stored in plain (a JSON document): sealed, in one transaction.
Status WebhookOutbox::seal_plain_bodies() {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> plain;
  {
    Statement s(db_, "SELECT id, body FROM webhook_deliveries WHERE substr(body, 1, 1) = '{'");
    while (s.step_row()) plain.emplace_back(s.text(0), s.text(1));
  }
  if (plain.empty()) return {};
  if (auto s = exec("BEGIN IMMEDIATE"); !s) return s;
  for (const auto& [id, body] : plain) {
    auto sealed = key_->seal_text(body_of(id), body);
    Statement up(db_, "UPDATE webhook_deliveries SET body = ? WHERE id = ?");
    if (sealed) up.bind(1, *sealed);
    up.bind(2, id);
    if (!sealed || !up.step_done()) {
      (void)exec("ROLLBACK");
      return sealed ? storage::sqlite_error(db_, kOutboxStore, "sealing delivery " + id) : sealed.error();
    }
  }
  return exec("COMMIT");
}

WebhookOutbox::~WebhookOutbox() { sqlite3_close(db_); }

Status WebhookOutbox::exec(const std::string& sql) {
  return storage::sqlite_exec(db_, sql.c_str(), kOutboxStore);
}

Status WebhookOutbox::add(const std::vector<WebhookDelivery>& deliveries) {
  if (deliveries.empty()) return {};
  std::lock_guard lock(mu_);
  if (auto s = exec("BEGIN IMMEDIATE"); !s) return s;
  for (const auto& d : deliveries) {
    auto sealed = key_->seal_text(body_of(d.id), d.body);
    if (!sealed) {
      (void)exec("ROLLBACK");
      return sealed.error();
    }
    Statement s(db_,
                "INSERT INTO webhook_deliveries (id, webhook, event, subject, body, created_ms, next_ms, state)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')");
    s.bind(1, d.id);
    s.bind(2, d.webhook);
    s.bind(3, d.event);
    s.bind(4, d.subject);
    s.bind(5, *sealed);
    s.bind(6, d.created_ms);
    s.bind(7, d.next_ms);
    if (!s.step_done()) {
      Error e = storage::sqlite_error(db_, kOutboxStore, "storing delivery " + d.id);
      (void)exec("ROLLBACK");
      return e;
    }
  }
  if (auto s = exec("COMMIT"); !s) {
    (void)exec("ROLLBACK");
    return s;
  }
  return {};
}

std::vector<WebhookDelivery> WebhookOutbox::due(std::int64_t now_ms, int limit) {
  std::lock_guard lock(mu_);
  Statement s(db_, (std::string(kOutboxColumns) +
                    "WHERE state = 'pending' AND next_ms <= ? ORDER BY next_ms, created_ms LIMIT ?")
                       .c_str());
  s.bind(1, now_ms);
  s.bind(2, static_cast<std::int64_t>(limit));
  std::vector<WebhookDelivery> out;
  while (s.step_row()) out.push_back(row_of(s, *key_));
  return out;
}

std::optional<std::int64_t> WebhookOutbox::next_due() {
  std::lock_guard lock(mu_);
  Statement s(db_, "SELECT MIN(next_ms) FROM webhook_deliveries WHERE state = 'pending'");
  if (!s.step_row() || s.is_null(0)) return std::nullopt;
  return s.integer(0);
}

std::optional<WebhookDelivery> WebhookOutbox::get(const std::string& id) {
  std::lock_guard lock(mu_);
  Statement s(db_, (std::string(kOutboxColumns) + "WHERE id = ?").c_str());
  s.bind(1, id);
  if (!s.step_row()) return std::nullopt;
  return row_of(s, *key_);
}

Status WebhookOutbox::release(const std::string& event, const std::string& subject, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "UPDATE webhook_deliveries SET next_ms = ?"
              " WHERE event = ? AND subject = ? AND state = 'pending' AND attempts = 0");
  s.bind(1, now_ms);
  s.bind(2, event);
  s.bind(3, subject);
  if (!s.step_done())
    return storage::sqlite_error(db_, kOutboxStore, "releasing the " + event + " deliveries of " + subject);
  return {};
}

Status WebhookOutbox::update(const std::string& id, const char* state, std::uint32_t attempts,
                             std::int64_t next_ms, const std::string& error) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "UPDATE webhook_deliveries SET state = ?, attempts = ?, next_ms = ?, last_error = ?"
              " WHERE id = ? AND state = 'pending'");
  s.bind(1, std::string(state));
  s.bind(2, static_cast<std::int64_t>(attempts));
  s.bind(3, next_ms);
  s.bind(4, error);
  s.bind(5, id);
  if (!s.step_done()) return storage::sqlite_error(db_, kOutboxStore, "updating delivery " + id);
  return {};
}

Status WebhookOutbox::delivered(const std::string& id, std::uint32_t attempts) {
  return update(id, "delivered", attempts, 0, "");
}

Status WebhookOutbox::retry(const std::string& id, std::uint32_t attempts, std::int64_t next_ms,
                            const std::string& error) {
  return update(id, "pending", attempts, next_ms, error);
}

Status WebhookOutbox::failed(const std::string& id, std::uint32_t attempts, const std::string& error) {
  return update(id, "failed", attempts, 0, error);
}

}  // namespace airlock::server
