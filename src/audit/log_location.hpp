// Where an audit log is stored: a SQLite file (the embedded default) or a PostgreSQL database
// several writers (processes, hosts) share. Plain data; storage.* in the configuration
// (policy/config_storage.cpp) says which, and pipeline/storage_locations.hpp makes one of these.
#pragma once

#include <string>

namespace airlock::audit {

struct LogLocation {
  std::string sqlite_path;   // the SQLite file; or
  std::string postgres_url;  // postgresql://user[:password]@host:port/database
  // The password, when the URL has none: a file holding it (a trailing newline is dropped).
  std::string postgres_password_file;
  // The Ed25519 key that signs checkpoints. Empty: <sqlite_path>.key. Every writer of a
  // PostgreSQL log must be given the same file, so it is required there.
  std::string key_file;

  static LogLocation sqlite(std::string path) {
    LogLocation location;
    location.sqlite_path = std::move(path);
    return location;
  }
  bool is_postgres() const { return !postgres_url.empty(); }
  // The key file in use ("" for PostgreSQL without key_file: an error at open).
  std::string signing_key_file() const {
    if (!key_file.empty() || is_postgres()) return key_file;
    return sqlite_path + ".key";
  }
  // For messages: the path, or the URL with its password replaced by "[redacted]".
  std::string describe() const;
};

}  // namespace airlock::audit
