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
// The bytes of a percent-encoded URL path ("a%2Fb" is "a/b"; '+' stays '+'); nothing for a
// '%' that is not followed by two hex digits.
std::optional<std::string> percent_decode(std::string_view text);

}  // namespace airlock
