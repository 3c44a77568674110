// The audit log in PostgreSQL (libpq), shared by several writers: processes on one host or
// replicas on several. The rows are those of the SQLite store (log_store.hpp) in tables
// audit_meta, audit_records, audit_checkpoints, plus one row, audit_head, that serialises the
// writers and carries the tree's right edge:
//
//   audit_head(id = 1, version, size, last_leaf, frontier, checkpoint_size)
//
// A write transaction begins with SELECT ... FROM audit_head FOR UPDATE: the row lock is the
// log's write lock (held to COMMIT or ROLLBACK, released by the server when a writer's
// connection dies), and the row tells the writer where the tree ends without reading any
// record. Its records, the new edge (UPDATE audit_head, version + 1) and COMMIT go in one
// pipelined round trip. So a transaction is two round trips and one WAL flush however many
// records it holds, and an index is taken only by a transaction that commits: no gaps, no
// duplicates (idx is also the primary key). Internal to audit/.
#pragma once

#include <deque>

#include "audit/detail/log_store.hpp"
#include "storage/postgres.hpp"

namespace airlock::audit::detail {

class PostgresLogStore final : public LogStore {
 public:
  // Connects and, unless read_only, creates the tables when missing (under an advisory lock,
  // so that two writers starting at once do not race). Read-only: the tables must exist.
  static Result<std::unique_ptr<LogStore>> open(const LogLocation& location, int busy_timeout_ms,
                                                bool read_only);

  const std::string& name() const override { return name_; }
  Status begin_write() override;
  Status begin_read() override;  // REPEATABLE READ, READ ONLY
  Status commit() override;
  void rollback() override;
  Result<std::int64_t> data_version() override;
  bool can_reconnect() const override { return true; }
  Status reconnect() override;

  Result<std::optional<LogMeta>> read_meta() override;
  Status write_meta(const LogMeta& meta) override;
  Result<LogTail> tail() override;
  Result<Hash> subtree(unsigned level, std::uint64_t index) override;
  Result<MerkleFrontier> frontier(std::uint64_t size) override;  // one query
  Result<TreeEdge> edge() override;                              // the head row
  Status set_edge(const TreeEdge& edge) override;
  Status check_edge(const TreeEdge& from_rows) override;
  Result<std::optional<std::string>> record(std::uint64_t index) override;
  Result<std::optional<Hash>> stored_leaf_hash(std::uint64_t index) override;
  Result<std::unique_ptr<RecordCursor>> records_from(std::uint64_t index) override;
  Status insert_record(std::uint64_t index, std::string_view record, const Hash& leaf,
                       const MerkleFrontier::Completed& completed) override;
  Status insert_checkpoint(std::uint64_t size, std::string_view body, ByteView signature) override;
  Result<std::vector<StoredCheckpoint>> checkpoints() override;
  Result<std::optional<StoredCheckpoint>> latest_checkpoint() override;

  // Statement parameters: text or binary, kept alive until the statement is sent.
  struct Params {
    std::deque<std::string> data;
    std::vector<int> formats;
    void text(std::string value) {
      data.push_back(std::move(value));
      formats.push_back(0);
    }
    void binary(ByteView value) {
      data.emplace_back(value.begin(), value.end());
      formats.push_back(1);
    }
  };
  struct Statement {
    std::string sql;
    Params params;
  };
  // One statement, binary results.
  Result<storage::pg::Reply> query(const char* step, const std::string& sql,
                                   const Params& params = {});

 private:
  PostgresLogStore(LogLocation location, std::string password, int busy_timeout_ms);
  Status connect();
  Status create_schema();
  Status check_schema();
  // Sends every statement, then reads every reply: one round trip. Fails with the first error.
  Status pipeline(const char* step, const std::vector<Statement>& statements,
                  std::vector<storage::pg::Reply>* replies = nullptr);
  Error failure(const std::string& step, const storage::pg::Reply& reply);
  Error not_connected() const;
  Result<TreeEdge> read_head(const storage::pg::Reply& row);
  std::vector<Statement> insert_statements() const;

  static constexpr std::size_t kRowsPerInsert = 1000;

  LogLocation location_;
  std::string name_;
  std::string password_;  // from the password file; "" when the URL has it
  std::vector<std::string> secrets_;
  int busy_timeout_ms_;
  storage::pg::ConnPtr conn_{nullptr, &PQfinish};

  // The write transaction in progress.
  std::optional<TreeEdge> head_edge_;  // as begin_write() read it
  std::int64_t head_version_ = 0;
  std::int64_t own_commits_ = 0;       // commits of this connection that moved the head
  std::optional<TreeEdge> new_edge_;  // set_edge()
  struct PendingRecord {
    std::uint64_t index;
    std::string record;
    Hash leaf;
    std::string subtrees;
  };
  std::vector<PendingRecord> pending_;
};

}  // namespace airlock::audit::detail
