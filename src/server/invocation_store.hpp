// The daemon's state: every invocation, in SQLite beside the audit log. A row is written as
// "running" before a tool runs and updated with its response; rows still "running" when the
// daemon starts are invocations a killed daemon left, and are recorded as aborted.
#pragma once

#include <memory>
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

  Status begin(const std::string& id, const std::string& tool);
  Status finish(const std::string& id, const std::string& status, const nlohmann::json& response);
  // The stored response ({"id", "status": "running"} while it runs), or nullopt.
  std::optional<nlohmann::json> get(const std::string& id);

  struct Running {
    std::string id, tool;
  };
  std::vector<Running> running();

 private:
  explicit InvocationStore(sqlite3* db) : db_(db) {}
  Status exec(const std::string& sql);
  std::mutex mu_;
  sqlite3* db_;
};

}  // namespace airlock::server
