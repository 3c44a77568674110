// Airlock's encrypted secret store: static values for the `secret` provider and the admin
// URLs of credential servers. <dataDir>/secrets.db holds each value sealed with AES-256-GCM
// (the name as associated data); the 32-byte key is a file of its own, 0600, outside the data
// directory (AIRLOCK_SECRETS_KEY_FILE, or <dataDir>.secrets-key beside it), so a copy of the
// data directory alone reveals nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace airlock::creds {

class SecretStore {
 public:
  // The key file for `data_dir`: $AIRLOCK_SECRETS_KEY_FILE, else <data_dir>.secrets-key.
  static std::string key_file_for(const std::string& data_dir);
  // Opens (creating them when missing) <data_dir>/secrets.db and the key file. Errors:
  // "storage", "insecure_key_file" (the key file readable or writable by group or others).
  static Result<std::unique_ptr<SecretStore>> open(const std::string& data_dir);
  ~SecretStore();

  Status set(const std::string& name, const std::string& value);
  // Error "unknown_secret" (no such name), "secret_corrupt" (it does not decrypt).
  Result<std::string> get(const std::string& name) const;
  struct Entry {
    std::string name;
    std::int64_t updated_ms = 0;
  };
  Result<std::vector<Entry>> list() const;
  // Error "unknown_secret".
  Status remove(const std::string& name);

  struct Impl;

 private:
  explicit SecretStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace airlock::creds
