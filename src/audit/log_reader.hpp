// LogReader: read-only access to an audit log: records, checkpoints, proofs. Opens the SQLite
// file read-only (or connects to the PostgreSQL database) and needs no key; every method reads inside its own snapshot unless the
// caller holds one (snapshot()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/checkpoint.hpp"
#include "audit/hash.hpp"
#include "audit/log_location.hpp"
#include "audit/signing_key.hpp"
#include "common/result.hpp"

namespace airlock::audit {

namespace detail {
class LogStore;
}

class LogReader {
 public:
  static Result<LogReader> open(const std::string& path);  // a SQLite file
  static Result<LogReader> open(const LogLocation& location);
  LogReader(LogReader&&) noexcept;
  LogReader& operator=(LogReader&&) noexcept;
  ~LogReader();

  const std::string& path() const;  // the SQLite path, or the PostgreSQL URL without its password
  const LogLocation& location() const;
  const std::string& origin() const;
  const PublicKey& public_key() const;  // as stored in the log: trust it only as far as the file

  // Number of records (last index + 1).
  Result<std::uint64_t> size();
  // The record exactly as hashed; error "not_found" when there is no such index.
  Result<std::string> record(std::uint64_t index);
  // Calls `visit` with each record from `from` on, in index order, until it returns false.
  Status for_each_record(std::uint64_t from,
                         const std::function<bool(std::uint64_t, std::string_view)>& visit);

  // Stored checkpoints, oldest first, parsed but not yet checked against any key.
  Result<std::vector<SignedCheckpoint>> checkpoints();
  // The latest checkpoint, its signature checked against the log's key.
  Result<std::optional<SignedCheckpoint>> latest_checkpoint();

  Result<Hash> root(std::uint64_t tree_size);
  Result<std::vector<Hash>> inclusion_proof(std::uint64_t index, std::uint64_t tree_size);
  Result<std::vector<Hash>> consistency_proof(std::uint64_t size1, std::uint64_t size2);

  // Reads between begin_snapshot() and end_snapshot() see one consistent state of the log.
  Status begin_snapshot();
  void end_snapshot();

  // For the verifier, which reads rows directly.
  detail::LogStore& store();

 private:
  struct State;
  explicit LogReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The proof of one record that `airlock audit prove` prints (docs/audit.md, "Proofs"):
// {"format":"airlock-audit-proof/v1","index":..,"record":"<exact record text>",
//  "leaf_hash":"<hex>","tree_size":..,"inclusion_proof":["<hex>",...],
//  "checkpoint":<checkpoint envelope>}
// The proof is against the latest checkpoint, which must cover the record.
Result<nlohmann::json> prove_record(LogReader& reader, std::uint64_t index);

// What a third party does with that JSON: recompute the leaf hash from the record text, check
// the inclusion proof against the checkpoint's root, check the checkpoint's signature. When
// `trusted_key` is given the checkpoint must be signed by it (otherwise by the key the proof
// names, which only shows the proof is self-consistent). Errors name what does not hold.
Status verify_record_proof(const nlohmann::json& proof,
                           const std::optional<PublicKey>& trusted_key = std::nullopt);

}  // namespace airlock::audit
