// The tool pins in PostgreSQL (storage.postgres): one table every replica and `airlock mcp
// pins --config` read and write, so a pin approved anywhere is the pin everywhere. Each
// change is one statement (atomic; a conditional UPDATE re-checks its condition after a
// concurrent one commits).
#include <chrono>

#include "common/utc_time.hpp"
#include "mcp/pin_store.hpp"
#include "storage/pg_schema.hpp"
#include "storage/state_location.hpp"

namespace airlock::mcp {
namespace {

namespace pg = storage::pg;

constexpr const char* kPgSchema = R"sql(
CREATE TABLE IF NOT EXISTS mcp_pins (server text NOT NULL, tool text NOT NULL,
  sha256 text NOT NULL, pinned_at text NOT NULL, pending_sha256 text NOT NULL DEFAULT '',
  pending_json text NOT NULL DEFAULT '', pending_since text NOT NULL DEFAULT '',
  PRIMARY KEY (server, tool));
)sql";
constexpr const char* kPgColumns =
    "SELECT server, tool, sha256, pinned_at, pending_sha256, pending_json, pending_since FROM mcp_pins";

std::string pinned_at_now() {
  return rfc3339_seconds(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()));
}

Pin pin_of(const pg::Reply& r, int row) {
  Pin p;
  p.server = r.value(row, 0);
  p.tool = r.value(row, 1);
  p.sha256 = r.value(row, 2);
  p.pinned_at = r.value(row, 3);
  p.pending_sha256 = r.value(row, 4);
  if (auto json = r.value(row, 5); !json.empty()) p.pending = nlohmann::json::parse(json, nullptr, false);
  p.pending_since = r.value(row, 6);
  return p;
}

class PgPinStore final : public PinStore {
 public:
  explicit PgPinStore(std::unique_ptr<pg::Database> db) : db_(std::move(db)) {}

  std::optional<Pin> get(const std::string& server, const std::string& tool) override {
    auto rows = db_->exec("reading a pin", std::string(kPgColumns) + " WHERE server = $1 AND tool = $2", {server, tool});
    if (!rows || rows->rows() == 0) return std::nullopt;
    return pin_of(*rows, 0);
  }

  std::vector<Pin> list() override {
    auto rows = db_->exec("listing pins", std::string(kPgColumns) + " ORDER BY server, tool");
    std::vector<Pin> out;
    if (rows)
      for (int i = 0; i < rows->rows(); ++i) out.push_back(pin_of(*rows, i));
    return out;
  }

  Result<bool> pin_if_new(const std::string& server, const std::string& tool, const std::string& sha256) override {
    auto rows = db_->exec("pinning " + server + "." + tool,
                          "INSERT INTO mcp_pins (server, tool, sha256, pinned_at) VALUES ($1, $2, $3, $4)"
                          " ON CONFLICT (server, tool) DO NOTHING RETURNING server",
                          {server, tool, sha256, pinned_at_now()});
    if (!rows) return rows.error();
    return rows->rows() == 1;
  }

  Status record_pending(const std::string& server, const std::string& tool, const std::string& sha256,
                        const nlohmann::json& listing) override {
    // The pending listing's first sighting is kept while the same listing is seen again.
    auto rows = db_->exec("recording the new listing of " + server + "." + tool,
                          "UPDATE mcp_pins SET pending_since = CASE WHEN pending_sha256 = $3 THEN pending_since"
                          " ELSE $5 END, pending_sha256 = $3, pending_json = $4 WHERE server = $1 AND tool = $2"
                          " RETURNING server",
                          {server, tool, sha256,
                           listing.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), pinned_at_now()});
    if (!rows) return rows.error();
    if (rows->rows() != 1)
      return Error::make("not_found", "tool " + server + "." + tool + " has no pin to differ from");
    return {};
  }

  Status approve(const std::string& server, const std::string& tool, const std::string& expected_sha256) override {
    // Only what is pending, and only the listing the admin saw when a hash is given.
    auto rows = db_->exec("approving " + server + "." + tool,
                          "UPDATE mcp_pins SET sha256 = pending_sha256, pinned_at = $4, pending_sha256 = '',"
                          " pending_json = '', pending_since = '' WHERE server = $1 AND tool = $2"
                          " AND pending_sha256 <> '' AND ($3 = '' OR pending_sha256 = $3) RETURNING server",
                          {server, tool, expected_sha256, pinned_at_now()});
    if (!rows) return rows.error();
    if (rows->rows() == 1) return {};
    return why_not_approved(server, tool, expected_sha256);
  }

 private:
  std::unique_ptr<pg::Database> db_;
};

}  // namespace

Result<std::unique_ptr<PinStore>> open_postgres_pin_store(const storage::StateLocation& location) {
  auto db = pg::Database::open(location.postgres, "the state database (tool pins)");
  if (!db) return db.error();
  if (auto made = pg::create_schema(**db, "creating the pins table", kPgSchema); !made) return made.error();
  return std::unique_ptr<PinStore>(std::make_unique<PgPinStore>(std::move(*db)));
}

}  // namespace airlock::mcp
