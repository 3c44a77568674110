// The audit log's storage interface and what travels through it. Internal to audit/: the
// writer (AuditLog), the reader (LogReader) and the verifier all go through a LogStore, and
// two implement it: SQLite (sqlite_log_store.cpp, one file, the embedded default) and
// PostgreSQL (postgres_log_store.cpp, shared by several writers). Both hold the same rows:
//
//   meta(key, value)                          format, origin, public_key
//   records(idx, record, leaf_hash, subtree_hashes)
//       idx             leaf index from 0
//       record          canonical JSON, the exact bytes the leaf hash covers
//       leaf_hash       SHA-256(0x00 || record)
//       subtree_hashes  the perfect subtrees this leaf completes, heights 1..k concatenated
//                       (k = trailing one bits of idx), so every tree node is stored exactly
//                       once, in the row of its last leaf, and costs no extra insert
//   checkpoints(size, body, signature)        signed checkpoints, one per tree size
//
// Writers serialise on begin_write(): whoever holds the write lock reads the latest state,
// appends, and commits before the next one may start; so indices are assigned in one order
// and a transaction that does not commit leaves no trace (no gap, no duplicate).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/checkpoint.hpp"
#include "audit/hash.hpp"
#include "audit/log_location.hpp"
#include "audit/merkle.hpp"
#include "audit/signing_key.hpp"
#include "common/result.hpp"

namespace airlock::audit::detail {

inline constexpr const char* kLogFormat = "airlock-audit/1";

struct LogMeta {
  std::string origin;
  PublicKey public_key;
};

struct StoredCheckpoint {
  std::uint64_t size = 0;  // the row's key
  std::string body;
  std::string signature;  // raw bytes
};

// The checkpoint a row holds, parsed; errors (code "malformed_checkpoint") when the body is
// not a canonical checkpoint or the signature is not 64 bytes. The signature is not checked.
Result<SignedCheckpoint> parse_stored_checkpoint(const StoredCheckpoint& row);

// The last row: where the next append goes and what its "prev" is.
struct LogTail {
  std::uint64_t size = 0;  // last idx + 1; 0 when empty
  Hash last_leaf{};        // all zeros when empty
};

// What a writer appends to: the right edge of the tree and the size of the latest checkpoint.
struct TreeEdge {
  MerkleFrontier frontier;
  Hash last_leaf{};
  std::optional<std::uint64_t> checkpoint_size;  // none: no checkpoint yet
  bool operator==(const TreeEdge& other) const {
    return frontier.size() == other.frontier.size() &&
           frontier.subtrees() == other.frontier.subtrees() && last_leaf == other.last_leaf &&
           checkpoint_size == other.checkpoint_size;
  }
};

// Iterates records in index order. Views stay valid until the next call to next().
class RecordCursor {
 public:
  virtual ~RecordCursor() = default;
  virtual Result<bool> next() = 0;  // true: a row is available; false: done
  virtual std::uint64_t index() const = 0;
  virtual ByteView record() const = 0;
  virtual ByteView leaf_hash() const = 0;
  virtual ByteView subtree_hashes() const = 0;
};

class LogStore {
 public:
  // Creates what is missing (the SQLite file, mode 0600; the tables). `busy_timeout_ms`: how
  // long begin_write() waits for another writer's lock.
  static Result<std::unique_ptr<LogStore>> open_for_writing(const LogLocation& location,
                                                            int busy_timeout_ms);
  // Read-only use; fails when the log is missing or is not an audit log.
  static Result<std::unique_ptr<LogStore>> open_for_reading(const LogLocation& location);

  virtual ~LogStore() = default;
  virtual const std::string& name() const = 0;  // for messages: path or redacted URL

  virtual Status begin_write() = 0;  // takes the log's write lock, waiting up to the timeout
  virtual Status begin_read() = 0;   // a snapshot for consistent multi-query reads
  virtual Status commit() = 0;
  virtual void rollback() = 0;
  // Inside begin_write(): changes whenever another writer committed since this one last did.
  virtual Result<std::int64_t> data_version() = 0;
  // After a failure: whether reconnect() can make the store usable again (the server's state
  // is authoritative), or only reopening everything can (a file whose fsync failed).
  virtual bool can_reconnect() const { return false; }
  virtual Status reconnect() { return Error::make("audit_unavailable", "cannot reconnect"); }

  virtual Result<std::optional<LogMeta>> read_meta() = 0;
  virtual Status write_meta(const LogMeta& meta) = 0;

  virtual Result<LogTail> tail() = 0;
  virtual Result<Hash> subtree(unsigned level, std::uint64_t index) = 0;
  SubtreeLookup subtree_lookup();
  virtual Result<MerkleFrontier> frontier(std::uint64_t size);  // one subtree() each
  // The edge computed from the rows (records and checkpoints).
  Result<TreeEdge> edge_from_rows();
  // The edge as the writer holding the lock sees it: by default from the rows; the PostgreSQL
  // store keeps it in the row it locks (read by begin_write, no further round trip).
  virtual Result<TreeEdge> edge() { return edge_from_rows(); }
  // Whether the edge the store keeps for writers is `from_rows` (an error says how not).
  virtual Status check_edge(const TreeEdge& /*from_rows*/) { return {}; }
  // Called before commit() with the edge after this transaction's writes.
  virtual Status set_edge(const TreeEdge& /*edge*/) { return {}; }

  virtual Result<std::optional<std::string>> record(std::uint64_t index) = 0;
  virtual Result<std::optional<Hash>> stored_leaf_hash(std::uint64_t index) = 0;
  virtual Result<std::unique_ptr<RecordCursor>> records_from(std::uint64_t index) = 0;

  // May be buffered until commit(): a failure then surfaces there.
  virtual Status insert_record(std::uint64_t index, std::string_view record, const Hash& leaf,
                               const MerkleFrontier::Completed& completed) = 0;
  virtual Status insert_checkpoint(std::uint64_t size, std::string_view body,
                                   ByteView signature) = 0;
  virtual Result<std::vector<StoredCheckpoint>> checkpoints() = 0;
  virtual Result<std::optional<StoredCheckpoint>> latest_checkpoint() = 0;
};

Error not_a_log(const std::string& name, const std::string& why);
Hash hash_from(ByteView bytes);  // bytes.size() == kHashSize

}  // namespace airlock::audit::detail
