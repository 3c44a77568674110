#include <chrono>

#include "common/digest.hpp"
#include "server/mcp_server/mcp_session_book.hpp"
#include "storage/pg_schema.hpp"
#include "storage/purge_throttle.hpp"

namespace airlock::server {
namespace {

namespace pg = storage::pg;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS mcp_sessions(
  id_sha256 text PRIMARY KEY, principal_sha256 text NOT NULL, revision text NOT NULL,
  opened_ms bigint NOT NULL, used_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS mcp_sessions_used ON mcp_sessions (used_ms);
ALTER TABLE mcp_sessions ADD COLUMN IF NOT EXISTS elicits_urls boolean NOT NULL DEFAULT false;
)sql";

// A use touches the row at most this often: each message would otherwise be a write.
constexpr std::int64_t kTouchEveryMs = 10'000;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class PgMcpSessionBook final : public McpSessionBook {
 public:
  PgMcpSessionBook(std::unique_ptr<pg::Database> db, std::chrono::hours idle)
      : db_(std::move(db)), idle_ms_(std::chrono::duration_cast<std::chrono::milliseconds>(idle).count()) {}

  Status open(const std::string& id, const std::string& principal, const Held& held) override {
    const auto now = now_ms();
    purge_now_and_then(now);
    auto done = db_->exec("recording an MCP session",
                          "INSERT INTO mcp_sessions"
                          " (id_sha256, principal_sha256, revision, opened_ms, used_ms, elicits_urls)"
                          " VALUES ($1, $2, $3, $4, $4, $5)",
                          {sha256_hex(id), sha256_hex(principal), held.revision, std::to_string(now),
                           held.elicits_urls ? "true" : "false"});
    if (!done) return Error::make("storage", "MCP sessions: " + done.error().message);
    return {};
  }

  Result<std::optional<Held>> revision(const std::string& id, const std::string& principal) override {
    const auto now = now_ms();
    // Touched when its last use is older than kTouchEveryMs; read either way.
    auto rows = db_->exec("looking an MCP session up",
                          "UPDATE mcp_sessions SET used_ms = $3 WHERE id_sha256 = $1 AND principal_sha256 = $2"
                          " AND used_ms < $4 AND used_ms >= $5 RETURNING revision, elicits_urls",
                          {sha256_hex(id), sha256_hex(principal), std::to_string(now), std::to_string(now - kTouchEveryMs),
                           std::to_string(now - idle_ms_)});
    if (!rows) return Error::make("storage", "MCP sessions: " + rows.error().message);
    if (rows->rows() == 1) return held(*rows);
    rows = db_->exec("looking an MCP session up",
                     "SELECT revision, elicits_urls FROM mcp_sessions WHERE id_sha256 = $1 AND principal_sha256 = $2 AND used_ms >= $3",
                     {sha256_hex(id), sha256_hex(principal), std::to_string(now - idle_ms_)});
    if (!rows) return Error::make("storage", "MCP sessions: " + rows.error().message);
    if (rows->rows() == 1) return held(*rows);
    return std::optional<Held>();
  }

  Status close(const std::string& id) override {
    auto done = db_->exec("ending an MCP session", "DELETE FROM mcp_sessions WHERE id_sha256 = $1", {sha256_hex(id)});
    if (!done) return Error::make("storage", "MCP sessions: " + done.error().message);
    return {};
  }

 private:
  static std::optional<Held> held(const pg::Reply& rows) {
    return Held{rows.value(0, 0), rows.value(0, 1) == "t"};
  }

  void purge_now_and_then(std::int64_t now) {
    if (!purge_.due(now)) return;
    (void)db_->exec("purging idle MCP sessions", "DELETE FROM mcp_sessions WHERE used_ms < $1",
                    {std::to_string(now - idle_ms_)});
  }

  std::unique_ptr<pg::Database> db_;
  std::int64_t idle_ms_;
  storage::PurgeThrottle purge_;
};

}  // namespace

Result<std::shared_ptr<McpSessionBook>> open_postgres_mcp_session_book(const pg::Database::Location& location,
                                                                      std::chrono::hours idle) {
  auto db = pg::Database::open(location, "the state database (MCP sessions)");
  if (!db) return db.error();
  if (auto made = pg::create_schema(**db, "creating the MCP sessions table", kSchema); !made) return made.error();
  return std::shared_ptr<McpSessionBook>(std::make_shared<PgMcpSessionBook>(std::move(*db), idle));
}

}  // namespace airlock::server
