// Ed25519 keys (OpenSSL EVP) for signing checkpoints. The private key lives in a PEM
// (PKCS#8) file with mode 0600 beside the log; the public key is 32 raw bytes, shown as hex.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "audit/hash.hpp"
#include "common/result.hpp"

namespace airlock::audit {

inline constexpr std::size_t kPublicKeySize = 32;
inline constexpr std::size_t kSignatureSize = 64;
using Signature = std::array<std::uint8_t, kSignatureSize>;

struct PublicKey {
  std::array<std::uint8_t, kPublicKeySize> bytes{};

  static std::optional<PublicKey> from_bytes(ByteView raw);
  static std::optional<PublicKey> from_hex(std::string_view hex);
  std::string hex() const { return to_hex(ByteView(bytes)); }
  // First 8 bytes of SHA-256 of the raw key, in hex: a short name for logs and messages.
  std::string key_id() const;
  // SubjectPublicKeyInfo PEM, as `openssl pkey -pubin` reads it.
  std::string pem() const;
  bool operator==(const PublicKey&) const = default;
};

// Checks an Ed25519 signature; the error (code "bad_signature") says why it does not hold.
Status verify_signature(const PublicKey& key, ByteView message, ByteView signature);

class SigningKey {
 public:
  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;
  ~SigningKey();

  static Result<SigningKey> generate();
  // Reads a PEM private key file; refuses one that group or others can read, or that is not
  // an Ed25519 key.
  static Result<SigningKey> load(const std::string& path);
  // Loads `path`, or generates a key and creates the file with mode 0600 (atomically: when two
  // processes race, both end up with the key the first one wrote).
  static Result<SigningKey> load_or_create(const std::string& path);

  Result<Signature> sign(ByteView message) const;
  const PublicKey& public_key() const { return public_key_; }
  // A secret derived from the private key (HMAC-SHA256 under a fixed label), for keyed hashes
  // that only the log's owner can recompute: credential fingerprints.
  Hash derive_secret(std::string_view label) const;

  struct Impl;

 private:
  SigningKey(std::unique_ptr<Impl> impl, PublicKey public_key);
  std::unique_ptr<Impl> impl_;
  PublicKey public_key_;
};

}  // namespace airlock::audit
