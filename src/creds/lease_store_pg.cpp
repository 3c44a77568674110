// The credential leases in PostgreSQL (storage.postgres): every replica's in one table, so
// that a replica taking over from a dead one finds what it must revoke (of_invocation,
// outstanding). Each change is one statement; synchronous_commit is on (pg::Database), so an
// acknowledged lease survives the database server's crash as it survives the daemon's.
#include "creds/lease_store.hpp"
#include "storage/pg_schema.hpp"
#include "storage/state_location.hpp"

namespace airlock::creds {
namespace {

namespace pg = storage::pg;

constexpr const char* kLeasesPgSchema = R"sql(
CREATE TABLE IF NOT EXISTS leases (id text PRIMARY KEY, invocation_id text NOT NULL,
  tool text NOT NULL, env text NOT NULL, provider text NOT NULL, scopes text NOT NULL,
  issued_ms bigint NOT NULL, expires_ms bigint NOT NULL, target text NOT NULL,
  state text NOT NULL, updated_ms bigint NOT NULL, seq bigserial);
CREATE INDEX IF NOT EXISTS leases_by_state ON leases (state);
CREATE INDEX IF NOT EXISTS leases_by_invocation ON leases (invocation_id);
)sql";

constexpr const char* kSelect =
    "SELECT id, invocation_id, tool, env, provider, scopes, issued_ms, expires_ms, target, state FROM leases ";

std::string ms_of(Clock::time_point t) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}
Clock::time_point from_ms(const std::string& ms) { return Clock::time_point(std::chrono::milliseconds(std::stoll(ms))); }

Lease lease_of(const pg::Reply& r, int row) {
  Lease l;
  l.id = r.value(row, 0);
  l.invocation_id = r.value(row, 1);
  l.tool = r.value(row, 2);
  l.env = r.value(row, 3);
  l.provider = r.value(row, 4);
  auto scopes = nlohmann::json::parse(r.value(row, 5), nullptr, false);
  if (scopes.is_array())
    for (const auto& s : scopes)
      if (s.is_string()) l.scopes.push_back(s.get<std::string>());
  l.issued_at = from_ms(r.value(row, 6));
  l.expires_at = from_ms(r.value(row, 7));
  auto target = nlohmann::json::parse(r.value(row, 8), nullptr, false);
  if (target.is_object()) l.target = std::move(target);
  l.state = parse_state(r.value(row, 9)).value_or(Lease::State::leasing);
  return l;
}

std::vector<Lease> leases_of(const pg::Reply& r) {
  std::vector<Lease> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(lease_of(r, i));
  return out;
}

class PgLeaseStore final : public LeaseStore {
 public:
  explicit PgLeaseStore(std::unique_ptr<pg::Database> db) : db_(std::move(db)) {}

  Status add(const Lease& lease) override {
    auto done = db_->exec("adding a lease",
                          "INSERT INTO leases (id, invocation_id, tool, env, provider, scopes, issued_ms, expires_ms,"
                          " target, state, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                          {lease.id, lease.invocation_id, lease.tool, lease.env, lease.provider,
                           nlohmann::json(lease.scopes).dump(), ms_of(lease.issued_at), ms_of(lease.expires_at),
                           lease.target.dump(), std::string(state_name(lease.state)), ms_of(Clock::now())});
    if (!done) return done.error();
    return {};
  }

  Status update(const Lease& lease) override {
    auto done = db_->exec("updating a lease",
                          "UPDATE leases SET scopes = $2, issued_ms = $3, expires_ms = $4, state = $5, updated_ms = $6"
                          " WHERE id = $1 RETURNING id",
                          {lease.id, nlohmann::json(lease.scopes).dump(), ms_of(lease.issued_at),
                           ms_of(lease.expires_at), std::string(state_name(lease.state)), ms_of(Clock::now())});
    if (!done) return done.error();
    if (done->rows() != 1) return Error::make("storage", "credential leases: no lease " + lease.id);
    return {};
  }

  Result<std::vector<Lease>> outstanding() override {
    auto rows = db_->exec("listing leases", std::string(kSelect) + "WHERE state <> 'revoked' ORDER BY issued_ms, seq");
    if (!rows) return rows.error();
    return leases_of(*rows);
  }

  Result<std::vector<Lease>> of_invocation(const std::string& invocation_id) override {
    auto rows = db_->exec("listing leases", std::string(kSelect) + "WHERE invocation_id = $1 ORDER BY issued_ms, seq",
                          {invocation_id});
    if (!rows) return rows.error();
    return leases_of(*rows);
  }

 private:
  std::unique_ptr<pg::Database> db_;
};

}  // namespace

Result<std::unique_ptr<LeaseStore>> open_postgres_lease_store(const storage::StateLocation& location) {
  auto db = pg::Database::open(location.postgres, "the state database (credential leases)");
  if (!db) return db.error();
  if (auto made = pg::create_schema(**db, "creating the leases table", kLeasesPgSchema); !made) return made.error();
  return std::unique_ptr<LeaseStore>(std::make_unique<PgLeaseStore>(std::move(*db)));
}

}  // namespace airlock::creds
