#include "audit/hash.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "common/hex.hpp"

namespace airlock::audit {
namespace {

// Fetching the algorithm once, and keeping one digest context a thread, keeps short hashes
// (a 32-byte node, a 1 KiB record) from paying OpenSSL's per-call lookup.
const EVP_MD* sha256_algorithm() {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

// SHA-256 failing means OpenSSL itself is broken (or out of memory): no hash can be trusted and
// there is nothing sensible to return, so stop rather than let an exception cross the module.
[[noreturn]] void crypto_unavailable(const char* what) {
  std::fprintf(stderr, "airlock: fatal: OpenSSL %s is unavailable\n", what);
  std::abort();
}

struct DigestContextDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

EVP_MD_CTX* thread_digest_context() {
  thread_local std::unique_ptr<EVP_MD_CTX, DigestContextDeleter> ctx(EVP_MD_CTX_new());
  return ctx.get();
}

}  // namespace

Hash sha256(std::initializer_list<ByteView> parts) {
  EVP_MD_CTX* ctx = thread_digest_context();
  const EVP_MD* md = sha256_algorithm();
  if (ctx == nullptr || md == nullptr || EVP_DigestInit_ex2(ctx, md, nullptr) != 1)
    crypto_unavailable("SHA-256");
  for (ByteView part : parts) EVP_DigestUpdate(ctx, part.data(), part.size());
  Hash out{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx, out.data(), &length);
  return out;
}

Hash hmac_sha256(ByteView key, ByteView message) {
  Hash out{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), message.data(), message.size(),
           out.data(), &length) == nullptr)
    crypto_unavailable("HMAC-SHA256");
  return out;
}

std::string to_hex(ByteView bytes) { return hex_encode(bytes.data(), bytes.size()); }

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) {
    int high = hex_digit_value(hex[2 * i]), low = hex_digit_value(hex[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out[i] = static_cast<char>((high << 4) | low);
  }
  return out;
}

std::string quoted_hex(const Hash& hash) {
  std::string out;
  out.reserve(2 * kHashSize + 2);
  out += '"';
  out += to_hex(hash);
  out += '"';
  return out;
}

std::optional<Hash> hash_from_hex(std::string_view hex) {
  auto bytes = from_hex(hex);
  if (!bytes || bytes->size() != kHashSize) return std::nullopt;
  Hash out{};
  std::copy(bytes->begin(), bytes->end(), reinterpret_cast<char*>(out.data()));
  return out;
}

}  // namespace airlock::audit
