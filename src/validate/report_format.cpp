#include "validate/report_format.hpp"

#include <set>

#include "validate/rules/rules.hpp"

namespace airlock::validate {

std::string_view verdict_name(Verdict verdict) {
  return verdict == Verdict::accept ? "accept" : "reject";
}

std::string_view severity_name(Severity severity) {
  return severity == Severity::error ? "error" : "warning";
}


std::string to_text(const Report& report, const std::string& file) {
  std::string out;
  for (const auto& f : report.findings) {
    out += file + ":" + std::to_string(f.line) + ":" + std::to_string(f.col) + ": " +
           std::string(severity_name(f.severity)) + " [" + f.rule + "] " + f.message + "\n";
  }
  out += std::string(verdict_name(report.verdict)) + " (" + std::to_string(report.findings.size()) +
         (report.findings.size() == 1 ? " finding)\n" : " findings)\n");
  return out;
}

nlohmann::json to_json(const Report& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings)
    findings.push_back({{"rule", f.rule},
                        {"message", f.message},
                        {"line", f.line},
                        {"col", f.col},
                        {"severity", severity_name(f.severity)}});
  return {{"verdict", verdict_name(report.verdict)}, {"findings", findings}};
}

nlohmann::json to_sarif(const Report& report, const std::string& file_uri) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& rule : rules::catalog())
    rules.push_back({{"id", rule.id},
                     {"name", rule.id},
                     {"shortDescription", {{"text", rule.summary}}},
                     {"properties", {{"family", rule.family}}}});
  nlohmann::json results = nlohmann::json::array();
  for (const auto& f : report.findings) {
    nlohmann::json region = {{"startLine", std::max(1, f.line)}};
    if (f.col > 0) region["startColumn"] = f.col;
    nlohmann::json result = {
        {"ruleId", f.rule},
        {"level", f.severity == Severity::error ? "error" : "warning"},
        {"message", {{"text", f.message}}},
        {"locations",
         {{{"physicalLocation",
            {{"artifactLocation", {{"uri", file_uri}}}, {"region", region}}}}}}};
    for (std::size_t i = 0; i < rules::catalog().size(); ++i)
      if (rules::catalog()[i].id == f.rule) result["ruleIndex"] = i;
    results.push_back(std::move(result));
  }
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs",
           {{{"tool",
              {{"driver",
                {{"name", "airlock-validate"},
                 {"version", "0.1.0"},
                 {"rules", rules}}}}},
             {"results", results},
             {"columnKind", "unicodeCodePoints"}}}}};
}

}  // namespace airlock::validate
