// One PostgreSQL connection a store shares between its threads: statements with text
// parameters, transactions, and the behaviour every state store wants when the server goes
// away. A statement that finds the connection broken fails with "storage_unavailable"; the
// next use reconnects (at most once a second, so a dead server is not hammered: meanwhile
// statements fail at once with "storage_unavailable"). Any other failure is "storage", with
// the step and the server's (redacted) words. The invocation, approval, lease and pin stores
// each hold one (pipeline/storage_locations.hpp says when).
//
//   auto db = Database::open(location, "the state database");
//   auto rows = (*db)->exec("load approval", "SELECT ... WHERE id = $1", {id});
//   Status s = (*db)->transaction("decide", [&](Database::Tx& tx) -> Status {
//     auto row = tx.exec("lock it", "SELECT ... FOR UPDATE", {id});  ...  });
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "storage/postgres.hpp"

namespace airlock::storage::pg {

// A statement's parameters ($1, $2, ...), as text; nullopt is SQL NULL.
using Params = std::vector<std::optional<std::string>>;

// The password in `path` (one line; a trailing newline is dropped). Error code "storage".
Result<std::string> read_password_file(const std::string& path);

class Database {
 public:
  struct Location {
    std::string url;            // postgresql://user[:password]@host:port/database
    std::string password_file;  // "" when the URL carries the password (or none is needed)
  };
  // Connects; `name` leads every error message ("the state database: ...").
  static Result<std::unique_ptr<Database>> open(const Location& location, std::string name);

  // Runs one statement (in a transaction of its own). Rows as Reply holds them.
  Result<Reply> exec(const std::string& step, const std::string& sql, const Params& params = {});

  // Statements in one transaction, on the connection alone: used only inside transaction().
  class Tx {
   public:
    Result<Reply> exec(const std::string& step, const std::string& sql, const Params& params = {});

   private:
    friend class Database;
    explicit Tx(Database& db) : db_(db) {}
    Database& db_;
  };
  // BEGIN, `body`, COMMIT; ROLLBACK when body returns an error (which is returned) or the
  // commit fails. A serialization failure or deadlock (40001, 40P01) is retried up to 3 times.
  Status transaction(const std::string& step, const std::function<Status(Tx&)>& body);

  const std::string& name() const { return name_; }

 private:
  Database(Location location, std::string password, std::string name);
  Status connect_if_needed();  // with mu_ held
  Result<Reply> run(const std::string& step, const std::string& sql, const Params& params);
  Error failure(const std::string& step, const Reply& reply);

  const Location location_;
  const std::string password_;
  const std::string name_;
  std::vector<std::string> secrets_;
  std::mutex mu_;
  ConnPtr conn_{nullptr, &PQfinish};
  std::chrono::steady_clock::time_point last_attempt_{};
  std::string last_sqlstate_;  // of the last failed statement (transaction() retries on it)
};

}  // namespace airlock::storage::pg
