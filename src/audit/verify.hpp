// Verifies a whole audit log from its records up (what `airlock audit verify` runs):
//
//  - every checkpoint's signature, under the log's key or the trusted checkpoint's key;
//  - every record: its leaf hash recomputed from its bytes, its "index" member equal to its
//    position, its "prev" member equal to the previous record's leaf hash, the hashes stored
//    beside it equal to the recomputed ones;
//  - the recomputed tree's root at the size of every checkpoint (and of the trusted one);
//  - consecutive checkpoints consistent with each other (a consistency proof from the stored
//    tree, checked by the RFC 9162 verifier);
//  - no checkpoint, trusted or stored, covers more records than the log holds.
//
// Nothing stored beside a record is trusted: it is only used to name what went wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/checkpoint.hpp"
#include "audit/hash.hpp"
#include "audit/log_reader.hpp"
#include "common/result.hpp"

namespace airlock::audit {

enum class TamperKind {
  modified,       // a record's content changed
  missing,        // records were deleted from the middle
  inserted,       // a record was added that the log never wrote
  reordered,      // records were moved
  truncated,      // records were cut off the end (or the log rolled back to an older copy)
  bad_signature,  // a checkpoint's signature does not hold, or the key changed
  inconsistent,   // checkpoints disagree with each other or with the trusted checkpoint
};

std::string_view tamper_kind_name(TamperKind kind);

struct Tampering {
  TamperKind kind;
  std::optional<std::uint64_t> index;            // the first bad record index, when known
  std::optional<std::uint64_t> checkpoint_size;  // the checkpoint concerned, if any
  std::string detail;
};

struct VerifyOptions {
  // A checkpoint the verifier kept from an earlier verification (the output of
  // `airlock audit checkpoint`): pins the key, and the log must still contain it.
  std::optional<CheckpointWithKey> trusted;
  // The key the log is expected to be signed with (the public part of its key file).
  std::optional<PublicKey> expected_key;
};

struct VerifyReport {
  std::uint64_t records = 0;
  std::uint64_t record_bytes = 0;
  std::uint64_t checkpoints = 0;
  std::uint64_t signed_size = 0;  // records covered by the latest valid checkpoint
  Hash root{};                    // recomputed over every record
  std::vector<Tampering> findings;  // empty: intact; otherwise the first is the headline

  bool intact() const { return findings.empty(); }
  std::uint64_t unsigned_records() const { return records - signed_size; }
};

// Errors (the log cannot be read at all) are distinct from findings (it was read and is not
// what was signed).
Result<VerifyReport> verify_log(LogReader& reader, const VerifyOptions& options = {});

nlohmann::json to_json(const VerifyReport& report);
std::string describe(const Tampering& finding);  // "modified at index 17: ..."

}  // namespace airlock::audit
