// Tool input and output schemas (JSON Schema draft-07), compiled once when the configuration
// is loaded. valijson does the validating, with two things taken away from it because it does
// them with std::regex, whose executor recurses once per character of an attacker's string:
// `pattern`, `patternProperties` and the date/time formats are matched with RE2 (linear time).
// Patterns are therefore RE2 syntax: lookaround and backreferences are refused at load.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace airlock::policy {

// One thing wrong with a schema: where (an RFC 6901 pointer into the schema, "" for the
// whole schema) and why.
struct SchemaProblem {
  std::string pointer;
  std::string message;
};

class JsonSchema {
 public:
  // The compiled schema, or every problem found: the schema against the draft-07 meta-schema,
  // every `$ref` (local "#/..." pointers only, each must resolve), every pattern (RE2).
  struct Compiled {
    std::shared_ptr<const JsonSchema> schema;  // null when `problems` is not empty
    std::vector<SchemaProblem> problems;
  };
  static Compiled compile(const nlohmann::json& schema);

  // nullopt when `value` conforms; otherwise the JSON pointer of the first bad field and why.
  std::optional<std::pair<std::string, std::string>> check(const nlohmann::json& value) const;

  struct Impl;
  std::shared_ptr<const Impl> impl;
};

}  // namespace airlock::policy
