// The table mcp_pins of state.db. The daemon and `airlock mcp pins` open it at the same time:
// WAL lets the CLI read while the daemon writes, and the busy timeout makes each wait for
// the other's write instead of failing. Each change is one statement, so it is atomic.
#include "mcp/pin_store.hpp"

#include <sqlite3.h>

#include <chrono>
#include <mutex>

#include "common/utc_time.hpp"
#include "storage/sqlite_state.hpp"
#include "storage/state_location.hpp"

namespace airlock::mcp {
namespace {

using Statement = storage::SqliteStatement;

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS mcp_pins (server TEXT NOT NULL, tool TEXT NOT NULL,"
    " sha256 TEXT NOT NULL, pinned_at TEXT NOT NULL, pending_sha256 TEXT NOT NULL DEFAULT '',"
    " pending_json TEXT NOT NULL DEFAULT '', pending_since TEXT NOT NULL DEFAULT '',"
    " PRIMARY KEY (server, tool))";
constexpr const char* kColumns =
    "SELECT server, tool, sha256, pinned_at, pending_sha256, pending_json, pending_since FROM "
    "mcp_pins";
// The pending listing's first sighting is kept while the same listing is seen again.
constexpr const char* kRecordPending =
    "UPDATE mcp_pins SET pending_since = CASE WHEN pending_sha256 = ?3 THEN pending_since ELSE ?5 "
    "END,"
    " pending_sha256 = ?3, pending_json = ?4 WHERE server = ?1 AND tool = ?2";
// Only what is pending, and only the listing the admin saw when a hash is given.
constexpr const char* kApprove =
    "UPDATE mcp_pins SET sha256 = pending_sha256, pinned_at = ?4, pending_sha256 = '',"
    " pending_json = '', pending_since = '' WHERE server = ?1 AND tool = ?2"
    " AND pending_sha256 <> '' AND (?3 = '' OR pending_sha256 = ?3)";

Error db_error(sqlite3* db, const std::string& what) {
  return Error::make("storage", "tool pins: " + what + ": " + sqlite3_errmsg(db));
}

// 2026-12-01T18:04:05Z
std::string utc_now() {
  return rfc3339_seconds(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()));
}

Pin pin_of(const Statement& row) {
  Pin p;
  p.server = row.text(0);
  p.tool = row.text(1);
  p.sha256 = row.text(2);
  p.pinned_at = row.text(3);
  p.pending_sha256 = row.text(4);
  if (auto json = row.text(5); !json.empty())
    p.pending = nlohmann::json::parse(json, nullptr, false);
  p.pending_since = row.text(6);
  return p;
}

// The SQLite store: one connection, one mutex; each change one statement.
class SqlitePinStore final : public PinStore {
 public:
  explicit SqlitePinStore(sqlite3* db) : db_(db) {}
  ~SqlitePinStore() override { sqlite3_close(db_); }
  std::optional<Pin> get(const std::string& server, const std::string& tool) override;
  std::vector<Pin> list() override;
  Result<bool> pin_if_new(const std::string& server, const std::string& tool, const std::string& sha256) override;
  Status record_pending(const std::string& server, const std::string& tool, const std::string& sha256,
                        const nlohmann::json& listing) override;
  Status approve(const std::string& server, const std::string& tool, const std::string& expected_sha256) override;

 private:
  sqlite3* db_;
  std::mutex mu_;
};

}  // namespace

Result<std::unique_ptr<PinStore>> PinStore::open(const std::string& db_path) {
  auto db = storage::open_sqlite_state(db_path, kSchema, "tool pins");
  if (!db) return db.error();
  return std::unique_ptr<PinStore>(std::make_unique<SqlitePinStore>(db->release()));
}

Result<std::unique_ptr<PinStore>> PinStore::open(const storage::StateLocation& location) {
  if (location.is_postgres()) return open_postgres_pin_store(location);
  return open(location.sqlite_path);
}

std::optional<Pin> SqlitePinStore::get(const std::string& server, const std::string& tool) {
  std::lock_guard lock(mu_);
  Statement s(db_, (std::string(kColumns) + " WHERE server = ?1 AND tool = ?2").c_str());
  s.bind(1, server);
  s.bind(2, tool);
  if (!s.ok() || s.step() != SQLITE_ROW) return std::nullopt;
  return pin_of(s);
}

std::vector<Pin> SqlitePinStore::list() {
  std::lock_guard lock(mu_);
  Statement s(db_, (std::string(kColumns) + " ORDER BY server, tool").c_str());
  std::vector<Pin> out;
  while (s.ok() && s.step() == SQLITE_ROW) out.push_back(pin_of(s));
  return out;
}

Result<bool> SqlitePinStore::pin_if_new(const std::string& server, const std::string& tool,
                                  const std::string& sha256) {
  std::lock_guard lock(mu_);
  Statement s(db_,
              "INSERT INTO mcp_pins (server, tool, sha256, pinned_at) VALUES (?1, ?2, ?3, ?4)"
              " ON CONFLICT (server, tool) DO NOTHING");
  s.bind(1, server);
  s.bind(2, tool);
  s.bind(3, sha256);
  s.bind(4, utc_now());
  if (!s.ok() || s.step() != SQLITE_DONE)
    return db_error(db_, "pinning " + server + "." + tool);
  return sqlite3_changes(db_) == 1;
}

Status SqlitePinStore::record_pending(const std::string& server, const std::string& tool,
                                const std::string& sha256, const nlohmann::json& listing) {
  std::lock_guard lock(mu_);
  Statement s(db_, kRecordPending);
  s.bind(1, server);
  s.bind(2, tool);
  s.bind(3, sha256);
  s.bind(4, listing.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  s.bind(5, utc_now());
  if (!s.ok() || s.step() != SQLITE_DONE)
    return db_error(db_, "recording the new listing of " + server + "." + tool);
  if (sqlite3_changes(db_) != 1)
    return Error::make("not_found", "tool " + server + "." + tool + " has no pin to differ from");
  return {};
}

Status SqlitePinStore::approve(const std::string& server, const std::string& tool,
                         const std::string& expected_sha256) {
  {
    std::lock_guard lock(mu_);
    Statement s(db_, kApprove);
    s.bind(1, server);
    s.bind(2, tool);
    s.bind(3, expected_sha256);
    s.bind(4, utc_now());
    if (!s.ok() || s.step() != SQLITE_DONE)
      return db_error(db_, "approving " + server + "." + tool);
    if (sqlite3_changes(db_) == 1) return {};
  }
  return why_not_approved(server, tool, expected_sha256);
}

Status PinStore::why_not_approved(const std::string& server, const std::string& tool,
                                  const std::string& expected_sha256) {
  const std::string name = server + "." + tool;
  auto pin = get(server, tool);
  if (!pin)
    return Error::make("not_found",
                       "no pin for tool " + name + " (server " + server + ", tool " + tool + ")");
  if (pin->pending_sha256.empty())
    return Error::make("not_pending", "tool " + name +
                                          " has no pending change to approve (pinned " +
                                          pin->sha256 + " on " + pin->pinned_at + ")");
  return Error::make("pin_mismatch", "the pending listing of tool " + name + " is " +
                                         pin->pending_sha256 + ", not " + expected_sha256 +
                                         ": nothing approved");
}

}  // namespace airlock::mcp
