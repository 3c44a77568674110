// Where the configuration puts the daemon's state (invocations, approvals, credential leases,
// MCP tool pins): <dataDir>/state.db (SQLite, one daemon), or the storage.postgres database
// that several replicas share, as the audit log (storage/audit_location.hpp).
#pragma once

#include <string>

#include "policy/config.hpp"
#include "storage/pg_database.hpp"

namespace airlock::storage {

struct StateLocation {
  std::string sqlite_path;      // used when postgres.url is empty
  pg::Database::Location postgres;
  bool is_postgres() const { return !postgres.url.empty(); }
};

inline StateLocation state_location(const policy::StorageConfig& storage) {
  StateLocation location;
  if (storage.postgres) {
    location.postgres.url = storage.postgres->url;
    location.postgres.password_file = storage.postgres->password_file;
  } else {
    location.sqlite_path = storage.data_dir + "/state.db";
  }
  return location;
}

}  // namespace airlock::storage
