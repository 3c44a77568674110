// The audit log's SQLite schema and every query against it. Internal to audit/: the writer
// (AuditLog), the reader (LogReader) and the verifier all go through here.
//
//   meta(key, value)                          format, origin, public_key
//   records(idx, record, leaf_hash, subtree_hashes)
//       idx             leaf index from 0 (INTEGER PRIMARY KEY: the rowid, so lookups are
//                       one B-tree descent)
//       record          canonical JSON, the exact bytes the leaf hash covers
//       leaf_hash       SHA-256(0x00 || record)
//       subtree_hashes  the perfect subtrees this leaf completes, heights 1..k concatenated
//                       (k = trailing one bits of idx), so every tree node is stored exactly
//                       once, in the row of its last leaf, and costs no extra insert
//   checkpoints(size, body, signature)        signed checkpoints, one per tree size
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/detail/sqlite.hpp"
#include "audit/checkpoint.hpp"
#include "audit/hash.hpp"
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

// Iterates records in index order. Views stay valid until the next call to next().
class RecordCursor {
 public:
  explicit RecordCursor(SqliteStatement statement) : statement_(std::move(statement)) {}
  Result<bool> next() { return statement_.step(); }
  std::uint64_t index() const { return static_cast<std::uint64_t>(statement_.column_int64(0)); }
  ByteView record() const { return statement_.column_blob(1); }
  ByteView leaf_hash() const { return statement_.column_blob(2); }
  ByteView subtree_hashes() const { return statement_.column_blob(3); }

 private:
  SqliteStatement statement_;
};

class LogStore {
 public:
  // Creates the file (mode 0600) and the schema when missing; WAL, synchronous=FULL.
  static Result<LogStore> open_for_writing(const std::string& path, int busy_timeout_ms);
  // Read-only; fails when the file is missing or is not an audit log.
  static Result<LogStore> open_for_reading(const std::string& path);

  Status begin_write();  // BEGIN IMMEDIATE: takes the write lock now, waiting up to the timeout
  Status begin_read();   // a snapshot for consistent multi-query reads
  Status commit();
  void rollback();
  // Changes whenever another connection commits (PRAGMA data_version).
  Result<std::int64_t> data_version();

  Result<std::optional<LogMeta>> read_meta();
  Status write_meta(const LogMeta& meta);

  Result<LogTail> tail();
  Result<Hash> subtree(unsigned level, std::uint64_t index);
  SubtreeLookup subtree_lookup();
  Result<MerkleFrontier> frontier(std::uint64_t size);
  Result<std::optional<std::string>> record(std::uint64_t index);
  Result<std::optional<Hash>> stored_leaf_hash(std::uint64_t index);
  Result<RecordCursor> records_from(std::uint64_t index);

  Status insert_record(std::uint64_t index, std::string_view record, const Hash& leaf,
                       const MerkleFrontier::Completed& completed);
  Status insert_checkpoint(std::uint64_t size, std::string_view body, ByteView signature);
  Result<std::vector<StoredCheckpoint>> checkpoints();
  Result<std::optional<StoredCheckpoint>> latest_checkpoint();

  const std::string& path() const { return path_; }

 private:
  LogStore(std::string path, SqliteDatabase db) : path_(std::move(path)), db_(std::move(db)) {}
  Result<SqliteStatement*> statement(SqliteStatement& slot, const char* sql);

  std::string path_;
  SqliteDatabase db_;
  // Prepared once, reused: an append runs the same two statements thousands of times.
  SqliteStatement insert_record_, insert_checkpoint_, select_subtree_, select_record_,
      select_leaf_, select_tail_, select_latest_checkpoint_, data_version_;
};

}  // namespace airlock::audit::detail
