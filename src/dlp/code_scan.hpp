// DLP on model-written code (docs/dlp.md, "Code"): never redacted, since a changed program
// answers wrongly as if unchanged. A finding refuses the code, or is reported beside a run of
// it as written, by the policy's spec.code.onFinding; a detector whose action is block refuses
// it either way. A python-code tool's `code` and a session's code cells are scanned alike.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlp/scanner.hpp"

namespace airlock::dlp {

struct CodeFinding {
  std::string detector;
  std::size_t line = 0;  // 1-based, in the code
};

struct CodeScan {
  // Set when the code may not run: the message of its dlp_blocked refusal, naming each
  // detector and line (never the value).
  std::optional<std::string> refusal;
  std::vector<CodeFinding> findings;  // when it runs: what to report beside its answer
};

CodeScan scan_code(const Scanner& scanner, std::string_view code);

}  // namespace airlock::dlp
