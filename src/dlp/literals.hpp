// Registered secret values and the encodings they are searched in.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dlp/engine.hpp"
#include "dlp/scanner.hpp"
#include "dlp/vectorscan/vectorscan.hpp"

namespace airlock::dlp {

struct LiteralSet::Compiled {
  struct Entry {
    std::size_t length = 0;
    detail::LiteralEncoding encoding = detail::LiteralEncoding::raw;
  };
  std::vector<Entry> entries;  // by Vectorscan pattern id
  std::size_t max_length = 0;
  detail::Database block_database, stream_database;
  std::unique_ptr<detail::ScratchPool> scratch = std::make_unique<detail::ScratchPool>();

  // Hits carry the pattern id in Hit::detector.
  void find_hits(std::string_view data, std::vector<detail::Hit>& hits) const;
};

namespace detail {

struct EncodedLiteral {
  std::string text;
  LiteralEncoding encoding;
};

// Every form of `value` worth searching for: itself, base64 and base64url (aligned at each of
// the three offsets a value can have inside a longer base64 text), hex in both cases, and
// percent-encoding. Forms shorter than 8 characters are left out; duplicates are removed.
std::vector<EncodedLiteral> literal_encodings(std::string_view value);

}  // namespace detail
}  // namespace airlock::dlp
