// Splitting text at a separator, the one way every layer does it (URL paths, OAuth scopes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace airlock {

// The pieces of `text` between `separator`s, empty pieces left out: "/v1//tools" at '/' is
// {"v1", "tools"}.
inline std::vector<std::string> split_nonempty(std::string_view text, char separator) {
  std::vector<std::string> pieces;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) pieces.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return pieces;
}

}  // namespace airlock
