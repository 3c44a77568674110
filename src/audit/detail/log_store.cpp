#include "audit/detail/log_store.hpp"

#include "audit/detail/postgres_log_store.hpp"
#include "audit/detail/sqlite_log_store.hpp"
#include "storage/postgres.hpp"

namespace airlock::audit {

std::string LogLocation::describe() const {
  if (!is_postgres()) return sqlite_path;
  auto password = storage::pg::url_password(postgres_url);
  if (!password) return "a PostgreSQL URL that does not parse";
  return storage::pg::redact(postgres_url, {*password});
}

namespace detail {

Error not_a_log(const std::string& name, const std::string& why) {
  return Error::make("not_an_audit_log", name + " is not an Airlock audit log: " + why);
}

Hash hash_from(ByteView bytes) {
  Hash h{};
  std::copy(bytes.begin(), bytes.end(), h.begin());
  return h;
}

Result<SignedCheckpoint> parse_stored_checkpoint(const StoredCheckpoint& row) {
  auto checkpoint = parse_checkpoint_body(row.body);
  if (!checkpoint) return checkpoint.error();
  if (row.signature.size() != kSignatureSize)
    return Error::make("malformed_checkpoint", "checkpoint signature is " +
                                                   std::to_string(row.signature.size()) +
                                                   " bytes, not 64");
  SignedCheckpoint out{*checkpoint, row.body, {}};
  std::copy(row.signature.begin(), row.signature.end(),
            reinterpret_cast<char*>(out.signature.data()));
  return out;
}

Result<std::unique_ptr<LogStore>> LogStore::open_for_writing(const LogLocation& location,
                                                             int busy_timeout_ms) {
  if (location.is_postgres()) return PostgresLogStore::open(location, busy_timeout_ms, false);
  return SqliteLogStore::open_for_writing(location.sqlite_path, busy_timeout_ms);
}

Result<std::unique_ptr<LogStore>> LogStore::open_for_reading(const LogLocation& location) {
  if (location.is_postgres()) return PostgresLogStore::open(location, 10'000, true);
  return SqliteLogStore::open_for_reading(location.sqlite_path);
}

SubtreeLookup LogStore::subtree_lookup() {
  return [this](unsigned level, std::uint64_t index) { return subtree(level, index); };
}

Result<MerkleFrontier> LogStore::frontier(std::uint64_t size) {
  std::vector<Hash> subtrees;
  for (auto [level, index] : frontier_subtree_positions(size)) {
    auto hash = subtree(level, index);
    if (!hash) return hash.error();
    subtrees.push_back(*hash);
  }
  return *MerkleFrontier::from_subtrees(size, std::move(subtrees));
}

Result<TreeEdge> LogStore::edge_from_rows() {
  auto tail = this->tail();
  if (!tail) return tail.error();
  auto frontier = this->frontier(tail->size);
  if (!frontier) return frontier.error();
  auto latest = latest_checkpoint();
  if (!latest) return latest.error();
  TreeEdge edge{std::move(*frontier), tail->last_leaf, std::nullopt};
  if (*latest) edge.checkpoint_size = (*latest)->size;
  return edge;
}

}  // namespace detail
}  // namespace airlock::audit
