// Host names as rules and requests are compared: lower case, no trailing dot, IDNA
// (UTS #46, non-transitional) to punycode, letters-digits-hyphens labels only.
#pragma once

#include <string>
#include <string_view>

#include "common/result.hpp"

namespace airlock::netrules {

Result<std::string> normalize_host_name(std::string_view name);

}  // namespace airlock::netrules
