// Where the configuration puts the audit log and the daemon's state: the daemon writes there
// and the CLI (`airlock audit ... --config FILE`, `airlock mcp pins`) reads there, so the two
// cannot disagree. Here, above policy, audit and storage, so that none of those includes
// another's layer.
#pragma once

#include "audit/log_location.hpp"
#include "policy/config.hpp"
#include "storage/state_location.hpp"

namespace airlock::pipeline {

// storage.postgres set: that database; otherwise <dataDir>/audit.db. The signing key is
// storage.signingKeyFile when set, else the file beside audit.db.
inline audit::LogLocation audit_log_location(const policy::StorageConfig& storage) {
  audit::LogLocation location;
  if (storage.postgres) {
    location.postgres_url = storage.postgres->url;
    location.postgres_password_file = storage.postgres->password_file;
  } else {
    location.sqlite_path = storage.data_dir + "/audit.db";
  }
  location.key_file = storage.signing_key_file;
  return location;
}

// storage.postgres set: that database; otherwise <dataDir>/state.db.
inline storage::StateLocation state_location(const policy::StorageConfig& storage) {
  storage::StateLocation location;
  if (storage.postgres) {
    location.postgres.url = storage.postgres->url;
    location.postgres.password_file = storage.postgres->password_file;
  } else {
    location.sqlite_path = storage.data_dir + "/state.db";
  }
  return location;
}

}  // namespace airlock::pipeline
