// A tool's risk level: it picks the tool's tier of limits (config.hpp) and bounds what an
// RBAC rule allows (identity_config.hpp, maxRisk).
#pragma once

#include <string_view>

namespace airlock::policy {

enum class Risk { low, medium, high, critical };  // in increasing order: compared with <
std::string_view risk_name(Risk r);

}  // namespace airlock::policy
