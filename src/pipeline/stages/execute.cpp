#include "pipeline/stages/execute.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/json_limits.hpp"

namespace airlock::pipeline {

extern const char* const kEmbeddedRunner;  // runner_data.cpp, generated from airlock_runner.py

namespace {
namespace fs = std::filesystem;

constexpr const char* kRunnerInSandbox = "/airlock/airlock_runner.py";
constexpr const char* kToolDirInSandbox = "/tool";

InvocationError tool_error(std::string kind, std::string message) {
  return InvocationError{std::move(kind), std::move(message), "error", 200, ""};
}

// A host name comes from the tool (a SOCKS request may carry any byte): a note is one line.
std::string one_line(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}

// Airlock's word on each denied connection, for the log; the egress array has them all.
constexpr std::size_t kMaxEgressNotes = 20;

std::vector<std::string> egress_notes(const sandbox::Outcome& o) {
  std::vector<std::string> notes;
  std::size_t denied = 0;
  for (const auto& e : o.egress) {
    if (e.allowed) continue;
    if (++denied <= kMaxEgressNotes)
      notes.push_back(one_line("airlock: egress to " + e.host + ":" + std::to_string(e.port) +
                               " was denied: " + e.rule));
  }
  if (denied > kMaxEgressNotes)
    notes.push_back("airlock: " + std::to_string(denied - kMaxEgressNotes) +
                    " more egress denials (see egress)");
  return notes;
}

}  // namespace

Status install_runner(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string path = dir + "/airlock_runner.py";
  {
    std::ofstream out(path, std::ios::trunc);
    out << kEmbeddedRunner;
    if (!out) return Error::make("storage", "cannot write the tool runner to " + path);
  }
  ::chmod(dir.c_str(), 0755);
  ::chmod(path.c_str(), 0644);
  return {};
}

Result<std::unique_ptr<ExecuteStage>> ExecuteStage::create(const policy::Config& config, ExecuteOptions options) {
  auto stage = std::make_unique<ExecuteStage>();
  stage->options_ = std::move(options);
  stage->max_depth_ = config.server.max_json_depth;
  for (const auto& tool : config.tools) {
    if (!tool.output_schema) continue;
    auto schema = compiled_schema(tool.output_check, *tool.output_schema,
                                  tool.where + ": tool " + tool.name + ".outputSchema");
    if (!schema) return schema.error();
    stage->output_schemas_[tool.name] = *schema;
  }
  return stage;
}

sandbox::Spec ExecuteStage::spec_for(const Invocation& inv) const {
  const auto& tool = *inv.tool;
  sandbox::Spec spec;
  spec.limits = inv.limits;
  spec.network.allow = tool.network.allow;
  spec.network.forwards = tool.network.forwards;
  spec.network.resolve = tool.network.resolve;
  spec.env = tool.env;
  spec.kill_on_output_limit = true;  // oversize output is an error; no need to run on
  spec.output_mode = sandbox::OutputMode::collect;
  for (const auto& p : tool.data_paths) spec.binds.push_back({p, p, false});
  spec.binds.push_back({options_.runner_dir, "/airlock", false});
  spec.stdin_source.kind = sandbox::StdinSource::Kind::bytes;
  switch (tool.runtime.kind) {
    case policy::ToolRuntime::Kind::python: {
      fs::path file(tool.runtime.file);
      spec.binds.push_back({file.parent_path().string(), kToolDirInSandbox, false});
      spec.argv = {tool.runtime.interpreter, "-I", "-S", kRunnerInSandbox, "module",
                   std::string(kToolDirInSandbox) + "/" + file.filename().string()};
      spec.stdin_source.bytes = inv.arguments.dump();
      break;
    }
    case policy::ToolRuntime::Kind::command:
      spec.argv = tool.runtime.command;
      spec.stdin_source.bytes = inv.arguments.dump();
      break;
    case policy::ToolRuntime::Kind::python_code: {
      nlohmann::json args = inv.arguments;
      nlohmann::json request = {{"code", args.value("code", "")}};
      args.erase("code");
      request["arguments"] = args;
      spec.argv = {tool.runtime.interpreter, "-I", "-S", kRunnerInSandbox, "code"};
      spec.stdin_source.bytes = request.dump();
      break;
    }
  }
  return spec;
}

std::optional<InvocationError> ExecuteStage::run(Invocation& inv) {
  backend::LocalRunOptions run_options;
  run_options.rule_set = "the egress rules of tool " + inv.tool_name;
  run_options.forbidden = *options_.forbidden;
  run_options.registry = options_.registry;
  inv.spec = spec_for(inv);
  inv.outcome = backend::run_local(*inv.spec, run_options);
  const auto& o = *inv.outcome;
  inv.tool_log = o.stderr_data.substr(0, options_.max_log_bytes);
  inv.notes = egress_notes(o);

  if (o.verdict == sandbox::Verdict::setup_error)
    return InvocationError{"sandbox_setup", o.message, "error", 500, ""};
  if (o.verdict == sandbox::Verdict::output_limit)
    return tool_error("output_limit", "the tool's output passed the " +
                                          std::to_string(inv.limits.output_bytes) + "-byte limit");
  if (o.verdict != sandbox::Verdict::ok) {
    std::string kind(sandbox::verdict_name(o.verdict));
    if (o.verdict == sandbox::Verdict::exit_nonzero || o.verdict == sandbox::Verdict::signaled)
      kind = "tool_crashed";
    if (o.verdict == sandbox::Verdict::signaled && options_.registry && options_.registry->stopping())
      return tool_error("stopped", "the daemon stopped this invocation while shutting down (" + o.message + ")");
    return tool_error(kind, o.message);
  }
  // The tool's output is as hostile as a request: bounded like one.
  auto parsed = parse_json_bounded(o.stdout_data, max_depth_);
  if (!parsed && parsed.error().code == "too_deep")
    return tool_error("invalid_output", "the tool's stdout: " + parsed.error().message +
                                            " (server.maxJsonDepth)");
  if (!parsed || !parsed->is_object())
    return tool_error("invalid_output", "the tool's stdout is not one JSON object");
  nlohmann::json output = std::move(*parsed);
  if (auto it = output_schemas_.find(inv.tool_name); it != output_schemas_.end())
    if (auto problem = it->second->check(output))
      return tool_error("invalid_output", "output" + problem->first + ": " + problem->second);
  inv.output = std::move(output);
  return std::nullopt;
}

}  // namespace airlock::pipeline
