// Percent-encoding (RFC 3986 section 2.1): every byte but the unreserved characters
// (ALPHA DIGIT - . _ ~) becomes %XX, upper-case hex. Safe in a URL path segment, a userinfo,
// and an application/x-www-form-urlencoded name or value.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace airlock {

bool is_unreserved(char c);
std::string percent_encode(std::string_view text);
// The bytes of percent-encoded text ("a%2Fb" is "a/b"): a URL path, where '+' stays '+', or
// with `plus_is_space` a query's value (application/x-www-form-urlencoded). Nothing for a '%'
// that is not followed by two hex digits.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space = false);

}  // namespace airlock
