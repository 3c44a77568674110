// SHA-256 and HMAC-SHA256 (OpenSSL), the Hash type the Merkle tree is built from, and the
// hex form every hash, key and signature takes in Airlock's audit JSON.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace airlock::audit {

inline constexpr std::size_t kHashSize = 32;
using Hash = std::array<std::uint8_t, kHashSize>;
using ByteView = std::span<const std::uint8_t>;

inline ByteView as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

// SHA-256 over the concatenation of the parts (so callers can prefix a domain byte without
// copying the record).
Hash sha256(std::initializer_list<ByteView> parts);
inline Hash sha256(ByteView data) { return sha256({data}); }
inline Hash sha256(std::string_view data) { return sha256({as_bytes(data)}); }

Hash hmac_sha256(ByteView key, ByteView message);

// Lowercase hex, two digits a byte.
std::string to_hex(ByteView bytes);
inline std::string to_hex(const Hash& hash) { return to_hex(ByteView(hash)); }
// Accepts upper or lower case; nullopt on odd length or a non-hex digit.
std::optional<std::string> from_hex(std::string_view hex);
std::optional<Hash> hash_from_hex(std::string_view hex);
// The hash as a canonical JSON string literal: the hex between double quotes.
std::string quoted_hex(const Hash& hash);

}  // namespace airlock::audit
