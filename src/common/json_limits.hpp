// Parsing JSON that comes from outside (request bodies, tool output) with a bound on nesting.
// Everything that later walks a value (schema validation, DLP, canonical JSON, dump(), the
// destructor) recurses once per level, so an unbounded depth is a stack overflow waiting for
// an input: the bound is applied here, while the parser builds the value, and nowhere else.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace airlock {

// The default bound on nesting (server.maxJsonDepth): arrays and objects inside each other.
inline constexpr std::size_t kDefaultMaxJsonDepth = 64;

// `text` as one JSON value nested at most `max_depth` levels deep. Errors: "invalid_json" (not
// JSON) or "too_deep" (nested deeper than the limit; the message names the limit).
Result<nlohmann::json> parse_json_bounded(std::string_view text, std::size_t max_depth);
// The same without a copy: a std::string ends with the NUL the reader stops at.
Result<nlohmann::json> parse_json_bounded(const std::string& text, std::size_t max_depth);
inline Result<nlohmann::json> parse_json_bounded(const char* text, std::size_t max_depth) {
  return parse_json_bounded(std::string_view(text), max_depth);
}

// The same, refusing an object that names a member twice (error "duplicate_key"), where the
// last value would otherwise win unseen: JOSE headers and JWT claims (RFC 7515 4, RFC 7519 4).
Result<nlohmann::json> parse_json_unique_keys(const std::string& text, std::size_t max_depth);

}  // namespace airlock
