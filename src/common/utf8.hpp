// Checking that bytes are UTF-8, as strictly as nlohmann's parser does.
#pragma once

#include <string_view>

namespace airlock {

// No overlong forms, no surrogates (U+D800..U+DFFF encoded), nothing past U+10FFFF; eight
// ASCII bytes at a time.
bool is_valid_utf8(std::string_view text);

}  // namespace airlock
