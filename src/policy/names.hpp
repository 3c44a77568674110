// The naming rule for tools, shared by the configuration (which defines the names) and every
// client that puts a name into a request line (`airlock call`): one place says what a tool
// name may contain.
#pragma once

#include <string_view>

namespace airlock::policy {

// Lower-case letters, digits, '-', '_' and '.'; not empty. Such a name is safe as a URL path
// segment and in a header as it is (no byte needs escaping, none ends a line).
constexpr bool valid_tool_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
      return false;
  return true;
}

inline constexpr const char* kToolNameRule = "use lower-case letters, digits, '-', '_' and '.'";

}  // namespace airlock::policy
