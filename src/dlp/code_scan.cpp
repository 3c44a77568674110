#include "dlp/code_scan.hpp"

#include <algorithm>

namespace airlock::dlp {
namespace {

std::size_t line_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// "email (line 3), ipv4 (line 7)": each finding that is not allowed, never its value.
std::string findings_with_lines(std::string_view code, const ScanResult& result, bool blocking_only) {
  std::string list;
  for (const auto& f : result.findings) {
    if (f.action == Action::allow || (blocking_only && f.action != Action::block)) continue;
    list += (list.empty() ? "" : ", ") + std::string(f.detector) + " (line " + std::to_string(line_of(code, f.start)) + ")";
  }
  return list;
}

}  // namespace

CodeScan scan_code(const Scanner& scanner, std::string_view code) {
  ScanOptions bytes_only;
  bytes_only.json = JsonMode::off;
  const ScanResult result = scanner.scan(code, bytes_only);
  const bool refuse = scanner.policy().code_findings == CodeFindings::refuse;
  CodeScan out;
  if (result.blocked || (refuse && !findings_with_lines(code, result, false).empty())) {
    out.refusal = "the code contains data the DLP policy does not let into code: " +
                  findings_with_lines(code, result, /*blocking_only=*/result.blocked) +
                  "; pass data in arguments, where DLP redacts it, not in the code";
    return out;
  }
  for (const auto& f : result.findings)
    if (f.action != Action::allow) out.findings.push_back({std::string(f.detector), line_of(code, f.start)});
  return out;
}

}  // namespace airlock::dlp
