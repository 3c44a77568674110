// Where the sessions a daemon holds are recorded, one row each, written before the session's
// "created" record and removed after its "ended" one, so that a daemon that dies leaves rows
// naming exactly the sessions it held. Two implementations behind one interface:
// - SQLite (<dataDir>/state.db, one daemon: session_store_sqlite.cpp): what rows a start finds
//   are the sessions of a predecessor that died without ending them; each is recorded as
//   ended, reason "aborted" (its sandbox died with that daemon: PDEATHSIG and its pid
//   namespace; its cgroups are removed at start).
// - PostgreSQL (storage.postgres, several replicas: session_store_pg.hpp): each row also names
//   the replica that holds the session, so another replica forwards requests for it there,
//   and a dead replica's sessions are recorded as aborted by failover.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace airlock::server {

struct SessionRow {
  std::string id;
  std::string template_name;
  std::string principal;
  std::string issuer, sub;
  std::int64_t created_ms = 0;
};

class SessionStore {
 public:
  // SQLite at `path` (opened, its table created when missing). Errors: "storage".
  static Result<std::unique_ptr<SessionStore>> open(const std::string& path);
  virtual ~SessionStore() = default;

  virtual Status add(const SessionRow& row) = 0;  // durable when it returns ok
  virtual Status remove(const std::string& id) = 0;
  // The rows of the sessions this store's daemon holds (SQLite: every row of the file).
  virtual Result<std::vector<SessionRow>> all() = 0;
};

}  // namespace airlock::server
