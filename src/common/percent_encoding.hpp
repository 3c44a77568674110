// Percent-encoding (RFC 3986 section 2.1): every byte but the unreserved characters
// (ALPHA DIGIT - . _ ~) becomes %XX, upper-case hex. Safe in a URL path segment, a userinfo,
// and an application/x-www-form-urlencoded name or value.
#pragma once

#include <string>
#include <string_view>

namespace airlock {

bool is_unreserved(char c);
std::string percent_encode(std::string_view text);

}  // namespace airlock
