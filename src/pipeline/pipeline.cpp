#include "pipeline/pipeline.hpp"

#include "pipeline/decision_basis.hpp"

#include <chrono>
#include <exception>

namespace airlock::pipeline {
namespace {

// Stages return errors as values; an exception escaping one is a bug, and the invocation
// fails closed rather than taking the daemon down.
StageResult run_stage(Stage& stage, Invocation& inv, StageContext& ctx, StageObserver* observer) {
  auto start = std::chrono::steady_clock::now();
  StageResult result = StageResult::next();
  try {
    result = stage.run(inv, ctx);
  } catch (const std::exception& e) {
    result = fail(ErrorKind::internal, std::string(stage.name()) + " failed: " + e.what());
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  inv.stage_times.push_back({std::string(stage.name()), ms});
  if (observer) observer->stage_done(stage.name(), ms, inv);
  return result;
}

Status run_finalizer(const Finalizer& f, Invocation& inv) {
  try {
    return f.run(inv);
  } catch (const std::exception& e) {
    return Error::make("internal", e.what());
  }
}

}  // namespace

Pipeline::Pipeline(std::shared_ptr<const policy::Config> config) : config_(std::move(config)) {
  if (!config_) config_ = std::make_shared<const policy::Config>();
}

std::vector<std::string_view> Pipeline::stage_names() const {
  std::vector<std::string_view> names;
  for (const auto& s : stages_) names.push_back(s->name());
  if (final_) names.push_back(final_->name());
  return names;
}

// What changed, in words, of what `inv`'s decisions rested on ("" when nothing did). An
// invocation kept before the basis was (none kept) compares the whole file's version.
std::string Pipeline::changed_basis(const Invocation& inv) const {
  if (inv.decision_basis.empty())
    return inv.config_version == config_->version ? "" : "the configuration file";
  auto now = decision_basis(*config_, inv);
  if (!now) return "its decision basis, which could not be computed (" + now.error().message + ")";
  std::string words;
  for (const auto& part : changed_parts(inv.decision_basis, *now)) words += (words.empty() ? "" : ", ") + part;
  return words;
}

bool Pipeline::resume_allowed(Invocation& inv) const {
  if (!inv.suspended) {
    if (inv.cursor == 0) inv.config_version = config_->version;
    return true;
  }
  const std::string waited_for = inv.suspended->reason;
  inv.suspended.reset();
  const std::string changed = changed_basis(inv);
  if (changed.empty()) return true;
  inv.error = deny(ErrorKind::config_changed,
                   "the configuration changed what the call was decided on while it waited (" + waited_for +
                       "): " + changed + ": call the tool again");
  return false;
}

void Pipeline::run(Invocation& inv) const {
  StageContext ctx(*config_);
  if (resume_allowed(inv)) {
    // An error set while it waited (the fair queue's timeout) ends it before the next stage.
    while (inv.cursor < stages_.size() && !inv.error) {
      Stage& stage = *stages_[inv.cursor];
      if (inv.control && inv.control->cancel.cancelled()) {
        inv.error = fail(ErrorKind::cancelled, "the client cancelled the call before " +
                                                   std::string(stage.name()));
        break;
      }
      ++inv.cursor;
      if (inv.control && inv.control->progress)
        inv.control->progress({static_cast<double>(inv.cursor), static_cast<double>(stages_.size()),
                               std::string(stage.name())});
      StageResult result = run_stage(stage, inv, ctx, observer_);
      if (const auto* error = result.error()) {
        inv.error = *error;
        break;
      }
      if (const auto* suspend = result.suspension()) {
        inv.suspended = Suspension{std::string(stage.name()), suspend->reason, suspend->data};
        break;
      }
    }
  }
  run_finalizers(inv, ctx);
  if (inv.suspended && !inv.error) return;  // its record is written when it ends
  inv.suspended.reset();
  end_with_reported_error(inv);
  run_final_stage(inv, ctx);
}

// A tool that answered with an error of its own (an MCP result with isError) ran, and its
// result was scanned like any: the call ends tool_error, its output kept for the caller.
void Pipeline::end_with_reported_error(Invocation& inv) {
  if (inv.error) return;
  if (inv.reported_failure) {
    end_with_code_error(inv);
    return;
  }
  if (!inv.tool_reported_error) return;
  inv.error = fail(ErrorKind::tool_error, "the tool answered with an error (isError); its result is the output");
}

// A python-code cell that raised: its report, as the output scan left it, becomes the
// error's details, and the message names the exception (from the scanned report only).
void Pipeline::end_with_code_error(Invocation& inv) {
  nlohmann::json report = inv.output ? std::move(*inv.output) : nlohmann::json::object();
  inv.output.reset();
  inv.error = std::move(*inv.reported_failure);
  inv.reported_failure.reset();
  if (!inv.error_details.is_object()) inv.error_details = nlohmann::json::object();
  for (auto& [key, value] : report.items()) inv.error_details[key] = std::move(value);
  auto text = [&](const char* key) {
    auto it = inv.error_details.find(key);
    return it != inv.error_details.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string name = text("name"), value = text("value");
  if (!name.empty()) inv.error->message += ": " + name + (value.empty() ? "" : ": " + value);
  auto line = inv.error_details.find("line");
  if (line != inv.error_details.end() && line->is_number_integer())
    inv.error->message += " (line " + std::to_string(line->get<long long>()) + " of the code)";
}

// Most recent first, like a scope's destructors: what was set up last is undone first.
void Pipeline::run_finalizers(Invocation& inv, StageContext& ctx) const {
  auto finalizers = ctx.take_finalizers();
  for (auto it = finalizers.rbegin(); it != finalizers.rend(); ++it) {
    Status done = run_finalizer(*it, inv);
    if (done) continue;
    const std::string what = it->name + " failed: " + done.error().message;
    inv.notes.push_back("airlock: " + what);
    if (!inv.error) {  // a result whose clean-up failed is not given out
      inv.output.reset();
      inv.error = fail(ErrorKind::internal, what);
    }
  }
}

void Pipeline::run_final_stage(Invocation& inv, StageContext& ctx) const {
  if (!final_) return;
  StageResult result = run_stage(*final_, inv, ctx, observer_);
  if (const auto* error = result.error()) {
    // The record could not be written: whatever happened before, there is no result.
    inv.output.reset();
    inv.error = *error;
  }
}

std::string log_with_notes(const Invocation& inv) {
  std::string log = inv.tool_log;
  if (!log.empty() && log.back() != '\n' && !inv.notes.empty()) log += '\n';
  for (const auto& note : inv.notes) log += note + "\n";
  return log;
}

}  // namespace airlock::pipeline
