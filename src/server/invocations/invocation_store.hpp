// The daemon's state: every invocation. A row is written as "running" before a tool runs and
// updated with its response. Two implementations behind one interface: SQLite (<dataDir>/
// state.db, one daemon; rows still "running" when it starts are invocations a killed daemon
// left, recorded as aborted by Daemon::State::recover) and PostgreSQL (storage.postgres,
// several replicas; each row names the replica that runs it, and a dead replica's rows are
// recorded as aborted by another: server/replicas/replicas.hpp). pipeline/storage_locations.hpp says which.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "pipeline/authenticator.hpp"
#include "storage/state_location.hpp"

namespace airlock::server {

class InvocationStore {
 public:
  // The store the location names; its tables are created when missing.
  static Result<std::unique_ptr<InvocationStore>> open(const storage::StateLocation& location);
  // SQLite at `path` (tools and tests that read a data directory's state.db).
  static Result<std::unique_ptr<InvocationStore>> open(const std::string& path);
  virtual ~InvocationStore() = default;

  // Who an invocation is of: the agent's principal and the user (both "" when absent).
  struct Owner {
    std::string principal, issuer, sub;
  };
  // Errors: code "storage_unavailable" (the database cannot be reached) or "storage".
  virtual Status begin(const std::string& id, const std::string& tool, const Owner& owner = {}) = 0;
  virtual Status finish(const std::string& id, const std::string& status, const nlohmann::json& response) = 0;
  // The stored response ({"id", "status": "running"} while it runs), or nullopt.
  virtual std::optional<nlohmann::json> get(const std::string& id) = 0;
  // Whose the row is, as begin() recorded it (whatever its response says, or while it has
  // none), or nullopt when there is no such row.
  virtual std::optional<Owner> owner(const std::string& id) = 0;
  // When it began (ms since the epoch), or nullopt when there is no such row.
  virtual std::optional<std::int64_t> started_ms(const std::string& id) = 0;

  // GET /v1/invocations: the newest first, at most `limit`, each a summary (id, tool, status,
  // actor, subject, started_at, finished_at, verdict, error_kind). Empty filters match all;
  // `owner` set: only that owner's rows (an agent: its principal; a user: issuer and sub; an
  // agent acting for a user: both).
  struct Query {
    std::string tool, user, agent, status;  // status as stored: ok, error, denied, suspended, running
    std::optional<std::int64_t> since_ms, until_ms;
    std::optional<Owner> owner;
    int limit = 50;
  };
  virtual Result<nlohmann::json> list(const Query& query) = 0;

  struct Running {
    std::string id, tool;
  };
  // Every row still "running".
  virtual std::vector<Running> running() = 0;
};

// Whether `caller` owns an invocation of `owner`: an agent the invocations it made (for
// whichever user; acting for a user, those it made for that user); a user calling directly,
// those made for them. By the row's owner as it began, not its response: a row still running
// (or resumed after its approval) has none.
bool owns_invocation(const pipeline::Caller& caller, const InvocationStore::Owner& owner);

namespace detail {

// What both implementations share: the columns a response fills, and a listed row.
struct ResponseColumns {
  std::optional<std::string> principal, subject_issuer, subject_sub;  // nullopt: keep the row's
  std::string verdict, error_kind;                                    // "" when it has none
};
ResponseColumns response_columns(const nlohmann::json& response);

struct ListedRow {
  std::string id, tool, status, principal, issuer, sub, verdict, error_kind;
  std::int64_t started_ms = 0;
  std::optional<std::int64_t> finished_ms;
};
nlohmann::json summary(const ListedRow& row);

// The WHERE clause of a query; `params` gets its values in order, `placeholder(n)` writes the
// n-th (1-based) parameter's marker ("?" for SQLite, "$n" for PostgreSQL).
std::string where_clause(const InvocationStore::Query& q, std::vector<std::string>& params,
                         std::string (*placeholder)(std::size_t));

std::int64_t now_ms();

}  // namespace detail
}  // namespace airlock::server
