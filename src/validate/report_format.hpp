// A Report as text (one line per finding), as JSON ({"verdict", "findings": [...]}) and as a
// SARIF 2.1.0 log for code-scanning tools.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "validate/validate.hpp"

namespace airlock::validate {

std::string to_text(const Report& report, const std::string& file);
nlohmann::json to_json(const Report& report);
nlohmann::json to_sarif(const Report& report, const std::string& file_uri);

}  // namespace airlock::validate
