// The audit log in one SQLite file (WAL, synchronous=FULL): the embedded default. Writers in
// several processes serialise on SQLite's write lock (BEGIN IMMEDIATE). Internal to audit/.
#pragma once

#include "audit/detail/log_store.hpp"
#include "audit/detail/sqlite.hpp"

namespace airlock::audit::detail {

class SqliteLogStore final : public LogStore {
 public:
  // Creates the file (mode 0600) and the schema when missing; WAL, synchronous=FULL.
  static Result<std::unique_ptr<LogStore>> open_for_writing(const std::string& path,
                                                            int busy_timeout_ms);
  static Result<std::unique_ptr<LogStore>> open_for_reading(const std::string& path);

  const std::string& name() const override { return path_; }
  Status begin_write() override;  // BEGIN IMMEDIATE
  Status begin_read() override;
  Status commit() override;
  void rollback() override;
  Result<std::int64_t> data_version() override;  // PRAGMA data_version

  Result<std::optional<LogMeta>> read_meta() override;
  Status write_meta(const LogMeta& meta) override;
  Result<LogTail> tail() override;
  Result<Hash> subtree(unsigned level, std::uint64_t index) override;
  Result<std::optional<std::string>> record(std::uint64_t index) override;
  Result<std::optional<Hash>> stored_leaf_hash(std::uint64_t index) override;
  Result<std::unique_ptr<RecordCursor>> records_from(std::uint64_t index) override;
  Status insert_record(std::uint64_t index, std::string_view record, const Hash& leaf,
                       const MerkleFrontier::Completed& completed) override;
  Status insert_checkpoint(std::uint64_t size, std::string_view body, ByteView signature) override;
  Result<std::vector<StoredCheckpoint>> checkpoints() override;
  Result<std::optional<StoredCheckpoint>> latest_checkpoint() override;

 private:
  SqliteLogStore(std::string path, SqliteDatabase db) : path_(std::move(path)), db_(std::move(db)) {}
  Result<SqliteStatement*> statement(SqliteStatement& slot, const char* sql);

  std::string path_;
  SqliteDatabase db_;
  // Prepared once, reused: an append runs the same two statements thousands of times.
  SqliteStatement insert_record_, insert_checkpoint_, select_subtree_, select_record_,
      select_leaf_, select_tail_, select_latest_checkpoint_, data_version_;
};

}  // namespace airlock::audit::detail
