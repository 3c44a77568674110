// SHA-256 and HMAC-SHA256 (OpenSSL), hex encoded, and a constant-time comparison.
#pragma once

#include <string>
#include <string_view>

namespace airlock {

std::string sha256_hex(std::string_view data);
std::string hmac_sha256_hex(std::string_view key, std::string_view data);
// Compares two strings without a data-dependent early exit (for secrets and their hashes).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace airlock
