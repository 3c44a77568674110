// Base64url without padding (RFC 7515 section 2), strict: the JWS segments and JWK members.
#pragma once

#include <string>
#include <string_view>

#include "common/result.hpp"

namespace airlock::identity {

// Unpadded base64url of `bytes`.
std::string base64url_encode(std::string_view bytes);

// The bytes of unpadded base64url `text`. Refused ("malformed"): a character outside the url
// alphabet (so also '=', '+', '/', whitespace), a length of 4k+1, and non-zero unused bits in
// the last character (a second spelling of the same bytes).
Result<std::string> base64url_decode(std::string_view text);

}  // namespace airlock::identity
