// The detector table: every detector the scanner knows, as data (detectors.cpp). Adding a
// detector is adding a row; the engines below read the rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "dlp/policy.hpp"
#include "dlp/shapes.hpp"
#include "dlp/validators.hpp"

namespace airlock::dlp::detail {

// How a detector finds candidates.
enum class Engine : std::uint8_t {
  vectorscan,  // a regex with a literal anchor: Vectorscan finds the match ends in one pass over
               // the data for all such detectors, RE2 finds the exact start at each end
  numeric,     // runs of digit groups (the run lexer), then the shape matcher
  hex,         // runs of hex digits joined by ':' '-' '.', then the shape matcher
  iban,        // two letters and two digits, then the shape matcher
  base64,      // runs of base64 characters, then the shape matcher
};

// Bytes that must not touch a match on that side: if one does, the match is a piece of a longer
// token ("xAKIA..." is not an AWS key id) and is dropped.
enum class Boundary : std::uint8_t {
  none,
  alnum,        // [A-Za-z0-9]
  word,         // [A-Za-z0-9_]
  token,        // [A-Za-z0-9_-]
  base64,       // [A-Za-z0-9+/=]
  email_local,  // [A-Za-z0-9._%+-]
  domain,       // [A-Za-z0-9_-]
  value,        // anything but whitespace, quotes, ',', ';'
};

bool touches(Boundary boundary, unsigned char byte);

// Grows a match to the right (a PEM block to its END line, a JWT over payload and signature).
enum class Extension : std::uint8_t { done, need_more_data, reject };
using Extender = Extension (*)(std::string_view data, std::size_t match_start,
                               std::size_t& match_end, bool at_end);

// Looks at the bytes before a match (up to 128); false rejects the match.
using PrecedingCheck = bool (*)(std::string_view preceding);
bool not_url_userinfo(std::string_view preceding);  // "scheme://user:" before an email-like match

struct DetectorSpec {
  std::string_view id;
  Category category = Category::pii;
  std::string_view label;  // shown in [REDACTED:LABEL]
  Action action = Action::redact;
  double confidence = 0.5;        // base confidence of a validated match
  std::string_view context = {};  // context words, '|'-separated, lower case
  double context_boost = 0;       // added when a context word precedes the match
  // Run engines only: bytes after the match, on the same line, where a context word also counts
  // ("416 60 039 office"). At most kRunLookahead - 3.
  std::size_t context_after = 0;
  Engine engine = Engine::vectorscan;
  // Engine::vectorscan: the regex, in the syntax both Vectorscan and RE2 read. If it has a
  // capturing group, the group is the finding (the value after "password="); other groups
  // must be non-capturing.
  std::string_view pattern = {};
  Boundary left = Boundary::none, right = Boundary::none;
  Validator validate = nullptr;
  ShapeMatcher shape = nullptr;  // the run engines
  Extender extend = nullptr;
  std::size_t max_extension = 0;  // bytes an extender may add
  PrecedingCheck preceding = nullptr;
  bool enabled = true;
  double min_entropy = 0;     // entropy-gated detectors
  std::size_t min_length = 0;
  std::string_view example = {};  // a value it finds, for the docs and tests
};

std::span<const DetectorSpec> detector_table();
const DetectorSpec* find_detector(std::string_view id);

// Extenders referenced by the table.
Extension extend_pem_block(std::string_view data, std::size_t start, std::size_t& end, bool at_end);
Extension extend_jwt(std::string_view data, std::size_t start, std::size_t& end, bool at_end);

}  // namespace airlock::dlp::detail
