#include "creds/lease_store.hpp"

#include <openssl/rand.h>
#include <sqlite3.h>

#include <mutex>

#include "common/hex.hpp"
#include "storage/sqlite_state.hpp"
#include "storage/state_location.hpp"

namespace airlock::creds {
namespace {

std::int64_t to_ms(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
Clock::time_point from_ms(std::int64_t ms) { return Clock::time_point(std::chrono::milliseconds(ms)); }

using Statement = storage::SqliteStatement;

constexpr const char* kAdd =
    "INSERT INTO leases (id, invocation_id, tool, env, provider, scopes, issued_ms, expires_ms,"
    " target, state, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
constexpr const char* kUpdate =
    "UPDATE leases SET scopes = ?2, issued_ms = ?3, expires_ms = ?4, state = ?5, updated_ms = ?6 WHERE id = ?1";

constexpr const char* kColumns =
    "id, invocation_id, tool, env, provider, scopes, issued_ms, expires_ms, target, state";

Lease lease_of(const Statement& row) {
  Lease l;
  l.id = row.text(0);
  l.invocation_id = row.text(1);
  l.tool = row.text(2);
  l.env = row.text(3);
  l.provider = row.text(4);
  auto scopes = nlohmann::json::parse(row.text(5), nullptr, false);
  if (scopes.is_array())
    for (const auto& s : scopes)
      if (s.is_string()) l.scopes.push_back(s.get<std::string>());
  l.issued_at = from_ms(row.integer(6));
  l.expires_at = from_ms(row.integer(7));
  auto target = nlohmann::json::parse(row.text(8), nullptr, false);
  if (target.is_object()) l.target = std::move(target);
  l.state = parse_state(row.text(9)).value_or(Lease::State::leasing);
  return l;
}

// The SQLite store: one connection, its two writes prepared once.
class SqliteLeaseStore final : public LeaseStore {
 public:
  explicit SqliteLeaseStore(sqlite3* db) : db_(db) {}
  ~SqliteLeaseStore() override;
  Status add(const Lease& lease) override;
  Status update(const Lease& lease) override;
  Result<std::vector<Lease>> outstanding() override;
  Result<std::vector<Lease>> of_invocation(const std::string& invocation_id) override;

  std::mutex mu_;
  sqlite3* db_;
  sqlite3_stmt* add_ = nullptr;
  sqlite3_stmt* update_ = nullptr;
};

}  // namespace

Result<std::string> new_lease_id() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return Error::make("credential_unavailable", "no random bytes for a lease id");
  return hex_encode(bytes, sizeof bytes);
}

Result<std::unique_ptr<LeaseStore>> LeaseStore::open(const std::string& path) {
  const char* schema =
      "CREATE TABLE IF NOT EXISTS leases (id TEXT PRIMARY KEY, invocation_id TEXT NOT NULL,"
      " tool TEXT NOT NULL, env TEXT NOT NULL, provider TEXT NOT NULL, scopes TEXT NOT NULL,"
      " issued_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL, target TEXT NOT NULL,"
      " state TEXT NOT NULL, updated_ms INTEGER NOT NULL);"
      "CREATE INDEX IF NOT EXISTS leases_by_state ON leases(state);"
      "CREATE INDEX IF NOT EXISTS leases_by_invocation ON leases(invocation_id);";
  auto opened = storage::open_sqlite_state(path, schema, "credential leases");
  if (!opened) return opened.error();
  auto store = std::make_unique<SqliteLeaseStore>(opened->release());
  sqlite3* db = store->db_;
  // Prepared once: preparing is a good part of a write's cost (bench/creds).
  if (sqlite3_prepare_v3(db, kAdd, -1, SQLITE_PREPARE_PERSISTENT, &store->add_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v3(db, kUpdate, -1, SQLITE_PREPARE_PERSISTENT, &store->update_, nullptr) != SQLITE_OK)
    return storage::sqlite_error(db, "credential leases", "preparing the statements");
  return std::unique_ptr<LeaseStore>(std::move(store));
}

Result<std::unique_ptr<LeaseStore>> LeaseStore::open(const storage::StateLocation& location) {
  if (location.is_postgres()) return open_postgres_lease_store(location);
  return open(location.sqlite_path);
}

SqliteLeaseStore::~SqliteLeaseStore() {
  sqlite3_finalize(add_);
  sqlite3_finalize(update_);
  sqlite3_close(db_);
}

// WAL with synchronous=NORMAL: a committed lease survives the daemon being killed (the case
// recovery is for); a power cut may lose the last ones, whose credentials still expire.
Status SqliteLeaseStore::add(const Lease& lease) {
  std::lock_guard lock(mu_);
  Statement s(add_);
  if (!s.ok()) return storage::sqlite_error(db_, "credential leases", "adding a lease");
  s.bind(1, lease.id);
  s.bind(2, lease.invocation_id);
  s.bind(3, lease.tool);
  s.bind(4, lease.env);
  s.bind(5, lease.provider);
  s.bind(6, nlohmann::json(lease.scopes).dump());
  s.bind(7, to_ms(lease.issued_at));
  s.bind(8, to_ms(lease.expires_at));
  s.bind(9, lease.target.dump());
  s.bind(10, std::string(state_name(lease.state)));
  s.bind(11, to_ms(Clock::now()));
  if (s.step() != SQLITE_DONE) return storage::sqlite_error(db_, "credential leases", "adding a lease");
  return {};
}

Status SqliteLeaseStore::update(const Lease& lease) {
  std::lock_guard lock(mu_);
  Statement s(update_);
  if (!s.ok()) return storage::sqlite_error(db_, "credential leases", "updating a lease");
  s.bind(1, lease.id);
  s.bind(2, nlohmann::json(lease.scopes).dump());
  s.bind(3, to_ms(lease.issued_at));
  s.bind(4, to_ms(lease.expires_at));
  s.bind(5, std::string(state_name(lease.state)));
  s.bind(6, to_ms(Clock::now()));
  if (s.step() != SQLITE_DONE) return storage::sqlite_error(db_, "credential leases", "updating a lease");
  if (sqlite3_changes(db_) != 1) return Error::make("storage", "credential leases: no lease " + lease.id);
  return {};
}

Result<std::vector<Lease>> SqliteLeaseStore::outstanding() {
  std::lock_guard lock(mu_);
  const std::string sql = std::string("SELECT ") + kColumns + " FROM leases WHERE state != 'revoked' ORDER BY issued_ms";
  Statement s(db_, sql.c_str());
  if (!s.ok()) return storage::sqlite_error(db_, "credential leases", "listing leases");
  std::vector<Lease> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(lease_of(s));
  if (rc != SQLITE_DONE) return storage::sqlite_error(db_, "credential leases", "listing leases");
  return out;
}

Result<std::vector<Lease>> SqliteLeaseStore::of_invocation(const std::string& invocation_id) {
  std::lock_guard lock(mu_);
  const std::string sql = std::string("SELECT ") + kColumns + " FROM leases WHERE invocation_id = ?1 ORDER BY issued_ms";
  Statement s(db_, sql.c_str());
  if (!s.ok()) return storage::sqlite_error(db_, "credential leases", "listing leases");
  s.bind(1, invocation_id);
  std::vector<Lease> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(lease_of(s));
  if (rc != SQLITE_DONE) return storage::sqlite_error(db_, "credential leases", "listing leases");
  return out;
}

}  // namespace airlock::creds
