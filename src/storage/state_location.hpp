// Where the daemon's state is (invocations, approvals, credential leases, MCP tool pins):
// <dataDir>/state.db (SQLite, one daemon), or the storage.postgres database that several
// replicas share. The configuration's choice: pipeline/storage_locations.hpp.
#pragma once

#include <string>

#include "storage/pg_database.hpp"

namespace airlock::storage {

struct StateLocation {
  std::string sqlite_path;      // used when postgres.url is empty
  pg::Database::Location postgres;
  bool is_postgres() const { return !postgres.url.empty(); }
};

}  // namespace airlock::storage
