// The daemon's state: every invocation, in SQLite beside the audit log. A row is written as
// "running" before a tool runs and updated with its response; rows still "running" when the
// daemon starts are invocations a killed daemon left, and are recorded as aborted.
#pragma once

#include <memory>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

struct sqlite3;

namespace airlock::server {

class InvocationStore {
 public:
  static Result<std::unique_ptr<InvocationStore>> open(const std::string& path);
  ~InvocationStore();

  // Who an invocation is of: the agent's principal and the user (both "" when absent).
  struct Owner {
    std::string principal, issuer, sub;
  };
  Status begin(const std::string& id, const std::string& tool, const Owner& owner = {});
  Status finish(const std::string& id, const std::string& status, const nlohmann::json& response);
  // The stored response ({"id", "status": "running"} while it runs), or nullopt.
  std::optional<nlohmann::json> get(const std::string& id);

  // GET /v1/invocations: the newest first, at most `limit`, each a summary (id, tool, status,
  // actor, subject, started_at, finished_at, verdict, error_kind). Empty filters match all;
  // `owner` set: only that owner's rows (an agent: its principal; a user: issuer and sub).
  struct Query {
    std::string tool, user, agent, status;  // status as stored: ok, error, denied, suspended, running
    std::optional<std::int64_t> since_ms, until_ms;
    std::optional<Owner> owner;
    int limit = 50;
  };
  Result<nlohmann::json> list(const Query& query);

  struct Running {
    std::string id, tool;
  };
  std::vector<Running> running();

 private:
  explicit InvocationStore(sqlite3* db) : db_(db) {}
  Status exec(const std::string& sql);
  Status migrate();
  std::mutex mu_;
  sqlite3* db_;
};

}  // namespace airlock::server
