#include "audit/detail/postgres_log_store.hpp"

#include <endian.h>

#include <bit>
#include <cstring>
#include <map>

#include "storage/pg_database.hpp"

namespace airlock::audit::detail {
namespace {

namespace pg = storage::pg;

// Taken around schema creation only: CREATE TABLE IF NOT EXISTS from two sessions at once can
// still fail on the catalog's unique index.
constexpr const char* kPgSchema = R"sql(
BEGIN;
SELECT pg_advisory_xact_lock(1095912523, 2);
CREATE TABLE IF NOT EXISTS audit_meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS audit_records(
  idx bigint PRIMARY KEY CHECK (idx >= 0),
  record bytea NOT NULL,
  leaf_hash bytea NOT NULL,
  subtree_hashes bytea NOT NULL);
CREATE TABLE IF NOT EXISTS audit_checkpoints(
  size bigint PRIMARY KEY CHECK (size >= 0),
  body bytea NOT NULL,
  signature bytea NOT NULL);
CREATE TABLE IF NOT EXISTS audit_head(
  id integer PRIMARY KEY CHECK (id = 1),
  version bigint NOT NULL,
  size bigint NOT NULL,
  last_leaf bytea NOT NULL,
  frontier bytea NOT NULL,
  checkpoint_size bigint);
INSERT INTO audit_head VALUES (1, 0, 0, '\x0000000000000000000000000000000000000000000000000000000000000000', '\x', NULL)
  ON CONFLICT (id) DO NOTHING;
COMMIT;
)sql";

constexpr const char* kSelectHead =
    "SELECT version, size, last_leaf, frontier, checkpoint_size FROM audit_head WHERE id = 1";
constexpr int kCursorPage = 2000;

std::int64_t int64_at(const pg::Reply& reply, int row, int column) {
  std::uint64_t raw = 0;
  if (PQgetlength(reply.result.get(), row, column) == 8)
    std::memcpy(&raw, PQgetvalue(reply.result.get(), row, column), 8);
  return static_cast<std::int64_t>(be64toh(raw));
}

ByteView bytes_at(const pg::Reply& reply, int row, int column) {
  return {reinterpret_cast<const std::uint8_t*>(PQgetvalue(reply.result.get(), row, column)),
          static_cast<std::size_t>(PQgetlength(reply.result.get(), row, column))};
}

std::string text_of(ByteView bytes) { return {bytes.begin(), bytes.end()}; }

std::string int_text(std::uint64_t n) { return std::to_string(n); }

struct ParamArrays {
  std::vector<const char*> values;
  std::vector<int> lengths;
  explicit ParamArrays(const PostgresLogStore::Params& params) {
    for (const auto& value : params.data) {
      values.push_back(value.data());
      lengths.push_back(static_cast<int>(value.size()));
    }
  }
  int count() const { return static_cast<int>(values.size()); }
};

// A statement with its parameters (text or binary), asking for binary results.
PGresult* exec_params(PGconn* conn, const std::string& sql, const PostgresLogStore::Params& params) {
  ParamArrays a(params);
  return PQexecParams(conn, sql.c_str(), a.count(), nullptr, a.values.data(), a.lengths.data(),
                      params.formats.data(), 1);
}

bool send_params(PGconn* conn, const std::string& sql, const PostgresLogStore::Params& params) {
  ParamArrays a(params);
  return PQsendQueryParams(conn, sql.c_str(), a.count(), nullptr, a.values.data(),
                           a.lengths.data(), params.formats.data(), 1) == 1;
}

// Iterates records a page at a time (plain queries, so several cursors may be open at once;
// inside begin_read() every page comes from the same snapshot).
class PostgresRecordCursor final : public RecordCursor {
 public:
  PostgresRecordCursor(PostgresLogStore& store, std::uint64_t from) : store_(store), next_(from) {}

  Result<bool> next() override {
    if (++row_ < rows_) return true;
    if (done_) return false;
    PostgresLogStore::Params params;
    params.text(int_text(next_));
    auto page = store_.query("read records",
                             "SELECT idx, record, leaf_hash, subtree_hashes FROM audit_records "
                             "WHERE idx >= $1::bigint ORDER BY idx LIMIT " +
                                 std::to_string(kCursorPage),
                             params);
    if (!page) return page.error();
    page_ = std::move(*page);
    rows_ = page_.rows();
    row_ = 0;
    done_ = rows_ < kCursorPage;
    if (rows_ == 0) return false;
    next_ = static_cast<std::uint64_t>(int64_at(page_, rows_ - 1, 0)) + 1;
    return true;
  }
  std::uint64_t index() const override {
    return static_cast<std::uint64_t>(int64_at(page_, row_, 0));
  }
  ByteView record() const override { return bytes_at(page_, row_, 1); }
  ByteView leaf_hash() const override { return bytes_at(page_, row_, 2); }
  ByteView subtree_hashes() const override { return bytes_at(page_, row_, 3); }

 private:
  PostgresLogStore& store_;
  std::uint64_t next_;
  pg::Reply page_;
  int rows_ = 0;
  int row_ = 0;
  bool done_ = false;
};

StoredCheckpoint checkpoint_from(const pg::Reply& reply, int row) {
  return {static_cast<std::uint64_t>(int64_at(reply, row, 0)), text_of(bytes_at(reply, row, 1)),
          text_of(bytes_at(reply, row, 2))};
}

}  // namespace

PostgresLogStore::PostgresLogStore(LogLocation location, std::string password, int busy_timeout_ms)
    : location_(std::move(location)),
      name_(location_.describe()),
      password_(std::move(password)),
      busy_timeout_ms_(busy_timeout_ms) {
  secrets_ = {location_.postgres_url, password_};
  if (auto in_url = pg::url_password(location_.postgres_url)) secrets_.push_back(*in_url);
}

Result<std::unique_ptr<LogStore>> PostgresLogStore::open(const LogLocation& location,
                                                         int busy_timeout_ms, bool read_only) {
  std::string password;
  if (!location.postgres_password_file.empty()) {
    auto read = pg::read_password_file(location.postgres_password_file);
    if (!read) return Error::make("audit_storage", read.error().message);
    password = std::move(*read);
  }
  std::unique_ptr<PostgresLogStore> store(
      new PostgresLogStore(location, std::move(password), busy_timeout_ms));
  if (auto status = store->connect(); !status) return status.error();
  // Tables that exist are used as they are: a role without CREATE on the schema can write to
  // tables an administrator made.
  Status schema = store->check_schema();
  if (!schema && !read_only && schema.error().code == "not_an_audit_log")
    schema = store->create_schema();
  if (!schema) return schema.error();
  return std::unique_ptr<LogStore>(std::move(store));
}

Error PostgresLogStore::failure(const std::string& step, const pg::Reply& reply) {
  bool lost = pg::is_connection_failure(reply.sqlstate) || conn_ == nullptr ||
              PQstatus(conn_.get()) != CONNECTION_OK;
  // A connection that failed mid-statement is not reused: reconnect() makes a fresh one.
  if (lost) conn_.reset();
  return Error::make(lost ? "storage_unavailable" : "audit_storage",
                     name_ + ": " + step + ": " + reply.message);
}

Error PostgresLogStore::not_connected() const {
  return Error::make("storage_unavailable", name_ + ": not connected (the server went away)");
}

Status PostgresLogStore::connect() {
  pg::ConnectOptions options;
  options.secrets = secrets_;
  if (!password_.empty()) options.keywords.emplace_back("password", password_);
  // How long begin_write() waits for another writer's row lock.
  options.keywords.emplace_back("options", "-c lock_timeout=" + std::to_string(busy_timeout_ms_));
  auto conn = pg::connect(location_.postgres_url, options);
  if (!conn) return Error::make("storage_unavailable", name_ + ": " + conn.error().message);
  conn_ = std::move(*conn);
  // An acknowledged append must survive a server crash: never commit without the WAL flush.
  pg::Reply mode = pg::run(conn_.get(), "SHOW synchronous_commit", secrets_);
  if (!mode.ok()) return failure("read synchronous_commit", mode);
  if (mode.value(0, 0) == "off") {
    if (pg::Reply set = pg::run(conn_.get(), "SET synchronous_commit = on", secrets_); !set.ok())
      return failure("set synchronous_commit", set);
  }
  return {};
}

Status PostgresLogStore::reconnect() {
  conn_.reset();
  rollback();
  return connect();
}

Status PostgresLogStore::create_schema() {
  pg::Reply reply = pg::run(conn_.get(), kPgSchema, secrets_);
  if (!reply.ok()) {
    (void)pg::run(conn_.get(), "ROLLBACK");
    return failure("create the audit tables", reply);
  }
  return {};
}

Status PostgresLogStore::check_schema() {
  pg::Reply reply = pg::run(conn_.get(),
                            "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = "
                            "current_schema() AND tablename IN ('audit_meta', 'audit_records', "
                            "'audit_checkpoints', 'audit_head')",
                            secrets_);
  if (!reply.ok()) return failure("look for the audit tables", reply);
  if (reply.value(0, 0) != "4") return not_a_log(name_, "its audit tables are missing");
  return {};
}

Result<pg::Reply> PostgresLogStore::query(const char* step, const std::string& sql,
                                          const Params& params) {
  if (conn_ == nullptr) return not_connected();
  pg::Reply reply = pg::reply_from(conn_.get(), exec_params(conn_.get(), sql, params), secrets_);
  if (!reply.ok()) return failure(step, reply);
  return reply;
}

Status PostgresLogStore::pipeline(const char* step, const std::vector<Statement>& statements,
                                  std::vector<pg::Reply>* replies) {
  if (conn_ == nullptr) return not_connected();
  PGconn* conn = conn_.get();
  // libpq could not send or read: the connection is in no state to be used again (it may even
  // be left in pipeline mode), so it is dropped and the next use reconnects.
  auto broken = [&] {
    Error error = failure(step, pg::reply_from(conn, nullptr, secrets_));
    conn_.reset();
    return Error::make("storage_unavailable", error.message);
  };
  if (PQenterPipelineMode(conn) != 1) return broken();
  for (const auto& statement : statements)
    if (!send_params(conn, statement.sql, statement.params)) return broken();
  if (PQpipelineSync(conn) != 1) return broken();
  std::optional<pg::Reply> first_error;
  for (std::size_t i = 0; i < statements.size(); ++i) {
    PGresult* result = PQgetResult(conn);
    if (result == nullptr) return broken();
    // After a failed statement the rest are skipped (PGRES_PIPELINE_ABORTED, no SQLSTATE).
    bool aborted = PQresultStatus(result) == PGRES_PIPELINE_ABORTED;
    pg::Reply reply = pg::reply_from(conn, result, secrets_);
    if (!reply.ok() && !aborted && !first_error) first_error = std::move(reply);
    else if (replies != nullptr) replies->push_back(std::move(reply));
    while (PGresult* extra = PQgetResult(conn)) PQclear(extra);  // up to the NULL
  }
  pg::Reply sync = pg::reply_from(conn, PQgetResult(conn), secrets_);
  if (!sync.ok() && !first_error) first_error = std::move(sync);
  if (PQexitPipelineMode(conn) != 1) return broken();
  if (first_error) return failure(step, *first_error);
  return {};
}

Result<TreeEdge> PostgresLogStore::read_head(const pg::Reply& row) {
  if (row.rows() != 1) return not_a_log(name_, "its audit_head row is missing");
  head_version_ = int64_at(row, 0, 0);
  auto size = static_cast<std::uint64_t>(int64_at(row, 0, 1));
  ByteView last_leaf = bytes_at(row, 0, 2), frontier = bytes_at(row, 0, 3);
  std::vector<Hash> subtrees;
  for (std::size_t at = 0; at + kHashSize <= frontier.size(); at += kHashSize)
    subtrees.push_back(hash_from(frontier.subspan(at, kHashSize)));
  auto edge = MerkleFrontier::from_subtrees(size, std::move(subtrees));
  if (!edge || last_leaf.size() != kHashSize || frontier.size() % kHashSize != 0)
    return Error::make("log_inconsistent", name_ + ": the audit_head row is malformed");
  TreeEdge out{std::move(*edge), hash_from(last_leaf), std::nullopt};
  if (!row.is_null(0, 4)) out.checkpoint_size = static_cast<std::uint64_t>(int64_at(row, 0, 4));
  return out;
}

// BEGIN and the locking read of the head in one round trip.
Status PostgresLogStore::begin_write() {
  rollback();
  std::vector<pg::Reply> replies;
  // The write transaction commits without waiting for its WAL flush, so the row lock passes to
  // the next writer at once; commit() waits for the flush before anyone is answered.
  if (auto status = pipeline("begin a write transaction",
                             {{"BEGIN", {}},
                              {"SET LOCAL synchronous_commit = off", {}},
                              {std::string(kSelectHead) + " FOR UPDATE", {}}},
                             &replies);
      !status) {
    rollback();
    return status;
  }
  auto edge = read_head(replies.at(2));
  if (!edge) {
    rollback();
    return edge.error();
  }
  head_edge_ = std::move(*edge);
  return {};
}

Status PostgresLogStore::begin_read() {
  if (conn_ == nullptr) return not_connected();
  pg::Reply reply =
      pg::run(conn_.get(), "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", secrets_);
  return reply.ok() ? Status() : Status(failure("begin a snapshot", reply));
}

// The buffered records as multi-row INSERTs of at most kRowsPerInsert rows each: a statement
// takes at most 65,535 parameters (the protocol's limit), four a row.
std::vector<PostgresLogStore::Statement> PostgresLogStore::insert_statements() const {
  std::vector<Statement> statements;
  for (std::size_t first = 0; first < pending_.size(); first += kRowsPerInsert) {
    Statement insert{"INSERT INTO audit_records(idx, record, leaf_hash, subtree_hashes) VALUES ", {}};
    for (std::size_t i = first; i < std::min(pending_.size(), first + kRowsPerInsert); ++i) {
      const auto n = 4 * (i - first);
      insert.sql += (i > first ? ", (" : "(") + ("$" + std::to_string(n + 1)) + "::bigint, $" +
                    std::to_string(n + 2) + ", $" + std::to_string(n + 3) + ", $" +
                    std::to_string(n + 4) + ")";
      insert.params.text(int_text(pending_[i].index));
      insert.params.binary(as_bytes(pending_[i].record));
      insert.params.binary(ByteView(pending_[i].leaf));
      insert.params.binary(as_bytes(pending_[i].subtrees));
    }
    statements.push_back(std::move(insert));
  }
  return statements;
}

// The buffered records, the new head and COMMIT in one round trip: the transaction holds the
// row lock for one round trip and one WAL flush after the head was read.
Status PostgresLogStore::commit() {
  std::vector<Statement> statements = insert_statements();
  if (new_edge_) {
    Statement update{"UPDATE audit_head SET version = version + 1, size = $1::bigint, "
                     "last_leaf = $2, frontier = $3, checkpoint_size = NULLIF($4, '')::bigint "
                     "WHERE id = 1",
                     {}};
    const auto& subtrees = new_edge_->frontier.subtrees();
    update.params.text(int_text(new_edge_->frontier.size()));
    update.params.binary(ByteView(new_edge_->last_leaf));
    update.params.binary(ByteView(subtrees.empty() ? nullptr : subtrees.front().data(),
                                  subtrees.size() * kHashSize));
    update.params.text(new_edge_->checkpoint_size ? int_text(*new_edge_->checkpoint_size) : "");
    statements.push_back(std::move(update));
  }
  statements.push_back({"COMMIT", {}});
  // Durability: a transaction that wrote WAL commits with the session's synchronous_commit (at
  // least on), which flushes the WAL up to its commit record, so up to and past ours. (A
  // transaction that wrote nothing is not flushed: hence the message, one small WAL record in
  // its own transaction.) Writers in other processes take the row lock while this one waits
  // for the flush, and the server flushes their commits together (its own group commit);
  // nobody is answered before.
  statements.push_back({"SELECT pg_logical_emit_message(true, 'airlock-audit', '')", {}});
  Status status = pipeline("commit", statements);
  if (status && new_edge_) ++own_commits_;
  if (!status) rollback();
  pending_.clear();
  new_edge_.reset();
  head_edge_.reset();
  return status;
}

void PostgresLogStore::rollback() {
  pending_.clear();
  new_edge_.reset();
  head_edge_.reset();
  if (conn_ != nullptr && PQtransactionStatus(conn_.get()) != PQTRANS_IDLE)
    (void)pg::run(conn_.get(), "ROLLBACK");
}

// Every commit that moves the head adds one to its version; less this connection's own, the
// number changes exactly when another writer committed (as SQLite's PRAGMA data_version).
Result<std::int64_t> PostgresLogStore::data_version() {
  if (!head_edge_) {
    auto edge = this->edge();
    if (!edge) return edge.error();
  }
  return head_version_ - own_commits_;
}

Result<TreeEdge> PostgresLogStore::edge() {
  if (head_edge_) return *head_edge_;
  auto reply = query("read the audit head", kSelectHead);
  if (!reply) return reply.error();
  return read_head(*reply);
}

Status PostgresLogStore::check_edge(const TreeEdge& from_rows) {
  auto head = edge();
  if (!head) return head.error();
  if (*head == from_rows) return {};
  return Error::make("log_inconsistent",
                     "the audit_head row (size " + std::to_string(head->frontier.size()) +
                         ") does not match the records and checkpoints (size " +
                         std::to_string(from_rows.frontier.size()) + ")");
}

Status PostgresLogStore::set_edge(const TreeEdge& edge) {
  new_edge_ = edge;
  return {};
}

Result<std::optional<LogMeta>> PostgresLogStore::read_meta() {
  auto reply = query("read audit_meta", "SELECT key, value FROM audit_meta");
  if (!reply) return reply.error();
  std::map<std::string, std::string> meta;
  for (int row = 0; row < reply->rows(); ++row)
    meta[text_of(bytes_at(*reply, row, 0))] = text_of(bytes_at(*reply, row, 1));
  if (meta.empty()) return std::optional<LogMeta>();
  if (meta["format"] != kLogFormat)
    return not_a_log(name_, "format is " + (meta["format"].empty() ? "missing" : meta["format"]) +
                                ", expected " + std::string(kLogFormat));
  auto key = PublicKey::from_hex(meta["public_key"]);
  if (meta["origin"].empty() || !key)
    return not_a_log(name_, "its origin or public key is missing or malformed");
  return std::optional<LogMeta>(LogMeta{meta["origin"], *key});
}

Status PostgresLogStore::write_meta(const LogMeta& meta) {
  Params params;
  params.text(kLogFormat);
  params.text(meta.origin);
  params.text(meta.public_key.hex());
  auto reply = query("write audit_meta",
                     "INSERT INTO audit_meta(key, value) VALUES ('format', $1), ('origin', $2), "
                     "('public_key', $3)",
                     params);
  return reply ? Status() : Status(reply.error());
}

Result<LogTail> PostgresLogStore::tail() {
  auto reply = query("read the last record",
                     "SELECT idx, leaf_hash FROM audit_records ORDER BY idx DESC LIMIT 1");
  if (!reply) return reply.error();
  LogTail tail;
  if (reply->rows() == 1) {
    tail.size = static_cast<std::uint64_t>(int64_at(*reply, 0, 0)) + 1;
    ByteView leaf = bytes_at(*reply, 0, 1);
    if (leaf.size() != kHashSize)
      return Error::make("audit_storage", "the last record's stored leaf hash is malformed");
    tail.last_leaf = hash_from(leaf);
  }
  return tail;
}

namespace {
// The hash of perfect subtree (level, index) from the row of its last leaf, if stored there.
std::optional<Hash> subtree_in_row(const pg::Reply& reply, int row, unsigned level) {
  ByteView bytes = level == 0 ? bytes_at(reply, row, 1) : bytes_at(reply, row, 2);
  std::size_t offset = level == 0 ? 0 : (level - 1) * kHashSize;
  if (bytes.size() < offset + kHashSize) return std::nullopt;
  return hash_from(bytes.subspan(offset, kHashSize));
}

Error node_missing(unsigned level, std::uint64_t index, std::uint64_t last_leaf) {
  return Error::make("audit_storage", "tree node (level " + std::to_string(level) + ", index " +
                                          std::to_string(index) + ") is not stored in record " +
                                          std::to_string(last_leaf));
}
}  // namespace

Result<Hash> PostgresLogStore::subtree(unsigned level, std::uint64_t index) {
  std::uint64_t last_leaf = ((index + 1) << level) - 1;
  Params params;
  params.text(int_text(last_leaf));
  auto reply = query("read a tree node",
                     "SELECT idx, leaf_hash, subtree_hashes FROM audit_records WHERE idx = $1::bigint",
                     params);
  if (!reply) return reply.error();
  std::optional<Hash> hash = reply->rows() == 1 ? subtree_in_row(*reply, 0, level) : std::nullopt;
  if (!hash) return node_missing(level, index, last_leaf);
  return *hash;
}

Result<MerkleFrontier> PostgresLogStore::frontier(std::uint64_t size) {
  auto positions = frontier_subtree_positions(size);
  if (positions.empty()) return MerkleFrontier();
  std::string wanted = "{";
  for (auto [level, index] : positions)
    wanted += (wanted.size() > 1 ? "," : "") + int_text(((index + 1) << level) - 1);
  Params params;
  params.text(wanted + "}");
  auto reply = query("read the tree's edge",
                     "SELECT idx, leaf_hash, subtree_hashes FROM audit_records "
                     "WHERE idx = ANY($1::bigint[])",
                     params);
  if (!reply) return reply.error();
  std::map<std::uint64_t, int> rows;
  for (int row = 0; row < reply->rows(); ++row)
    rows[static_cast<std::uint64_t>(int64_at(*reply, row, 0))] = row;
  std::vector<Hash> subtrees;
  for (auto [level, index] : positions) {
    std::uint64_t last_leaf = ((index + 1) << level) - 1;
    auto row = rows.find(last_leaf);
    auto hash = row == rows.end() ? std::nullopt : subtree_in_row(*reply, row->second, level);
    if (!hash) return node_missing(level, index, last_leaf);
    subtrees.push_back(*hash);
  }
  return *MerkleFrontier::from_subtrees(size, std::move(subtrees));
}

Result<std::optional<std::string>> PostgresLogStore::record(std::uint64_t index) {
  Params params;
  params.text(int_text(index));
  auto reply = query("read a record", "SELECT record FROM audit_records WHERE idx = $1::bigint", params);
  if (!reply) return reply.error();
  if (reply->rows() == 0) return std::optional<std::string>();
  return std::optional<std::string>(text_of(bytes_at(*reply, 0, 0)));
}

Result<std::optional<Hash>> PostgresLogStore::stored_leaf_hash(std::uint64_t index) {
  Params params;
  params.text(int_text(index));
  auto reply = query("read a leaf hash", "SELECT leaf_hash FROM audit_records WHERE idx = $1::bigint",
                     params);
  if (!reply) return reply.error();
  if (reply->rows() == 0 || bytes_at(*reply, 0, 0).size() != kHashSize)
    return std::optional<Hash>();
  return std::optional<Hash>(hash_from(bytes_at(*reply, 0, 0)));
}

Result<std::unique_ptr<RecordCursor>> PostgresLogStore::records_from(std::uint64_t index) {
  return std::unique_ptr<RecordCursor>(new PostgresRecordCursor(*this, index));
}

Status PostgresLogStore::insert_record(std::uint64_t index, std::string_view record, const Hash& leaf,
                                       const MerkleFrontier::Completed& completed) {
  pending_.push_back({index, std::string(record), leaf,
                      std::string(reinterpret_cast<const char*>(completed.hashes.front().data()),
                                  completed.count * kHashSize)});
  return {};
}

Status PostgresLogStore::insert_checkpoint(std::uint64_t size, std::string_view body,
                                           ByteView signature) {
  Params params;
  params.text(int_text(size));
  params.binary(as_bytes(body));
  params.binary(signature);
  auto reply = query("write a checkpoint",
                     "INSERT INTO audit_checkpoints(size, body, signature) VALUES ($1::bigint, $2, $3)",
                     params);
  return reply ? Status() : Status(reply.error());
}

Result<std::vector<StoredCheckpoint>> PostgresLogStore::checkpoints() {
  auto reply = query("read checkpoints",
                     "SELECT size, body, signature FROM audit_checkpoints ORDER BY size");
  if (!reply) return reply.error();
  std::vector<StoredCheckpoint> out;
  for (int row = 0; row < reply->rows(); ++row) out.push_back(checkpoint_from(*reply, row));
  return out;
}

Result<std::optional<StoredCheckpoint>> PostgresLogStore::latest_checkpoint() {
  auto reply = query("read the latest checkpoint",
                     "SELECT size, body, signature FROM audit_checkpoints ORDER BY size DESC LIMIT 1");
  if (!reply) return reply.error();
  if (reply->rows() == 0) return std::optional<StoredCheckpoint>();
  return std::optional<StoredCheckpoint>(checkpoint_from(*reply, 0));
}

}  // namespace airlock::audit::detail
