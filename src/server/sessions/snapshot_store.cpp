#include "server/sessions/snapshot_store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/digest.hpp"
#include "storage/sqlite_state.hpp"

namespace airlock::server {
namespace {

constexpr const char* kSnapshotsStore = "snapshots";
constexpr const char* kSnapshotColumns =
    "id, session_id, template, principal, issuer, sub, created_ms, expires_ms, bytes, sha256, memory, image_sha256";
constexpr std::size_t kDigestChunk = 1 << 20;

SnapshotRow row_of(const storage::SqliteStatement& s) {
  return {s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.integer(6), s.integer(7),
          static_cast<std::uint64_t>(s.integer(8)), s.text(9), s.integer(10) != 0, s.text(11)};
}

// Snapshot ids are the daemon's own (hex and dashes): nothing else names a file here.
bool plain_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) return false;
  return true;
}

// Databases made before snapshots with memory: their columns added (every row: without).
Status add_memory_columns(sqlite3* db) {
  for (const char* column : {"memory INTEGER NOT NULL DEFAULT 0", "image_sha256 TEXT NOT NULL DEFAULT ''"}) {
    const std::string sql = std::string("ALTER TABLE snapshots ADD COLUMN ") + column;
    char* message = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      const std::string m = message ? message : "unknown error";
      sqlite3_free(message);
      if (m.find("duplicate column name") == std::string::npos)
        return Error::make("storage", std::string(kSnapshotsStore) + ": adding a column: " + m);
    }
  }
  return {};
}

}  // namespace

Result<std::string> image_digest(const std::string& dir) {
  auto corrupt = [&](const std::string& why) { return Error::make("snapshot_corrupt", "the image " + dir + ": " + why); };
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec) || entry.is_symlink(ec)) return corrupt(entry.path().filename().string() + " is not a regular file");
    names.push_back(entry.path().filename().string());
  }
  if (ec) return corrupt(ec.message());
  if (names.empty()) return corrupt("it is empty");
  std::sort(names.begin(), names.end());
  Sha256 digest;
  std::string buf(kDigestChunk, '\0');
  for (const auto& name : names) {
    UniqueFd fd(::open((dir + "/" + name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st{};
    if (!fd || ::fstat(fd.get(), &st) != 0) return corrupt(name + ": " + std::strerror(errno));
    digest.update(name + '\0' + std::to_string(st.st_size) + '\0');
    for (ssize_t n; (n = ::read(fd.get(), buf.data(), buf.size())) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return corrupt(name + ": " + std::strerror(errno));
      digest.update(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    }
  }
  return digest.hex();
}

nlohmann::json SnapshotRow::to_json() const {
  nlohmann::json owner = {{"principal", principal.empty() ? nlohmann::json() : nlohmann::json(principal)}};
  if (!sub.empty()) owner["user"] = {{"issuer", issuer}, {"sub", sub}};
  return {{"id", id},           {"session_id", session_id}, {"template", template_name}, {"owner", owner},
          {"created", created_ms}, {"expires", expires_ms},  {"bytes", bytes},            {"sha256", sha256},
          {"memory", memory},      {"image_sha256", memory ? nlohmann::json(image_sha256) : nlohmann::json()}};
}

Result<std::unique_ptr<SnapshotStore>> SnapshotStore::open(const std::string& db_path, const std::string& dir) {
  storage::SqliteStateOptions options;
  options.synchronous = "FULL";  // a snapshot acknowledged survives a power cut
  auto db = storage::open_sqlite_state(db_path,
                                       "CREATE TABLE IF NOT EXISTS snapshots (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,"
                                       " template TEXT NOT NULL, principal TEXT NOT NULL, issuer TEXT NOT NULL,"
                                       " sub TEXT NOT NULL, created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL,"
                                       " bytes INTEGER NOT NULL, sha256 TEXT NOT NULL)",
                                       kSnapshotsStore, options);
  if (!db) return db.error();
  if (auto added = add_memory_columns(db->get()); !added) return added.error();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error::make("storage", "snapshots: cannot create " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);  // workspaces' contents: the daemon's alone
  std::unique_ptr<SnapshotStore> store(new SnapshotStore(std::move(*db), dir));
  store->remove_orphans();
  return store;
}

std::string SnapshotStore::file_of(const std::string& id) const { return dir_ + "/" + id + ".tar"; }
std::string SnapshotStore::image_of(const std::string& id) const { return dir_ + "/" + id + ".image"; }

Result<SnapshotStore::Pending> SnapshotStore::begin(const std::string& id, bool with_image) {
  if (!plain_id(id)) return Error::make("storage", "snapshots: '" + id + "' is not a snapshot id");
  Pending p;
  p.path = dir_ + "/" + id + ".partial";
  p.fd.reset(::open(p.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!p.fd) return Error::make("storage", "snapshots: cannot create " + p.path + ": " + std::strerror(errno));
  if (with_image) {
    p.image_dir = dir_ + "/" + id + ".image-partial";
    if (::mkdir(p.image_dir.c_str(), 0700) != 0) {
      const int err = errno;
      p.image_dir.clear();
      discard(p);
      return Error::make("storage", "snapshots: cannot create " + dir_ + "/" + id + ".image-partial: " + std::strerror(err));
    }
  }
  return p;
}

Status SnapshotStore::keep(Pending& pending, const SnapshotRow& row) {
  if (::fsync(pending.fd.get()) != 0) return Error::make("storage", std::string("snapshots: fsync: ") + std::strerror(errno));
  pending.fd.reset();
  if (::rename(pending.path.c_str(), file_of(row.id).c_str()) != 0)
    return Error::make("storage", std::string("snapshots: rename: ") + std::strerror(errno));
  pending.path = file_of(row.id);  // discard() removes it if the row cannot be written
  if (!pending.image_dir.empty()) {
    if (::rename(pending.image_dir.c_str(), image_of(row.id).c_str()) != 0)
      return Error::make("storage", std::string("snapshots: rename the image: ") + std::strerror(errno));
    pending.image_dir = image_of(row.id);
  }
  std::lock_guard lock(mu_);
  storage::SqliteStatement s(db_.get(), (std::string("INSERT INTO snapshots (") + kSnapshotColumns +
                                         ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").c_str());
  s.bind(1, row.id);
  s.bind(2, row.session_id);
  s.bind(3, row.template_name);
  s.bind(4, row.principal);
  s.bind(5, row.issuer);
  s.bind(6, row.sub);
  s.bind(7, row.created_ms);
  s.bind(8, row.expires_ms);
  s.bind(9, static_cast<std::int64_t>(row.bytes));
  s.bind(10, row.sha256);
  s.bind(11, static_cast<std::int64_t>(row.memory ? 1 : 0));
  s.bind(12, row.image_sha256);
  if (!s.step_done()) return storage::sqlite_error(db_.get(), kSnapshotsStore, "recording a snapshot");
  pending.path.clear();
  pending.image_dir.clear();
  return {};
}

void SnapshotStore::discard(Pending& pending) {
  pending.fd.reset();
  if (!pending.path.empty()) ::unlink(pending.path.c_str());
  pending.path.clear();
  std::error_code ec;
  if (!pending.image_dir.empty()) std::filesystem::remove_all(pending.image_dir, ec);
  pending.image_dir.clear();
}

std::optional<SnapshotRow> SnapshotStore::find(const std::string& id) {
  std::lock_guard lock(mu_);
  storage::SqliteStatement s(db_.get(), (std::string("SELECT ") + kSnapshotColumns + " FROM snapshots WHERE id = ?").c_str());
  s.bind(1, id);
  if (s.step() != SQLITE_ROW) return std::nullopt;
  return row_of(s);
}

std::vector<SnapshotRow> SnapshotStore::all() {
  std::lock_guard lock(mu_);
  storage::SqliteStatement s(db_.get(), (std::string("SELECT ") + kSnapshotColumns + " FROM snapshots ORDER BY created_ms").c_str());
  std::vector<SnapshotRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(row_of(s));
  return out;
}

Status SnapshotStore::remove(const std::string& id) {
  {
    std::lock_guard lock(mu_);
    storage::SqliteStatement s(db_.get(), "DELETE FROM snapshots WHERE id = ?");
    s.bind(1, id);
    if (!s.step_done()) return storage::sqlite_error(db_.get(), kSnapshotsStore, "removing a snapshot");
  }
  if (plain_id(id)) {
    ::unlink(file_of(id).c_str());
    std::error_code ec;
    std::filesystem::remove_all(image_of(id), ec);
  }
  return {};
}

int SnapshotStore::remove_expired(std::int64_t now_ms) {
  std::vector<std::string> expired;  // only their ids: the sweeper asks every second
  {
    std::lock_guard lock(mu_);
    storage::SqliteStatement s(db_.get(), "SELECT id FROM snapshots WHERE expires_ms <= ?");
    s.bind(1, now_ms);
    while (s.step() == SQLITE_ROW) expired.push_back(s.text(0));
  }
  int removed = 0;
  for (const auto& id : expired)
    if (remove(id)) ++removed;
  return removed;
}

std::size_t SnapshotStore::count_owned(const std::string& principal, const std::string& issuer, const std::string& sub) {
  std::lock_guard lock(mu_);
  storage::SqliteStatement s(db_.get(), "SELECT COUNT(*) FROM snapshots WHERE principal = ? AND issuer = ? AND sub = ?");
  s.bind(1, principal);
  s.bind(2, issuer);
  s.bind(3, sub);
  return s.step() == SQLITE_ROW ? static_cast<std::size_t>(s.integer(0)) : 0;
}

void SnapshotStore::remove_orphans() {
  std::set<std::string> kept;
  for (const auto& row : all()) {
    kept.insert(row.id + ".tar");
    if (row.memory) kept.insert(row.id + ".image");
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (!kept.count(name)) std::filesystem::remove_all(entry.path(), ec);
  }
}

}  // namespace airlock::server
