// JSON-aware scanning: the strings (keys and values) of a JSON document, unescaped, with a map
// back to the bytes of the original. Only strings that contain escapes are decoded: the others
// read the same in the original and are scanned there. A secret written as "\u0041KIA..." is
// found in the decoded text and reported at the escape sequences that spell it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dlp/run_lexer.hpp"

namespace airlock::dlp::detail {

struct DecodedStrings {
  std::string text;           // decoded strings, each followed by '\n'
  std::vector<Span> origin;   // origin[i]: the original bytes that produced text[i]

  // The original span of decoded text[start, end).
  Span original(std::size_t start, std::size_t end) const {
    return {origin[start].start, origin[end - 1].end};
  }
};

// The first byte that is not white space is '{' or '['. JSON Lines count too.
bool looks_like_json(std::string_view data);

// Lenient: it finds string literals without validating the document around them, so truncated
// or concatenated documents are still scanned.
DecodedStrings decode_escaped_strings(std::string_view data);

}  // namespace airlock::dlp::detail
