// Standard base64 (RFC 4648 section 4, with padding): what HTTP Basic credentials, kubeconfig
// `*-data` fields and a code cell's PNG figures are written in.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace airlock {

std::string base64_encode(std::string_view bytes);

// The bytes of padded base64 `text`, or nothing when it is not that (a length that is not a
// multiple of 4, a character outside the alphabet, padding inside). Whitespace is not skipped.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace airlock
