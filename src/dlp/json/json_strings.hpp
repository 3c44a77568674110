// JSON-aware scanning: the document with each string that has an escape decoded where it
// stands (quotes, keys and the rest as they are), and a map back to the original bytes. A secret
// written as "\u0041KIA..." or after a "\n" is found in one scan that sees every string as its
// reader will, in its context, and is reported at the escape sequences that spell it: whole
// escapes, so that redacting a finding leaves valid JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlp/run_lexer/run_lexer.hpp"

namespace airlock::dlp::detail {

struct DecodedStrings {
  std::string text;  // the document with its escaped strings decoded

  // The original span of decoded text[start, end).
  Span original(std::size_t start, std::size_t end) const {
    return {origin_of(start).start, origin_of(end - 1).end};
  }

  // Where the decoded bytes came from: one entry per escape (each byte it decodes to maps to all
  // of it); the bytes between escapes are the original bytes, in order. A 1 MiB string of log
  // lines has an escape per line break and quote, so the entries are kept small and few.
  struct Escape {
    std::size_t decoded = 0;   // text[decoded, decoded + decoded_length) came from it
    std::size_t original = 0;  // data[original, original + length)
    std::uint8_t length = 0;   // 1 (a lone backslash) to 12 (a surrogate pair)
    std::uint8_t decoded_length = 0;
  };
  std::vector<Escape> escapes;  // in order; empty: no string had an escape (text is empty too)

  // The original bytes that produced text[i].
  Span origin_of(std::size_t i) const;
};

// The first byte that is not white space is '{' or '[' (JSON Lines count too), or the whole
// document is one JSON string (is_json_string).
bool looks_like_json(std::string_view data);

// The document, white space around it aside, is exactly one JSON string: quotes at both ends,
// none unescaped between them, every escape one JSON has, no raw control character. Its bytes
// are not checked to be UTF-8 (nor are those of an object or array).
bool is_json_string(std::string_view data);

// Lenient: it finds string literals without validating the document around them, so truncated
// or concatenated documents are still scanned.
DecodedStrings decode_strings_in_place(std::string_view data);

}  // namespace airlock::dlp::detail
