// Where the configuration puts the audit log: the daemon appends there and `airlock audit
// ... --config FILE` reads there, so the two cannot disagree.
#pragma once

#include "audit/log_location.hpp"
#include "policy/config.hpp"

namespace airlock::storage {

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

}  // namespace airlock::storage
