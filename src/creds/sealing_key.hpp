// The secret store's key and its one AEAD: AES-256-GCM (OpenSSL) under a fresh random 12-byte
// nonce, with associated data that names what a value is (a secret's name, an approval's
// column), so a sealed value altered, or copied under another name, does not open. The secret
// store seals its values with it, and the approval stores seal what a pending call keeps (its
// arguments, the user's token): one key file, one wrapper.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace airlock::creds {

class SealingKey {
 public:
  static constexpr std::size_t kKeySize = 32;
  static constexpr std::size_t kNonceSize = 12;  // GCM's natural nonce: no GHASH of the IV
  static constexpr std::size_t kTagSize = 16;

  // The key file for `data_dir`: $AIRLOCK_SECRETS_KEY_FILE, else <data_dir>.secrets-key.
  static std::string key_file_for(const std::string& data_dir);
  // Reads the 32-byte key at `path`, making it (0600, never through a symlink) when missing.
  // Errors: "storage", "insecure_key_file" (group or others may read or write it).
  static Result<std::shared_ptr<const SealingKey>> load_or_create(const std::string& path);
  // A key from its bytes (tests, and nothing that could read a file).
  static std::shared_ptr<const SealingKey> from_bytes(const std::array<unsigned char, kKeySize>& bytes);
  ~SealingKey();
  SealingKey(const SealingKey&) = delete;
  SealingKey& operator=(const SealingKey&) = delete;

  struct Sealed {
    std::string nonce, ciphertext, tag;
  };
  // Errors: "storage" (OpenSSL refused).
  Result<Sealed> seal(std::string_view associated, std::string_view plain) const;
  // The plain text, or Error "sealed_corrupt": altered, sealed under another associated data,
  // or with another key.
  Result<std::string> open(std::string_view associated, const Sealed& sealed) const;

  // One text for a database column: "<key id>.<base64 of nonce | ciphertext | tag>".
  Result<std::string> seal_text(std::string_view associated, std::string_view plain) const;
  // Error "sealed_other_key" when the text names another key's id (a replica given another
  // key file), "sealed_corrupt" when it does not open.
  Result<std::string> open_text(std::string_view associated, std::string_view text) const;
  // Whether `text` has the form seal_text writes (a column older rows kept in plain).
  static bool is_sealed_text(std::string_view text);

  // 16 hex digits naming the key (an HMAC-SHA256 of a fixed label under it): says which key
  // sealed a value without revealing anything of the key.
  const std::string& id() const { return id_; }

 private:
  explicit SealingKey(const std::array<unsigned char, kKeySize>& bytes);
  std::array<unsigned char, kKeySize> key_{};
  std::string id_;
};

}  // namespace airlock::creds
