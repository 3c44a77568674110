#include "identity/base64url.hpp"

#include <openssl/evp.h>

#include "common/base64.hpp"

namespace airlock::identity {
namespace {

// The 6-bit value of a base64url character, or -1.
int url_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

Error bad(const char* why) {
  return Error::make("malformed", std::string("invalid base64url: ") + why);
}

}  // namespace

std::string base64url_encode(std::string_view bytes) {
  std::string out = base64_encode(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

Result<std::string> base64url_decode(std::string_view text) {
  const std::size_t tail = text.size() % 4;
  if (tail == 1) return bad("impossible length");
  std::string std_alphabet(text);
  for (char& c : std_alphabet) {
    if (url_value(c) < 0) return bad("character outside the url alphabet");
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  // The last character of a 2- or 3-character group carries 4 or 2 unused low bits.
  if (tail != 0) {
    const int last = url_value(text.back());
    const int unused_mask = tail == 2 ? 0x0f : 0x03;
    if ((last & unused_mask) != 0) return bad("non-zero trailing bits");
  }
  const std::size_t padding = tail == 0 ? 0 : 4 - tail;
  std_alphabet.append(padding, '=');
  std::string out(std_alphabet.size() / 4 * 3, '\0');
  // EVP_DecodeBlock counts the padding as zero bytes: they are cut off below.
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(std_alphabet.data()),
                                static_cast<int>(std_alphabet.size()));
  if (n < 0 || static_cast<std::size_t>(n) < padding) return bad("undecodable");
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

}  // namespace airlock::identity
