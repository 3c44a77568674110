#include "pipeline/quotas/quota_book_pg.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "audit/invocation_record.hpp"
#include "storage/pg_schema.hpp"

namespace airlock::pipeline {
namespace {

using storage::pg::Database;
using storage::pg::Params;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS quota_accounts(
  holder text PRIMARY KEY, tokens double precision, refilled_at timestamptz);
CREATE TABLE IF NOT EXISTS quota_holds(
  hold_id text NOT NULL, holder text NOT NULL, replica text NOT NULL, admitted_at timestamptz NOT NULL,
  PRIMARY KEY (hold_id, holder));
CREATE INDEX IF NOT EXISTS quota_holds_holder ON quota_holds (holder);
CREATE INDEX IF NOT EXISTS quota_holds_replica ON quota_holds (replica);
CREATE TABLE IF NOT EXISTS quota_cpu(
  holder text NOT NULL, slot bigint NOT NULL, charged_at timestamptz NOT NULL,
  seconds double precision NOT NULL, PRIMARY KEY (holder, slot));
)sql";

// CPU older than this is in no window (windows are at most 24h): not read, and deleted by
// the next charge of its account.
constexpr const char* kCpuHorizon = "interval '25 hours'";

// An account's key as PostgreSQL text can hold it: a user key's NUL (quota_user_key) cannot
// be stored, so "u:ISSUER\0SUB" becomes "u:" + the JSON array [ISSUER, SUB]: unambiguous.
std::string db_key(const std::string& key) {
  const auto nul = key.find('\0');
  if (key.rfind("u:", 0) != 0 || nul == std::string::npos) return key;
  return "u:" + nlohmann::json::array({key.substr(2, nul - 2), key.substr(nul + 1)})
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string placeholder(std::size_t n) { return "$" + std::to_string(n); }

// "($1),($2)" for `count` parameters from `first`.
std::string placeholders(std::size_t first, std::size_t count, bool parenthesised) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i)
    out += (i ? "," : "") + (parenthesised ? "(" + placeholder(first + i) + ")" : placeholder(first + i));
  return out;
}

}  // namespace

struct PostgresQuotaBook::Account {
  std::string holder;
  pipeline::QuotaUsage usage;
  std::string now;  // the database's clock_timestamp() the usage was read at
};

Result<std::shared_ptr<PostgresQuotaBook>> PostgresQuotaBook::open(const Database::Location& location,
                                                                   std::string replica, Options options) {
  std::vector<std::unique_ptr<Database>> dbs;
  for (int i = 0; i < std::max(1, options.connections); ++i) {
    auto db = Database::open(location, "the quota store (state database)");
    if (!db) return db.error();
    dbs.push_back(std::move(*db));
  }
  if (auto made = storage::pg::create_schema(*dbs.front(), "create the quota tables", kSchema); !made)
    return made.error();
  return std::shared_ptr<PostgresQuotaBook>(new PostgresQuotaBook(std::move(dbs), std::move(replica), options));
}

// Locks the rows of `holders` (sorted: every replica locks in the same order), then reads
// them in a statement of its own: its snapshot sees what the lock's previous owner committed.
Result<std::vector<PostgresQuotaBook::Account>> PostgresQuotaBook::lock_and_read(Database::Tx& tx,
                                                                                const std::vector<std::string>& holders) {
  Params params(holders.begin(), holders.end());
  auto locked = tx.exec("lock the quota accounts",
                        "INSERT INTO quota_accounts (holder) VALUES " + placeholders(1, holders.size(), true) +
                            " ON CONFLICT (holder) DO UPDATE SET holder = excluded.holder",
                        params);
  if (!locked) return locked.error();
  auto rows = tx.exec(
      "read the quota accounts",
      "SELECT a.holder, a.tokens, extract(epoch FROM n.now - a.refilled_at), n.now, k.held,"
      " extract(epoch FROM n.now - c.charged_at), c.seconds"
      " FROM quota_accounts a CROSS JOIN (SELECT clock_timestamp() AS now) n"
      " CROSS JOIN LATERAL (SELECT count(*) AS held FROM quota_holds h WHERE h.holder = a.holder) k"
      " LEFT JOIN quota_cpu c ON c.holder = a.holder AND c.charged_at > n.now - " + std::string(kCpuHorizon) +
      " WHERE a.holder IN (" + placeholders(1, holders.size(), false) + ") ORDER BY c.charged_at",
      params);
  if (!rows) return rows.error();
  std::vector<Account> accounts(holders.size());
  for (int r = 0; r < rows->rows(); ++r) {
    const auto at = std::find(holders.begin(), holders.end(), rows->value(r, 0)) - holders.begin();
    Account& a = accounts[static_cast<std::size_t>(at)];
    a.holder = rows->value(r, 0);
    a.now = rows->value(r, 3);
    a.usage.in_flight = static_cast<std::uint32_t>(std::stoul(rows->value(r, 4)));
    if (!rows->is_null(r, 1)) {
      a.usage.tokens = std::stod(rows->value(r, 1));
      a.usage.seconds_since_refill = std::stod(rows->value(r, 2));
    }
    if (!rows->is_null(r, 5)) a.usage.cpu.push_back({std::stod(rows->value(r, 5)), std::stod(rows->value(r, 6))});
  }
  return accounts;
}

namespace {

// One statement: each bucket with a rate loses the admitted call's token, and the hold's rows
// are inserted, at the instant the accounts were read.
Status write_admission(Database::Tx& tx, const std::string& hold_id, const std::string& replica,
                       const std::vector<std::string>& holders, const std::vector<pipeline::QuotaDecision>& decisions,
                       const std::string& now) {
  Params params(holders.begin(), holders.end());
  params.insert(params.end(), {hold_id, replica, now});
  const std::size_t id_at = holders.size() + 1;
  std::string buckets, holds;
  for (std::size_t i = 0; i < holders.size(); ++i) {
    holds += (i ? "," : "") + std::string("($") + std::to_string(id_at) + ", " + placeholder(i + 1) + ", " +
             placeholder(id_at + 1) + ", " + placeholder(id_at + 2) + "::timestamptz)";
    if (!decisions[i].tokens) continue;
    params.emplace_back(number(*decisions[i].tokens - 1));
    buckets += std::string(buckets.empty() ? "WITH " : ", ") + "b" + std::to_string(i) +
               " AS (UPDATE quota_accounts SET tokens = " + placeholder(params.size()) + "::float8, refilled_at = " +
               placeholder(id_at + 2) + "::timestamptz WHERE holder = " + placeholder(i + 1) + ")";
  }
  auto written = tx.exec("record the admission", buckets + " INSERT INTO quota_holds (hold_id, holder, replica,"
                                                           " admitted_at) VALUES " + holds, params);
  if (!written) return written.error();
  return {};
}

}  // namespace

pipeline::QuotaAdmission PostgresQuotaBook::admit(const policy::QuotasConfig& quotas, const std::string& principal,
                                                  const std::string& user) {
  auto refs = pipeline::quota_accounts(quotas, principal, user);
  if (refs.empty()) return std::make_shared<pipeline::QuotaHold>(nullptr);  // nobody to count against
  // Accounts with no quota of their own are bounded only by this replica's capacity
  // (fallback_concurrent: its workers and queue): counted here, at no round trip.
  if (std::none_of(refs.begin(), refs.end(), [](const auto& r) { return r.limits.limits_anything(); }))
    return local_->admit(quotas, principal, user);
  (void)flush_pending();  // a release the database missed frees its place first
  for (auto& r : refs) r.key = db_key(r.key);
  std::sort(refs.begin(), refs.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  std::vector<std::string> holders;
  for (const auto& r : refs) holders.push_back(r.key);
  const std::string hold_id = audit::new_invocation_id();
  std::optional<pipeline::QuotaRefusal> refused;
  Status done = db().transaction("admit a call under its quotas", [&](Database::Tx& tx) -> Status {
    refused.reset();
    if (!options_.synchronous_commit)
      if (auto set = tx.exec("relax the commit", "SET LOCAL synchronous_commit = off"); !set) return set.error();
    auto accounts = lock_and_read(tx, holders);
    if (!accounts) return accounts.error();
    std::vector<pipeline::QuotaDecision> decisions;
    for (std::size_t i = 0; i < refs.size(); ++i) {
      decisions.push_back(pipeline::decide_quota((*accounts)[i].usage, refs[i].limits, refs[i].holder,
                                                 quotas.fallback_concurrent));
      if (decisions.back().refusal) {
        refused = decisions.back().refusal;  // nothing used up
        return {};
      }
    }
    return write_admission(tx, hold_id, replica_, holders, decisions, accounts->front().now);
  });
  if (!done) return done.error();
  if (refused) return *refused;
  return std::make_shared<pipeline::QuotaHold>([book = shared_from_this(), hold_id] { book->release(hold_id); });
}

// One statement; `relaxed` with synchronous_commit off (Options), in a transaction that says so.
Status PostgresQuotaBook::write(const std::string& step, const std::string& sql, const Params& params, bool relaxed) {
  if (!relaxed || options_.synchronous_commit) {
    auto done = db().exec(step, sql, params);
    if (!done) return done.error();
    return {};
  }
  return db().transaction(step, [&](Database::Tx& tx) -> Status {
    if (auto set = tx.exec(step + " (relax the commit)", "SET LOCAL synchronous_commit = off"); !set) return set.error();
    if (auto done = tx.exec(step, sql, params); !done) return done.error();
    return {};
  });
}

// Always committed synchronously: a release lost in a database crash would bring its hold
// back for good (its replica lives on, so failover never takes it): a place leaked.
Status PostgresQuotaBook::write_release(const std::string& hold_id) {
  return write("release quota hold " + hold_id, "DELETE FROM quota_holds WHERE hold_id = $1", {hold_id}, false);
}

void PostgresQuotaBook::release(const std::string& hold_id) {
  if (write_release(hold_id)) return;
  std::lock_guard lock(pending_mu_);  // kept: the place must not stay taken forever
  pending_releases_.push_back(hold_id);
}

// The charge lands in the slot of the database's clock it arrives at; usage older than the
// window is deleted on the way (it counts in no window of this length).
Status PostgresQuotaBook::write_charge(const Charge& c) {
  return write(
      "charge CPU-seconds to " + c.holder,
      "WITH gone AS (DELETE FROM quota_cpu WHERE holder = $1 AND charged_at <= clock_timestamp() - " +
          std::string(kCpuHorizon) + ")"
          " INSERT INTO quota_cpu (holder, slot, charged_at, seconds) VALUES ($1,"
          " floor(extract(epoch FROM clock_timestamp()) * 1000 / $2::bigint)::bigint, clock_timestamp(), $3::float8)"
          " ON CONFLICT (holder, slot) DO UPDATE SET seconds = quota_cpu.seconds + excluded.seconds",
      {c.holder, std::to_string(c.slot_ms), number(c.seconds)}, true);
}

void PostgresQuotaBook::charge_cpu(const policy::QuotasConfig& quotas, const std::string& principal,
                                   const std::string& user, double cpu_seconds) {
  if (!(cpu_seconds > 0)) return;
  for (const auto& r : pipeline::quota_accounts(quotas, principal, user)) {
    if (!r.limits.cpu_seconds) continue;  // nothing to count against
    const long long slot_ms = std::max<long long>(1, r.limits.cpu_seconds->per.count() / pipeline::kCpuEntriesPerWindow);
    Charge charge{db_key(r.key), slot_ms, cpu_seconds};
    if (write_charge(charge)) continue;
    std::lock_guard lock(pending_mu_);  // kept: charged later, in a later slot (never lost)
    pending_charges_.push_back(std::move(charge));
  }
}

Status PostgresQuotaBook::flush_pending() {
  std::lock_guard lock(pending_mu_);
  for (auto it = pending_releases_.begin(); it != pending_releases_.end(); it = pending_releases_.erase(it))
    if (Status s = write_release(*it); !s) return s;
  for (auto it = pending_charges_.begin(); it != pending_charges_.end(); it = pending_charges_.erase(it))
    if (Status s = write_charge(*it); !s) return s;
  return {};
}

Result<int> PostgresQuotaBook::release_dead_replicas() {
  auto gone = db().exec("release the quota holds of dead replicas",
                        "DELETE FROM quota_holds h WHERE NOT EXISTS (SELECT 1 FROM replicas r WHERE r.id = h.replica)");
  if (!gone) return gone.error();
  return std::atoi(PQcmdTuples(gone->result.get()));
}

std::uint32_t PostgresQuotaBook::in_flight(const std::string& principal, const std::string& user) {
  const std::string key = db_key(user.empty() ? "p:" + principal : "u:" + user);
  auto rows = db().exec("count quota holds", "SELECT count(*) FROM quota_holds WHERE holder = $1", {key});
  const std::uint32_t local = local_->in_flight(principal, user);
  if (!rows || rows->rows() == 0) return local;
  return local + static_cast<std::uint32_t>(std::stoul(rows->value(0, 0)));
}

}  // namespace airlock::pipeline
