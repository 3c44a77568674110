// Tool pins (the "rug pull" defence): for each (server, tool) the hash of its name,
// description and schemas as first listed (mcp/listed_tool.hpp pin_sha256), and the listing
// that differs from it, if any, awaiting an admin's approval. A table in the daemon's
// state (state.db, or storage.postgres); `airlock mcp pins list|approve` opens the same.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace airlock::storage {
struct StateLocation;
}

namespace airlock::mcp {

struct Pin {
  std::string server, tool;
  std::string sha256;            // approved
  std::string pinned_at;         // RFC 3339 UTC
  std::string pending_sha256;    // a listing seen since that differs ("" none)
  nlohmann::json pending;        // that listing's {name, description, inputSchema, outputSchema}
  std::string pending_since;
};

// One interface, two stores: SQLite (<dataDir>/state.db) and PostgreSQL (storage.postgres,
// shared by every replica: a pin approved on one is the pin on all).
class PinStore {
 public:
  // The store `location` names (the table created when missing).
  static Result<std::unique_ptr<PinStore>> open(const storage::StateLocation& location);
  // The SQLite store in the file at `db_path`.
  static Result<std::unique_ptr<PinStore>> open(const std::string& db_path);
  virtual ~PinStore() = default;

  virtual std::optional<Pin> get(const std::string& server, const std::string& tool) = 0;
  virtual std::vector<Pin> list() = 0;
  // First sight: records `sha256` as approved. Returns false if a pin existed already.
  virtual Result<bool> pin_if_new(const std::string& server, const std::string& tool, const std::string& sha256) = 0;
  // A differing listing: kept as pending (the last one seen).
  virtual Status record_pending(const std::string& server, const std::string& tool, const std::string& sha256,
                                const nlohmann::json& listing) = 0;
  // The admin approves the pending listing (it becomes the pin). Error if none is pending
  // or `expected_sha256` (when given) is not the pending one.
  virtual Status approve(const std::string& server, const std::string& tool,
                         const std::string& expected_sha256 = "") = 0;

 protected:
  // Why approve changed nothing, from the row as it is now: "not_found", "not_pending" or
  // "pin_mismatch".
  Status why_not_approved(const std::string& server, const std::string& tool, const std::string& expected_sha256);
};

// The PostgreSQL store (mcp/pin_store_pg.cpp).
Result<std::unique_ptr<PinStore>> open_postgres_pin_store(const storage::StateLocation& location);

}  // namespace airlock::mcp
