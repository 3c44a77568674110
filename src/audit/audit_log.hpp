// AuditLog: the append side of the tamper-evident audit log (docs/audit.md).
//
//   auto log = AuditLog::open("/var/lib/airlock/audit.db");   // creates log and key if missing
//   auto receipt = (*log)->append(fields);                     // durable when it returns ok
//
// append() returns only after the record is committed to disk (SQLite WAL, synchronous=FULL);
// on any failure it returns an error and the record must be treated as not logged (fail
// closed). Appends from many threads are batched into one transaction each (group commit):
// one writer thread owns the connection, takes everything queued, commits once, and answers
// every caller in the batch. After a storage failure the log refuses every further append
// until it is reopened, because what reached the disk is then unknown.
//
// The log adds three members to each record: "index" (its leaf index), "prev" (hex leaf hash
// of the previous record, 64 zeros for the first) and "time" (commit time, ms since the Unix
// epoch). Checkpoints are signed every N records, every T seconds while records are unsigned,
// when asked, and on close.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "audit/checkpoint.hpp"
#include "audit/hash.hpp"
#include "audit/log_location.hpp"
#include "audit/signing_key.hpp"
#include "common/result.hpp"

namespace airlock::audit {

struct AuditLogOptions {
  // Names the log in its checkpoints. Used when the log is created; empty means
  // "airlock-audit/<16 random hex digits>". A non-empty value must match an existing log's.
  std::string origin;
  std::uint64_t checkpoint_every_records = 1000;  // N
  std::chrono::milliseconds checkpoint_interval{10'000};  // T
  std::size_t max_batch = 1024;  // records per transaction at most
  // Record bytes (canonical JSON) per transaction at most; a record larger than this on its
  // own still goes, alone. Bounds what one failed transaction takes down and one round trip
  // carries.
  std::size_t max_batch_bytes = 4 << 20;
  // How long a transaction waits for another process's write lock before its batch fails.
  std::chrono::milliseconds busy_timeout{10'000};
};

// Counters since open, for metrics and the benchmark (records / transactions = mean batch).
struct AuditLogStats {
  std::uint64_t records = 0;
  std::uint64_t transactions = 0;
  std::uint64_t checkpoints = 0;
  std::uint64_t queued = 0;  // a gauge: requests waiting for the writer to take them, now
};

struct AppendReceipt {
  std::uint64_t index = 0;
  Hash leaf_hash{};
};

class AuditLog {
 public:
  // The private key lives at key_path(log_path), mode 0600.
  static std::string key_path(const std::string& log_path) { return log_path + ".key"; }

  // Opens the log, creating it (and its key) when missing. Fails when the stored tree does not
  // match the latest signed checkpoint: a log that is already inconsistent is not appended to.
  static Result<std::unique_ptr<AuditLog>> open(const std::string& path,
                                                AuditLogOptions options = {});  // SQLite
  // A SQLite file or a PostgreSQL database. Several writers (processes, hosts) may append to
  // one PostgreSQL log at once: each must be given the same key file.
  static Result<std::unique_ptr<AuditLog>> open(const LogLocation& location,
                                                AuditLogOptions options = {});
  ~AuditLog();  // close()
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // `fields` must be a JSON object without the reserved members index, prev and time, and must
  // have a canonical form (no floating-point numbers, valid UTF-8). Thread-safe.
  Result<AppendReceipt> append(const nlohmann::json& fields);

  // Signs a checkpoint over every record committed so far (unless the latest one already
  // covers them) and returns the latest checkpoint. Thread-safe.
  Result<SignedCheckpoint> checkpoint();

  // Commits what is queued, signs a final checkpoint, stops the writer thread. Idempotent;
  // later appends fail.
  Status close();

  // HMAC-SHA256 of a credential value under a key derived from the log's private key, in hex:
  // lets the owner check which credential was used without the log ever holding it.
  std::string credential_fingerprint(std::string_view value) const;

  AuditLogStats stats() const;
  const PublicKey& public_key() const;
  const std::string& origin() const;
  const std::string& path() const;  // the SQLite path, or the PostgreSQL URL without password
  const LogLocation& location() const;

  struct State;

 private:
  explicit AuditLog(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace airlock::audit
