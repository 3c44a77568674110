#include "pipeline/stages/failure_report.hpp"

#include "common/json_limits.hpp"

namespace airlock::pipeline {
namespace {

// Bounds on what a report may carry into an answer (the tier's output limit bounds the whole).
constexpr std::size_t kMaxNameBytes = 200;
constexpr std::size_t kMaxValueBytes = 4'000;
constexpr std::size_t kMaxTracebackLines = 200;
constexpr std::size_t kMaxLineBytes = 1'000;
constexpr std::size_t kMaxStdoutBytes = 16 * 1024;

// A string field cut to `max` bytes (at a UTF-8 boundary), or nullopt if it is not a string.
std::optional<std::string> bounded_string(const nlohmann::json& j, const char* key, std::size_t max) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  std::string s = it->get<std::string>();
  if (s.size() <= max) return s;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "…";
}

std::optional<nlohmann::json> traceback_lines(const nlohmann::json& report) {
  auto it = report.find("traceback");
  if (it == report.end() || !it->is_array()) return std::nullopt;
  nlohmann::json lines = nlohmann::json::array();
  // The end of a traceback says the most: its last lines are kept.
  const std::size_t skip = it->size() > kMaxTracebackLines ? it->size() - kMaxTracebackLines : 0;
  for (std::size_t i = skip; i < it->size(); ++i) {
    nlohmann::json one{{"l", (*it)[i]}};
    auto line = bounded_string(one, "l", kMaxLineBytes);
    if (!line) return std::nullopt;
    lines.push_back(*line);
  }
  return lines;
}

}  // namespace

std::optional<nlohmann::json> code_error_report(const backend::RunResult& run, std::size_t max_depth) {
  if (run.verdict != sandbox::Verdict::exit_nonzero || run.exit_code != kCodeErrorStatus) return std::nullopt;
  auto parsed = parse_json_bounded(run.stdout_data, max_depth);
  if (!parsed || !parsed->is_object() || parsed->size() != 1) return std::nullopt;
  auto it = parsed->find("code_error");
  if (it == parsed->end() || !it->is_object()) return std::nullopt;
  const nlohmann::json& r = *it;
  auto name = bounded_string(r, "name", kMaxNameBytes);
  auto value = bounded_string(r, "value", kMaxValueBytes);
  auto stdout_text = bounded_string(r, "stdout", kMaxStdoutBytes);
  auto traceback = traceback_lines(r);
  auto line = r.find("line");
  const bool line_ok = line != r.end() && (line->is_null() || line->is_number_unsigned());
  if (!name || name->empty() || !value || !stdout_text || !traceback || !line_ok) return std::nullopt;
  return nlohmann::json{{"name", *name},
                        {"value", *value},
                        {"line", *line},
                        {"traceback", std::move(*traceback)},
                        {"stdout", *stdout_text}};
}

nlohmann::json egress_denials(const backend::RunResult& run, const std::string& rule_set) {
  nlohmann::json denials = nlohmann::json::array();
  for (const auto& e : run.egress) {
    if (e.allowed) continue;
    if (denials.size() == kMaxReportedDenials) break;
    denials.push_back({{"host", e.host}, {"port", e.port}, {"address", e.address}, {"rule", e.rule}, {"rule_set", rule_set}});
  }
  return denials;
}

}  // namespace airlock::pipeline
