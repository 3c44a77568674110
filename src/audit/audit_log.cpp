#include "audit/audit_log.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "audit/canonical_json.hpp"
#include "audit/detail/log_store.hpp"
#include "audit/merkle.hpp"

namespace airlock::audit {
namespace {

constexpr std::string_view kCredentialFingerprintLabel = "airlock-audit credential fingerprint v1";
constexpr std::array<std::string_view, 3> kReservedMembers = {"index", "prev", "time"};

std::int64_t unix_time_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string random_origin() {
  std::random_device random;
  std::array<std::uint8_t, 8> id{};
  for (auto& byte : id) byte = static_cast<std::uint8_t>(random());
  return "airlock-audit/" + to_hex(ByteView(id));
}

Error closed_error() { return Error::make("audit_closed", "the audit log is closed"); }

// The caller's fields as canonical members, checked before they reach the writer thread so
// a bad record never costs (or fails) anyone else's transaction.
Result<std::vector<CanonicalMember>> canonical_members(const nlohmann::json& fields) {
  if (!fields.is_object())
    return Error::make("invalid_record", "an audit record is a JSON object");
  std::vector<CanonicalMember> members;
  members.reserve(fields.size() + kReservedMembers.size());
  for (const auto& [key, value] : fields.items()) {
    for (std::string_view reserved : kReservedMembers)
      if (key == reserved)
        return Error::make("invalid_record", "\"" + key + "\" is set by the log, not the caller");
    std::string quoted_key;
    if (!append_canonical_string(key, quoted_key))
      return Error::make("invalid_record", "a member name is not valid UTF-8");
    auto text = canonical_json(value);
    if (!text) return Error::make("invalid_record", key + ": " + text.error().message);
    members.push_back({key, std::move(*text)});
  }
  return members;
}

// One caller's request; it lives on the caller's stack while the caller waits for its ticket
// to be answered.
struct WriteRequest {
  enum class Kind { append, checkpoint } kind = Kind::append;
  std::vector<CanonicalMember> members;  // append
  std::size_t bytes = 0;                  // the members' canonical bytes (about the record's)
  std::optional<Result<AppendReceipt>> receipt;
  std::optional<Result<SignedCheckpoint>> checkpoint;
  std::uint64_t ticket = 0;  // position in the queue, from 1

  void fail(const Error& error) {
    if (kind == Kind::append) receipt = error;
    else checkpoint = error;
  }
};

// The requests one transaction writes, and until when late arrivals may still join it.
struct Batch {
  std::vector<WriteRequest*> requests;
  std::size_t bytes = 0;
  std::size_t target = 0;  // how many to wait for: as many as the last batch held
  std::chrono::steady_clock::time_point deadline{};
};

// What the writer knows of the tree between transactions; copied before a batch so a failed
// batch leaves it exactly as it was.
struct TreeState {
  MerkleFrontier frontier;
  Hash last_leaf{};
  std::optional<SignedCheckpoint> latest_checkpoint;
  std::int64_t data_version = 0;

  std::uint64_t size() const { return frontier.size(); }
  bool has_unsigned_records() const {
    return !latest_checkpoint || latest_checkpoint->checkpoint.size < size();
  }
};

Error inconsistent(const detail::LogStore& store, const std::string& why) {
  return Error::make("log_inconsistent", store.name() + ": " + why +
                                             "; run `airlock audit verify` (no appends until "
                                             "it is resolved)");
}

// The latest stored checkpoint, checked against the tree's edge: its signature holds, it is of
// this log, at the size its row says, and the stored tree has its root at that size.
Result<std::optional<SignedCheckpoint>> checked_latest_checkpoint(detail::LogStore& store,
                                                                  const PublicKey& key,
                                                                  const std::string& origin,
                                                                  const detail::TreeEdge& edge) {
  auto latest_row = store.latest_checkpoint();
  if (!latest_row) return latest_row.error();
  std::optional<std::uint64_t> row_size;
  if (*latest_row) row_size = (*latest_row)->size;
  if (row_size != edge.checkpoint_size)
    return inconsistent(store, "the latest checkpoint is not the one the log's head names");
  if (!*latest_row) return std::optional<SignedCheckpoint>();
  auto parsed = detail::parse_stored_checkpoint(**latest_row);
  if (!parsed) return inconsistent(store, parsed.error().message);
  if (auto status = verify_checkpoint_signature(*parsed, key); !status)
    return inconsistent(store, "latest checkpoint: " + status.error().message);
  const Checkpoint& cp = parsed->checkpoint;
  const std::uint64_t size = edge.frontier.size();
  if (cp.origin != origin || cp.size != (*latest_row)->size)
    return inconsistent(store, "latest checkpoint does not belong at size " +
                                   std::to_string((*latest_row)->size) + " of this log");
  if (cp.size > size)
    return inconsistent(store, "the log has " + std::to_string(size) +
                                   " records but its latest checkpoint covers " +
                                   std::to_string(cp.size));
  auto root = cp.size == size ? Result<Hash>(edge.frontier.root())
                              : tree_root(cp.size, store.subtree_lookup());
  if (!root) return inconsistent(store, root.error().message);
  if (*root != cp.root)
    return inconsistent(store, "the stored tree does not have the latest checkpoint's root at size " +
                                   std::to_string(cp.size));
  return std::optional<SignedCheckpoint>(std::move(*parsed));
}

// Reads the tree's edge from the records and the latest checkpoint, and checks that they
// agree with each other and with the edge the store keeps for writers (at open, and after a
// reconnect: the full check).
Status load_tree_state(detail::LogStore& store, const PublicKey& key, const std::string& origin,
                       TreeState& tree) {
  auto edge = store.edge_from_rows();
  if (!edge) return edge.error();
  if (auto kept = store.check_edge(*edge); !kept) return inconsistent(store, kept.error().message);
  auto latest = checked_latest_checkpoint(store, key, origin, *edge);
  if (!latest) return latest.error();
  auto version = store.data_version();
  if (!version) return version.error();
  tree = TreeState{std::move(edge->frontier), edge->last_leaf, std::move(*latest), *version};
  return {};
}

// Another writer committed since this one last did (we hold the write lock now, so what we
// read is the latest state): take the edge it left; check its checkpoint if it signed one.
Status refresh_tree_state(detail::LogStore& store, const PublicKey& key, const std::string& origin,
                          TreeState& tree, std::int64_t version) {
  auto edge = store.edge();
  if (!edge) return edge.error();
  std::optional<std::uint64_t> known;
  if (tree.latest_checkpoint) known = tree.latest_checkpoint->checkpoint.size;
  if (edge->checkpoint_size != known) {
    auto latest = checked_latest_checkpoint(store, key, origin, *edge);
    if (!latest) return latest.error();
    tree.latest_checkpoint = std::move(*latest);
  }
  tree.frontier = std::move(edge->frontier);
  tree.last_leaf = edge->last_leaf;
  tree.data_version = version;
  return {};
}

}  // namespace

struct AuditLog::State {
  State(LogLocation l, AuditLogOptions o, std::unique_ptr<detail::LogStore> s, SigningKey k,
        std::string orig)
      : location(std::move(l)), name(s->name()), options(std::move(o)), store(std::move(s)),
        reconnectable(store->can_reconnect()), key(std::move(k)), origin(std::move(orig)),
        credential_key(key.derive_secret(kCredentialFingerprintLabel)) {}

  const LogLocation location;
  const std::string name;
  const AuditLogOptions options;
  std::unique_ptr<detail::LogStore> store;  // used by the writer thread only once it runs
  // After a storage failure: PostgreSQL's state is the server's, so the writer reconnects and
  // reads it again; a SQLite file whose write failed is only trusted after a reopen.
  const bool reconnectable;
  const SigningKey key;
  const std::string origin;
  const Hash credential_key;

  // Owned by the writer thread.
  TreeState tree;
  std::chrono::steady_clock::time_point last_checkpoint_at = std::chrono::steady_clock::now();
  std::uint64_t checkpoints_signed = 0;
  // How many callers the next batch should wait for: those the last commit answered (they
  // are about to append again) and those that queued meanwhile. Read by callers under `mutex`.
  std::size_t expected_callers = 1;
  std::chrono::steady_clock::duration last_fsync_duration{};  // of the last COMMIT
  std::chrono::steady_clock::time_point next_reconnect_at{};

  // Shared between callers and the writer thread.
  std::mutex mutex;
  std::condition_variable work_ready;
  std::deque<WriteRequest*> queue;
  std::uint64_t next_ticket = 1;
  // Every request with a ticket up to this one has its answer: answering a whole batch is one
  // store and one wake-all, not a wake per caller. Callers wait on `answered`, a condition
  // variable, not atomic::wait: libstdc++'s atomic wait spins with sched_yield first, and
  // eight callers yielding on two cores took the CPU the writer and the next callers needed
  // (8 writers: median 21.2k -> 24.6k appends/s).
  std::uint64_t answered_through = 0;
  std::condition_variable answered;
  bool stopping = false;
  bool closed = false;
  std::optional<Error> failure;  // sticky: set (by the writer) at the first failed transaction
  AuditLogStats stats;
  Status close_status;
  std::thread writer;

  void submit(WriteRequest& request);
  void run_writer();
  void take_queued(Batch& batch);
  bool take_late_arrivals(Batch& batch);
  Status process(Batch& batch, bool sign_unsigned);
  Status write_transaction(Batch& batch, bool sign_unsigned);
  Status write_request(WriteRequest& request);
  Status sync_with_other_writers();
  Status begin_or_recover();
  Result<AppendReceipt> append_record(std::vector<CanonicalMember> members);
  Status sign_checkpoint_now();
  bool checkpoint_due() const;
};

void AuditLog::State::submit(WriteRequest& request) {
  std::unique_lock lock(mutex);
  if (stopping || (failure && !reconnectable)) {
    request.fail(failure ? Error::make("audit_unavailable",
                                       "the audit log stopped after a storage failure (" +
                                           failure->message + "); reopen it")
                         : closed_error());
    return;
  }
  request.ticket = next_ticket++;
  queue.push_back(&request);
  // Wake the writer to start a batch, or when the batch it is gathering is complete; the
  // arrivals in between would only wake it to go back to sleep.
  if (queue.size() == 1 || queue.size() >= expected_callers) work_ready.notify_one();
  answered.wait(lock, [&] { return answered_through >= request.ticket; });
}

bool AuditLog::State::checkpoint_due() const {
  return !failure && tree.has_unsigned_records() && tree.size() > 0 &&
         std::chrono::steady_clock::now() >= last_checkpoint_at + options.checkpoint_interval;
}

// Takes queued requests in order while the batch stays within max_batch records and
// max_batch_bytes (its first request is always taken, however large).
void AuditLog::State::take_queued(Batch& batch) {
  while (!queue.empty() && batch.requests.size() < options.max_batch &&
         (batch.requests.empty() || batch.bytes + queue.front()->bytes <= options.max_batch_bytes)) {
    batch.bytes += queue.front()->bytes;
    batch.requests.push_back(queue.front());
    queue.pop_front();
  }
}

// Group commit. The callers the last commit answered are about to append again, each a few
// microseconds apart (longer when they outnumber the cores). The writer starts the transaction
// with whoever is queued and, while it writes their records, lets the others join: it waits
// for as many callers as the last commit answered plus those that queued meanwhile, for up to
// twice the last fsync, so that one fsync covers all of them instead of the first alone and the
// rest in the next round. A lone writer (last batch of one) never waits.
bool AuditLog::State::take_late_arrivals(Batch& batch) {
  std::unique_lock lock(mutex);
  if (batch.requests.size() >= batch.target || batch.requests.size() >= options.max_batch)
    return false;
  work_ready.wait_until(lock, batch.deadline, [&] { return !queue.empty() || stopping; });
  const std::size_t before = batch.requests.size();
  take_queued(batch);
  return batch.requests.size() > before;  // none taken: full (bytes), or nobody came
}

void AuditLog::State::run_writer() {
  std::unique_lock lock(mutex);
  while (true) {
    if (queue.empty()) {
      if (stopping) break;
      if (checkpoint_due()) {
        lock.unlock();
        Batch timed;
        (void)process(timed, /*sign_unsigned=*/true);
        lock.lock();
        continue;
      }
      if (!failure && tree.has_unsigned_records() && tree.size() > 0)
        work_ready.wait_until(lock, last_checkpoint_at + options.checkpoint_interval);
      else
        work_ready.wait(lock);
      continue;
    }
    Batch batch;
    batch.target = expected_callers;
    batch.deadline = std::chrono::steady_clock::now() +
                     std::min<std::chrono::steady_clock::duration>(last_fsync_duration * 2,
                                                                   std::chrono::milliseconds(2));
    take_queued(batch);
    lock.unlock();
    (void)process(batch, /*sign_unsigned=*/false);
    lock.lock();
    // (Counting the queued ones too keeps a batch that closed early, say 6 of 8 callers, from
    // setting the next target to 6 and the batches from settling into 6 + 2.)
    expected_callers = std::min(batch.requests.size() + queue.size(), options.max_batch);
    // The batch's callers may return (and their requests vanish) as soon as this is stored.
    answered_through = batch.requests.back()->ticket;
    // Woken with the mutex free, so the callers do not wake only to block on it.
    lock.unlock();
    answered.notify_all();
    lock.lock();
  }
  lock.unlock();
  // The final checkpoint: every committed record leaves covered by a signature.
  if (!failure && tree.has_unsigned_records()) {
    Batch final_checkpoint;
    close_status = process(final_checkpoint, /*sign_unsigned=*/true);
  }
}

// Begins a write transaction; after a failure, first reconnects and reads the whole state again
// (a reconnectable store), at most once a second so a dead server is not hammered.
Status AuditLog::State::begin_or_recover() {
  if (!failure) {
    Status begun = store->begin_write();
    if (!begun && reconnectable && begun.error().code == "storage_unavailable") {
      std::lock_guard lock(mutex);
      failure = begun.error();
    }
    return begun;
  }
  if (!reconnectable) return *failure;
  auto now = std::chrono::steady_clock::now();
  if (now < next_reconnect_at)
    return Error::make("storage_unavailable", name + ": the audit log's database is unavailable (" +
                                                  failure->message + ")");
  next_reconnect_at = now + std::chrono::seconds(1);
  Status status = store->reconnect();
  if (status) status = store->begin_write();
  // Under the write lock, so no other writer's commit lands between the reads.
  if (status) status = load_tree_state(*store, key.public_key(), origin, tree);
  if (!status) {
    store->rollback();
    return Error::make(status.error().code == "log_inconsistent" ? "log_inconsistent"
                                                                 : "storage_unavailable",
                       status.error().message);
  }
  std::lock_guard lock(mutex);
  failure.reset();
  return {};  // in the transaction begin_write() began
}

// One transaction for `batch`; on failure its callers get the error. Failing to take the write
// lock (another process held it past the busy timeout) leaves nothing written, so the log stays
// usable. Any failure after that is sticky: what reached the disk is then unknown (an fsync
// error may have dropped pages), and only reopening, which reads the disk again, is safe; a
// PostgreSQL store does that itself (begin_or_recover).
Status AuditLog::State::process(Batch& batch, bool sign_unsigned) {
  Status status = begin_or_recover();
  if (status) {
    TreeState before = tree;
    std::uint64_t checkpoints_before = checkpoints_signed;
    status = write_transaction(batch, sign_unsigned);
    if (!status) {
      store->rollback();
      tree = std::move(before);
      checkpoints_signed = checkpoints_before;
      std::lock_guard lock(mutex);  // callers read it in submit()
      failure = status.error();
    }
  }
  if (!status)
    for (WriteRequest* request : batch.requests) request->fail(status.error());
  return status;
}

Status AuditLog::State::write_request(WriteRequest& request) {
  if (request.kind == WriteRequest::Kind::append) {
    auto receipt = append_record(std::move(request.members));
    if (!receipt) return receipt.error();
    request.receipt = std::move(receipt);
  } else if (tree.has_unsigned_records()) {
    return sign_checkpoint_now();
  }
  return {};
}

// Inside the transaction process() began.
Status AuditLog::State::write_transaction(Batch& batch, bool sign_unsigned) {
  if (auto status = sync_with_other_writers(); !status) return status;
  std::size_t written = 0;
  do {
    for (; written < batch.requests.size(); ++written)
      if (auto status = write_request(*batch.requests[written]); !status) return status;
  } while (take_late_arrivals(batch));
  bool enough_records =
      tree.size() - (tree.latest_checkpoint ? tree.latest_checkpoint->checkpoint.size : 0) >=
      options.checkpoint_every_records;
  if ((sign_unsigned || enough_records) && tree.has_unsigned_records())
    if (auto status = sign_checkpoint_now(); !status) return status;
  std::optional<std::uint64_t> signed_size;
  if (tree.latest_checkpoint) signed_size = tree.latest_checkpoint->checkpoint.size;
  if (auto status = store->set_edge({tree.frontier, tree.last_leaf, signed_size}); !status)
    return status;
  auto fsync_started = std::chrono::steady_clock::now();
  if (auto status = store->commit(); !status) return status;
  last_fsync_duration = std::chrono::steady_clock::now() - fsync_started;
  {
    std::lock_guard lock(mutex);
    stats.transactions += 1;
    stats.records += static_cast<std::uint64_t>(
        std::count_if(batch.requests.begin(), batch.requests.end(),
                      [](const WriteRequest* r) { return r->kind == WriteRequest::Kind::append; }));
    stats.checkpoints = checkpoints_signed;
  }
  // Only now, committed, do callers that asked for a checkpoint get one.
  for (WriteRequest* request : batch.requests)
    if (request->kind == WriteRequest::Kind::checkpoint)
      request->checkpoint = *tree.latest_checkpoint;
  return {};
}

// Another process may have appended since our last transaction (we hold the write lock now,
// so what we read is the latest state): then the in-memory edge of the tree is stale.
Status AuditLog::State::sync_with_other_writers() {
  auto version = store->data_version();
  if (!version) return version.error();
  if (*version == tree.data_version) return {};
  return refresh_tree_state(*store, key.public_key(), origin, tree, *version);
}

Result<AppendReceipt> AuditLog::State::append_record(std::vector<CanonicalMember> members) {
  std::uint64_t index = tree.size();
  members.push_back({"index", std::to_string(index)});
  members.push_back({"prev", quoted_hex(tree.last_leaf)});
  members.push_back({"time", std::to_string(unix_time_ms())});
  std::string record = canonical_object(std::move(members));
  Hash leaf = leaf_hash(as_bytes(record));
  MerkleFrontier::Completed completed = tree.frontier.append(leaf);
  if (auto status = store->insert_record(index, record, leaf, completed); !status)
    return status.error();
  tree.last_leaf = leaf;
  return AppendReceipt{index, leaf};
}

Status AuditLog::State::sign_checkpoint_now() {
  Checkpoint checkpoint{origin, tree.size(), tree.frontier.root(), unix_time_ms()};
  auto signed_checkpoint = sign_checkpoint(checkpoint, key);
  if (!signed_checkpoint) return signed_checkpoint.error();
  if (auto status = store->insert_checkpoint(checkpoint.size, signed_checkpoint->body,
                                            ByteView(signed_checkpoint->signature));
      !status)
    return status;
  tree.latest_checkpoint = std::move(*signed_checkpoint);
  last_checkpoint_at = std::chrono::steady_clock::now();
  ++checkpoints_signed;
  return {};
}

AuditLog::AuditLog(std::unique_ptr<State> state) : state_(std::move(state)) {}

AuditLog::~AuditLog() { (void)close(); }

namespace {

// Reads the log's identity, or writes it when the log is new; both under the write lock so
// two processes creating the same log agree on one key and one origin.
Result<std::pair<detail::LogMeta, SigningKey>> load_or_create_identity(
    detail::LogStore& store, const LogLocation& location, const AuditLogOptions& options) {
  const std::string& path = store.name();
  std::string key_file = location.signing_key_file();
  if (key_file.empty())
    return Error::make("invalid_argument",
                       path + ": a PostgreSQL audit log needs a signing key file that every "
                              "writer shares (storage.signingKeyFile)");
  if (auto status = store.begin_write(); !status) return status.error();
  auto meta = store.read_meta();
  if (!meta) {
    store.rollback();
    return meta.error();
  }
  if (*meta) {
    store.rollback();
    if (!options.origin.empty() && options.origin != (*meta)->origin)
      return Error::make("invalid_argument", path + " has origin " + (*meta)->origin + ", not " +
                                                 options.origin);
    auto key = SigningKey::load(key_file);
    if (!key) return key.error();
    if (key->public_key() != (*meta)->public_key)
      return Error::make("audit_key", key_file + " is not the key of " + path + " (log key " +
                                          (*meta)->public_key.key_id() + ", file key " +
                                          key->public_key().key_id() + ")");
    return std::pair{**meta, std::move(*key)};
  }
  auto key = SigningKey::load_or_create(key_file);
  if (!key) {
    store.rollback();
    return key.error();
  }
  detail::LogMeta created{options.origin.empty() ? random_origin() : options.origin,
                          key->public_key()};
  if (auto status = store.write_meta(created); !status) {
    store.rollback();
    return status.error();
  }
  if (auto status = store.commit(); !status) return status.error();
  return std::pair{created, std::move(*key)};
}

}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path, AuditLogOptions options) {
  return open(LogLocation::sqlite(path), std::move(options));
}

Result<std::unique_ptr<AuditLog>> AuditLog::open(const LogLocation& location,
                                                 AuditLogOptions options) {
  if (options.max_batch == 0 || options.max_batch_bytes == 0 ||
      options.checkpoint_every_records == 0)
    return Error::make("invalid_argument",
                       "max_batch, max_batch_bytes and checkpoint_every_records must be > 0");
  auto store = detail::LogStore::open_for_writing(
      location, static_cast<int>(std::min<std::int64_t>(options.busy_timeout.count(), INT32_MAX)));
  if (!store) return store.error();
  auto identity = load_or_create_identity(**store, location, options);
  if (!identity) return identity.error();
  auto& [meta, key] = *identity;
  auto state = std::make_unique<State>(location, options, std::move(*store), std::move(key),
                                       meta.origin);
  // Under the write lock, so no other writer's commit lands between the reads.
  if (auto status = state->store->begin_write(); !status) return status.error();
  Status loaded = load_tree_state(*state->store, state->key.public_key(), state->origin,
                                  state->tree);
  state->store->rollback();
  if (!loaded) return loaded.error();
  State* raw = state.get();
  try {
    state->writer = std::thread([raw] { raw->run_writer(); });
  } catch (const std::system_error& e) {
    return Error::make("audit_unavailable", std::string("cannot start the writer thread: ") +
                                                e.what());
  }
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(state)));
}

Result<AppendReceipt> AuditLog::append(const nlohmann::json& fields) {
  auto members = canonical_members(fields);
  if (!members) return members.error();
  WriteRequest request;
  for (const auto& member : *members)  // "key":value,
    request.bytes += member.key.size() + member.value.size() + 4;
  request.members = std::move(*members);
  state_->submit(request);
  return std::move(*request.receipt);
}

Result<SignedCheckpoint> AuditLog::checkpoint() {
  WriteRequest request;
  request.kind = WriteRequest::Kind::checkpoint;
  state_->submit(request);
  return std::move(*request.checkpoint);
}

Status AuditLog::close() {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->closed) return state_->close_status;
    state_->stopping = true;
    state_->closed = true;
  }
  state_->work_ready.notify_one();
  if (state_->writer.joinable()) state_->writer.join();
  if (state_->failure && state_->close_status)
    state_->close_status = Error::make("audit_unavailable", state_->failure->message);
  return state_->close_status;
}

std::string AuditLog::credential_fingerprint(std::string_view value) const {
  return to_hex(hmac_sha256(ByteView(state_->credential_key), as_bytes(value)));
}

AuditLogStats AuditLog::stats() const {
  std::lock_guard lock(state_->mutex);
  AuditLogStats stats = state_->stats;
  stats.queued = state_->queue.size();
  return stats;
}

const PublicKey& AuditLog::public_key() const { return state_->key.public_key(); }
const std::string& AuditLog::origin() const { return state_->origin; }
const std::string& AuditLog::path() const { return state_->name; }
const LogLocation& AuditLog::location() const { return state_->location; }

}  // namespace airlock::audit
