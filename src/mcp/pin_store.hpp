// Tool pins (the "rug pull" defence): for each (server, tool) the hash of its name,
// description and schemas as first listed (mcp/listed_tool.hpp pin_sha256), and the listing
// that differs from it, if any, awaiting an admin's approval. A table in the daemon's
// state.db; `airlock mcp pins list|approve` opens the same file.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace airlock::mcp {

struct Pin {
  std::string server, tool;
  std::string sha256;            // approved
  std::string pinned_at;         // RFC 3339 UTC
  std::string pending_sha256;    // a listing seen since that differs ("" none)
  nlohmann::json pending;        // that listing's {name, description, inputSchema, outputSchema}
  std::string pending_since;
};

class PinStore {
 public:
  static Result<std::unique_ptr<PinStore>> open(const std::string& db_path);
  ~PinStore();

  std::optional<Pin> get(const std::string& server, const std::string& tool);
  std::vector<Pin> list();
  // First sight: records `sha256` as approved. Returns false if a pin existed already.
  Result<bool> pin_if_new(const std::string& server, const std::string& tool, const std::string& sha256);
  // A differing listing: kept as pending (the last one seen).
  Status record_pending(const std::string& server, const std::string& tool, const std::string& sha256,
                        const nlohmann::json& listing);
  // The admin approves the pending listing (it becomes the pin). Error if none is pending
  // or `expected_sha256` (when given) is not the pending one.
  Status approve(const std::string& server, const std::string& tool, const std::string& expected_sha256 = "");

  struct Impl;

 private:
  explicit PinStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace airlock::mcp
