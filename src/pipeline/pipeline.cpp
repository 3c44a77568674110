#include "pipeline/pipeline.hpp"

#include <chrono>
#include <exception>

namespace airlock::pipeline {
namespace {

// Stages return errors as values; an exception escaping one is a bug, and the invocation
// fails closed rather than taking the daemon down.
std::optional<InvocationError> run_stage(Stage& stage, Invocation& inv, StageObserver* observer) {
  auto start = std::chrono::steady_clock::now();
  std::optional<InvocationError> error;
  try {
    error = stage.run(inv);
  } catch (const std::exception& e) {
    error = InvocationError{"internal", std::string(stage.name()) + " failed: " + e.what(), "error", 500, ""};
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  inv.stage_times.push_back({std::string(stage.name()), ms});
  if (observer) observer->stage_done(stage.name(), ms, inv);
  return error;
}

}  // namespace

void Pipeline::run(Invocation& inv) const {
  for (const auto& stage : stages_) {
    if (auto error = run_stage(*stage, inv, observer_)) {
      inv.error = std::move(error);
      break;
    }
  }
  if (final_) {
    if (auto error = run_stage(*final_, inv, observer_)) {
      // The record could not be written: whatever happened before, there is no result.
      inv.output.reset();
      inv.error = std::move(error);
    }
  }
}

std::string log_with_notes(const Invocation& inv) {
  std::string log = inv.tool_log;
  if (!log.empty() && log.back() != '\n' && !inv.notes.empty()) log += '\n';
  for (const auto& note : inv.notes) log += note + "\n";
  return log;
}

nlohmann::json to_response(const Invocation& inv) {
  nlohmann::json j;
  j["id"] = inv.id;
  j["tool"] = inv.tool_name;
  j["status"] = inv.status();
  j["output"] = (!inv.error && inv.output) ? *inv.output : nlohmann::json();
  j["error"] = inv.error ? nlohmann::json{{"kind", inv.error->kind}, {"message", inv.error->message}}
                         : nlohmann::json();
  if (inv.error && !inv.error->pointer.empty()) j["error"]["pointer"] = inv.error->pointer;
  if (inv.error && inv.error->kind == "code_rejected") {
    j["error"]["findings"] = inv.validator_findings;
    j["error"]["findings_total"] = inv.validator_findings_total;
  }
  j["verdict"] = inv.outcome ? nlohmann::json(sandbox::verdict_name(inv.outcome->verdict)) : nlohmann::json();
  j["usage"] = inv.outcome ? sandbox::to_json(inv.outcome->usage) : nlohmann::json();
  auto redactions = nlohmann::json::array();
  for (const auto& r : inv.redactions) redactions.push_back({{"detector", r.detector}, {"where", r.where}});
  j["redactions"] = std::move(redactions);
  auto egress = nlohmann::json::array();
  if (inv.outcome)
    for (const auto& e : inv.outcome->egress) egress.push_back(egress::to_json(e));
  j["egress"] = std::move(egress);
  j["audit"] = inv.audit ? nlohmann::json{{"index", inv.audit->index}, {"leaf_hash", inv.audit->leaf_hash}}
                         : nlohmann::json();
  return j;
}

}  // namespace airlock::pipeline
