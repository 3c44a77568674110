// Applying actions to text:
//   redact  [REDACTED:EMAIL]
//   mask    every character but the last four becomes '*' (all of them when the value has fewer
//           than eight characters, which four would nearly give away)
//   hash    [HASH:EMAIL:<first 16 hex digits of HMAC-SHA256(key, value)>], equal values give
//           equal tokens, so redacted records stay joinable
//   block   as redact (a caller honouring `blocked` never shows the text)
//   allow   unchanged
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "dlp/scanner.hpp"

namespace airlock::dlp::detail {

std::string_view label_of(std::string_view detector_id);

void append_replacement(const Finding& finding, std::string_view value, std::string_view hash_key,
                        std::string& out);

// Appends `bytes` (which start at absolute offset `base`) to `out`, replacing each finding.
// Findings are sorted, non-overlapping and inside the bytes.
void append_with_actions(std::string_view bytes, std::size_t base, std::span<const Finding> findings,
                         std::string_view hash_key, std::string& out);

}  // namespace airlock::dlp::detail
