// Checking that bytes are UTF-8, as strictly as nlohmann's parser does.
#pragma once

#include <cstddef>
#include <string_view>

namespace airlock {

// No overlong forms, no surrogates (U+D800..U+DFFF encoded), nothing past U+10FFFF; eight
// ASCII bytes at a time.
bool is_valid_utf8(std::string_view text);
// The characters (code points) of valid UTF-8: the bytes that do not continue a sequence,
// counted 8 at a time. A NUL byte is a character like any other.
std::size_t count_utf8_characters(std::string_view text);
// The length of the valid UTF-8 sequence that starts at text[i], or 0 when it is not valid
// (by the same rules).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i);

}  // namespace airlock
