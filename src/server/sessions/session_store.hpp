// The sessions a daemon holds, one row each in <dataDir>/state.db (SQLite, beside the
// replica's own sandboxes, also with storage.postgres: a session lives on one host). A row is
// written before the session's "created" record and removed after its "ended" one, so what
// rows a start finds are the sessions of a predecessor that died without ending them: each is
// recorded as ended, reason "aborted" (its sandbox died with that daemon: PDEATHSIG and its pid
// namespace; its cgroups are removed at start).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "storage/sqlite_state.hpp"

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
  // Opens (creating) `path`. Errors: "storage".
  static Result<std::unique_ptr<SessionStore>> open(const std::string& path);
  Status add(const SessionRow& row);  // durable when it returns ok
  Status remove(const std::string& id);
  Result<std::vector<SessionRow>> all();

 private:
  explicit SessionStore(storage::SqliteConnection db) : db_(std::move(db)) {}
  std::mutex mu_;
  storage::SqliteConnection db_;
};

}  // namespace airlock::server
