#include "audit/log_reader.hpp"

#include <nlohmann/json.hpp>

#include "audit/canonical_json.hpp"
#include "audit/detail/log_store.hpp"
#include "audit/merkle.hpp"

namespace airlock::audit {

struct LogReader::State {
  std::unique_ptr<detail::LogStore> store;
  detail::LogMeta meta;
  LogLocation location;
};

LogReader::LogReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
LogReader::LogReader(LogReader&&) noexcept = default;
LogReader& LogReader::operator=(LogReader&&) noexcept = default;
LogReader::~LogReader() = default;

Result<LogReader> LogReader::open(const std::string& path) {
  return open(LogLocation::sqlite(path));
}

Result<LogReader> LogReader::open(const LogLocation& location) {
  auto store = detail::LogStore::open_for_reading(location);
  if (!store) return store.error();
  auto meta = (*store)->read_meta();
  if (!meta) return meta.error();
  if (!*meta) return detail::not_a_log((*store)->name(), "it has no identity");
  return LogReader(
      std::make_unique<State>(State{std::move(*store), std::move(**meta), location}));
}

const std::string& LogReader::path() const { return state_->store->name(); }
const LogLocation& LogReader::location() const { return state_->location; }
const std::string& LogReader::origin() const { return state_->meta.origin; }
const PublicKey& LogReader::public_key() const { return state_->meta.public_key; }
detail::LogStore& LogReader::store() { return *state_->store; }

Status LogReader::begin_snapshot() { return state_->store->begin_read(); }
void LogReader::end_snapshot() { state_->store->rollback(); }

Result<std::uint64_t> LogReader::size() {
  auto tail = state_->store->tail();
  if (!tail) return tail.error();
  return tail->size;
}

Result<std::string> LogReader::record(std::uint64_t index) {
  auto record = state_->store->record(index);
  if (!record) return record.error();
  if (!*record) return Error::make("not_found", "the log has no record " + std::to_string(index));
  return std::move(**record);
}

Status LogReader::for_each_record(
    std::uint64_t from, const std::function<bool(std::uint64_t, std::string_view)>& visit) {
  auto cursor = state_->store->records_from(from);
  if (!cursor) return cursor.error();
  while (true) {
    auto row = (*cursor)->next();
    if (!row) return row.error();
    if (!*row) return {};
    ByteView record = (*cursor)->record();
    if (!visit((*cursor)->index(),
               std::string_view(reinterpret_cast<const char*>(record.data()), record.size())))
      return {};
  }
}

Result<std::vector<SignedCheckpoint>> LogReader::checkpoints() {
  auto rows = state_->store->checkpoints();
  if (!rows) return rows.error();
  std::vector<SignedCheckpoint> out;
  for (const auto& row : *rows) {
    auto parsed = detail::parse_stored_checkpoint(row);
    if (!parsed) return parsed.error();
    out.push_back(std::move(*parsed));
  }
  return out;
}

Result<std::optional<SignedCheckpoint>> LogReader::latest_checkpoint() {
  auto row = state_->store->latest_checkpoint();
  if (!row) return row.error();
  if (!*row) return std::optional<SignedCheckpoint>();
  auto parsed = detail::parse_stored_checkpoint(**row);
  if (!parsed) return parsed.error();
  if (auto status = verify_checkpoint_signature(*parsed, public_key()); !status)
    return status.error();
  return std::optional<SignedCheckpoint>(std::move(*parsed));
}

Result<Hash> LogReader::root(std::uint64_t tree_size) {
  return tree_root(tree_size, state_->store->subtree_lookup());
}

Result<std::vector<Hash>> LogReader::inclusion_proof(std::uint64_t index, std::uint64_t tree_size) {
  return audit::inclusion_proof(index, tree_size, state_->store->subtree_lookup());
}

Result<std::vector<Hash>> LogReader::consistency_proof(std::uint64_t size1, std::uint64_t size2) {
  return audit::consistency_proof(size1, size2, state_->store->subtree_lookup());
}

namespace {
constexpr const char* kProofFormat = "airlock-audit-proof/v1";

Error bad_proof(const std::string& message) { return Error::make("proof_invalid", message); }
}  // namespace

Result<nlohmann::json> prove_record(LogReader& reader, std::uint64_t index) {
  if (auto status = reader.begin_snapshot(); !status) return status.error();
  struct SnapshotGuard {
    LogReader& reader;
    ~SnapshotGuard() { reader.end_snapshot(); }
  } guard{reader};

  auto latest = reader.latest_checkpoint();
  if (!latest) return latest.error();
  if (!*latest || (*latest)->checkpoint.size <= index)
    return Error::make("not_signed",
                       "record " + std::to_string(index) +
                           " is not covered by a signed checkpoint yet; run `airlock audit "
                           "checkpoint " + reader.path() + "` first");
  const SignedCheckpoint& checkpoint = **latest;
  auto record = reader.record(index);
  if (!record) return record.error();
  auto proof = reader.inclusion_proof(index, checkpoint.checkpoint.size);
  if (!proof) return proof.error();
  auto path = nlohmann::json::array();
  for (const Hash& h : *proof) path.push_back(to_hex(h));
  return nlohmann::json{{"format", kProofFormat},
                        {"index", index},
                        {"record", *record},
                        {"leaf_hash", to_hex(leaf_hash(as_bytes(*record)))},
                        {"tree_size", checkpoint.checkpoint.size},
                        {"inclusion_proof", std::move(path)},
                        {"checkpoint", checkpoint_envelope(checkpoint, reader.public_key())}};
}

Status verify_record_proof(const nlohmann::json& proof, const std::optional<PublicKey>& trusted_key) {
  if (!proof.is_object() || proof.value("format", "") != kProofFormat)
    return bad_proof(std::string("not an ") + kProofFormat + " document");
  if (!proof.contains("index") || !proof["index"].is_number_unsigned() ||
      !proof.contains("tree_size") || !proof["tree_size"].is_number_unsigned() ||
      !proof.contains("record") || !proof["record"].is_string() ||
      !proof.contains("inclusion_proof") || !proof["inclusion_proof"].is_array() ||
      !proof.contains("checkpoint"))
    return bad_proof("a proof has index, record, tree_size, inclusion_proof and checkpoint");
  auto checkpoint = parse_checkpoint_envelope(proof["checkpoint"]);
  if (!checkpoint) return checkpoint.error();
  if (trusted_key && checkpoint->key != *trusted_key)
    return Error::make("bad_signature", "the checkpoint is signed by key " +
                                            checkpoint->key.key_id() + ", not the trusted key " +
                                            trusted_key->key_id());
  const Checkpoint& cp = checkpoint->signed_checkpoint.checkpoint;
  auto tree_size = proof["tree_size"].get<std::uint64_t>();
  if (tree_size != cp.size)
    return bad_proof("the proof is for tree size " + std::to_string(tree_size) +
                     " but the checkpoint is for " + std::to_string(cp.size));
  std::vector<std::string> path_bytes;
  for (const auto& node : proof["inclusion_proof"]) {
    auto bytes = node.is_string() ? from_hex(node.get<std::string>()) : std::nullopt;
    if (!bytes) return bad_proof("an inclusion proof entry is not hex");
    path_bytes.push_back(std::move(*bytes));
  }
  std::vector<ByteView> path;
  for (const auto& bytes : path_bytes) path.push_back(as_bytes(bytes));
  const auto& record = proof["record"].get_ref<const std::string&>();
  auto index = proof["index"].get<std::uint64_t>();
  if (find_top_level_member(record, "index") != std::to_string(index))
    return bad_proof("the record's own index is not " + std::to_string(index));
  Hash leaf = leaf_hash(as_bytes(record));
  if (proof.contains("leaf_hash") && proof["leaf_hash"] != to_hex(leaf))
    return bad_proof("leaf_hash is not SHA-256(0x00 || record)");
  return verify_inclusion(index, cp.size, ByteView(leaf), path, ByteView(cp.root));
}

}  // namespace airlock::audit
