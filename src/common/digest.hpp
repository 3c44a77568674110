// SHA-256 and HMAC-SHA256 (OpenSSL), hex encoded, and a constant-time comparison.
#pragma once

#include <string>
#include <string_view>

namespace airlock {

std::string sha256_hex(std::string_view data);

// SHA-256 of data that arrives in pieces (a file streamed in or out of a session).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view data);
  std::string hex();  // of everything given so far; once

 private:
  void* ctx_;  // EVP_MD_CTX
};
std::string hmac_sha256_hex(std::string_view key, std::string_view data);
// Compares two strings without a data-dependent early exit (for secrets and their hashes).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace airlock
