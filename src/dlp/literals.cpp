#include "dlp/literals.hpp"

#include <algorithm>
#include <set>

#include "common/hex.hpp"

namespace airlock::dlp {
namespace detail {
namespace {

constexpr std::size_t kMinEncodedLength = 8;
constexpr std::size_t kMinLiteralLength = 4;
constexpr std::size_t kMaxLiteralLength = 4096;

std::string base64(std::string_view bytes, bool url_safe) {
  static constexpr char kStandard[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static constexpr char kUrlSafe[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const char* alphabet = url_safe ? kUrlSafe : kStandard;
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(alphabet[(buffer >> bits) & 0x3F]);
    }
  }
  if (bits > 0) out.push_back(alphabet[(buffer << (6 - bits)) & 0x3F]);
  return out;  // unpadded
}

// The characters of base64(prefix + value + suffix) that depend on the value's bytes alone,
// when the value starts `shift` bytes into a 3-byte group.
std::string base64_core(std::string_view value, int shift, bool url_safe) {
  std::string shifted(static_cast<std::size_t>(shift), '\0');
  shifted.append(value);
  std::string encoded = base64(shifted, url_safe);
  std::size_t drop_front = shift == 0 ? 0 : static_cast<std::size_t>(shift) + 1;
  std::size_t drop_back = shifted.size() % 3 == 0 ? 0 : 1;  // mixes with the next byte
  if (encoded.size() <= drop_front + drop_back) return {};
  return encoded.substr(drop_front, encoded.size() - drop_front - drop_back);
}

std::string percent_encode(std::string_view bytes, bool upper) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 0xF]);
    }
  }
  return out;
}

// Vectorscan pattern that matches these bytes exactly.
std::string escape_pattern(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += "\\x";
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xF]);
  }
  return out;
}

}  // namespace

std::vector<EncodedLiteral> literal_encodings(std::string_view value) {
  std::vector<EncodedLiteral> out;
  std::set<std::string> seen;
  auto add = [&](std::string text, LiteralEncoding encoding) {
    if (text.size() < kMinEncodedLength && encoding != LiteralEncoding::raw) return;
    if (seen.insert(text).second) out.push_back({std::move(text), encoding});
  };
  add(std::string(value), LiteralEncoding::raw);
  for (int shift = 0; shift < 3; ++shift) add(base64_core(value, shift, false), LiteralEncoding::base64);
  for (int shift = 0; shift < 3; ++shift) add(base64_core(value, shift, true), LiteralEncoding::base64url);
  add(hex_encode(value, false), LiteralEncoding::hex);
  add(hex_encode(value, true), LiteralEncoding::hex);
  add(percent_encode(value, true), LiteralEncoding::url);
  add(percent_encode(value, false), LiteralEncoding::url);
  return out;
}

}  // namespace detail

void LiteralSet::Compiled::find_hits(std::string_view data, std::vector<detail::Hit>& hits) const {
  detail::scan_for_hits(block_database.get(), *scratch, data, hits);
}

Result<LiteralSet> LiteralSet::compile(const std::vector<std::string>& values) {
  auto compiled = std::make_shared<Compiled>();
  std::vector<detail::PatternSpec> patterns;
  for (const auto& value : values) {
    if (value.size() < detail::kMinLiteralLength)
      return Error::make("invalid_argument", "a literal must be at least 4 bytes long");
    if (value.size() > detail::kMaxLiteralLength)
      return Error::make("invalid_argument", "a literal must be at most 4096 bytes long");
    for (auto& encoded : detail::literal_encodings(value)) {
      auto id = static_cast<unsigned>(compiled->entries.size());
      compiled->entries.push_back({encoded.text.size(), encoded.encoding});
      compiled->max_length = std::max(compiled->max_length, encoded.text.size());
      patterns.push_back({detail::escape_pattern(encoded.text), id, 0});
    }
  }
  if (!patterns.empty()) {
    auto block = detail::compile_database(patterns, HS_MODE_BLOCK);
    if (!block) return block.error();
    auto stream = detail::compile_database(patterns, HS_MODE_STREAM);
    if (!stream) return stream.error();
    compiled->block_database = std::move(*block);
    compiled->stream_database = std::move(*stream);
    if (auto s = compiled->scratch->grow_for(compiled->block_database.get()); !s) return s.error();
    if (auto s = compiled->scratch->grow_for(compiled->stream_database.get()); !s) return s.error();
  }
  return LiteralSet(std::move(compiled));
}

}  // namespace airlock::dlp
