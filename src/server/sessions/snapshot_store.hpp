// Snapshots of sessions' workspaces (docs/sessions.md): each one an archive of a session's
// work dir in <dataDir>/snapshots/<id>.tar with its SHA-256 (a snapshot with memory also the
// checkpoint's image directory <id>.image/, 0700, with the digest of its files), and a row in <dataDir>/state.db
// naming its owner (the session's (principal, user)), its template and when it expires. The
// file is complete and synced before its row is written, and its row removed before the file:
// a row always names a whole file; a file without a row (a crash between) is removed at open.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "storage/sqlite_state.hpp"

namespace airlock::server {

struct SnapshotRow {
  std::string id;
  std::string session_id;  // the session it was taken of
  std::string template_name;
  std::string principal, issuer, sub;  // its owner
  std::int64_t created_ms = 0, expires_ms = 0;
  std::uint64_t bytes = 0;
  std::string sha256;  // of the archive, hex
  bool memory = false;        // with the session's processes and memory: image_of(id)
  std::string image_sha256;   // memory: image_digest of the image directory, hex
  nlohmann::json to_json() const;
};

// The SHA-256 of a checkpoint's image directory: of each regular file in name order, its name,
// a NUL, its size in decimal, a NUL and its bytes. Anything else in it (a directory, a link)
// is refused ("snapshot_corrupt"), as is a directory that cannot be read.
Result<std::string> image_digest(const std::string& dir);

class SnapshotStore {
 public:
  // Opens (creating) the table in `db_path` and the directory `dir`. Errors: "storage".
  static Result<std::unique_ptr<SnapshotStore>> open(const std::string& db_path, const std::string& dir);

  // A file to write a new snapshot into; keep() makes it the snapshot `row` (durable when it
  // returns ok), discard() removes it.
  struct Pending {
    std::string path;
    UniqueFd fd;
    std::string image_dir;  // with_image: an empty 0700 directory for the checkpoint
  };
  Result<Pending> begin(const std::string& id, bool with_image = false);
  Status keep(Pending& pending, const SnapshotRow& row);
  void discard(Pending& pending);

  std::optional<SnapshotRow> find(const std::string& id);
  std::vector<SnapshotRow> all();
  Status remove(const std::string& id);  // the row, then the file
  int remove_expired(std::int64_t now_ms);  // how many went
  std::size_t count_owned(const std::string& principal, const std::string& issuer, const std::string& sub);
  std::string file_of(const std::string& id) const;  // where its archive is
  std::string image_of(const std::string& id) const;  // where its image directory is

 private:
  SnapshotStore(storage::SqliteConnection db, std::string dir) : db_(std::move(db)), dir_(std::move(dir)) {}
  void remove_orphans();  // files without a row
  std::mutex mu_;
  storage::SqliteConnection db_;
  std::string dir_;
};

}  // namespace airlock::server
