#include "pipeline/stages/execute.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/digest.hpp"
#include "common/json_limits.hpp"
#include "pipeline/stages/failure_report.hpp"

namespace airlock::pipeline {

extern const char* const kEmbeddedRunner;  // runner_data.cpp, generated from airlock_runner.py

namespace {
namespace fs = std::filesystem;

constexpr const char* kRunnerInSandbox = "/airlock/airlock_runner.py";
constexpr const char* kToolDirInSandbox = "/tool";

// The error of a run that did not end well (a verdict other than ok).
InvocationError run_error(const backend::RunResult& o, const sandbox::Limits& limits, bool stopping) {
  using sandbox::Verdict;
  switch (o.verdict) {
    case Verdict::setup_error: {
      if (!o.quota_exceeded) return fail(ErrorKind::sandbox_setup, o.message);
      InvocationError refused = deny(ErrorKind::quota_exceeded, "the cluster's quota refused the tool's pod: " +
                                                                    o.message + "; retry in 10 s");
      refused.quota = "cluster";
      refused.retry_after_seconds = 10;
      return refused;
    }
    case Verdict::output_limit:
      return fail(ErrorKind::output_limit,
                  "the tool's output passed the " + std::to_string(limits.output_bytes) + "-byte limit");
    case Verdict::timeout: return fail(ErrorKind::timeout, o.message);
    case Verdict::cpu_time_limit: return fail(ErrorKind::cpu_time_limit, o.message);
    case Verdict::memory_limit: return fail(ErrorKind::memory_limit, o.message);
    case Verdict::seccomp_violation: return fail(ErrorKind::seccomp_violation, o.message);
    case Verdict::signaled:
      if (stopping)
        return fail(ErrorKind::stopped,
                    "the daemon stopped this invocation while shutting down (" + o.message + ")");
      return fail(ErrorKind::tool_crashed, o.message);
    case Verdict::exit_nonzero:
    case Verdict::ok: break;
  }
  return fail(ErrorKind::tool_crashed, o.message);
}

// A host name comes from the tool (a SOCKS request may carry any byte): a note is one line.
std::string one_line(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}

// Airlock's word on each denied connection, for the log; the egress array has them all.
constexpr std::size_t kMaxEgressNotes = 20;

std::vector<std::string> egress_notes(const backend::RunResult& o) {
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

std::map<policy::Risk, backend::Backend*> runnable_tiers_on(backend::Backend& backend) {
  return {{policy::Risk::low, &backend}, {policy::Risk::medium, &backend}};
}

backend::Placement placement_for(const policy::ToolPlacement& p) {
  backend::Placement out;
  out.image = p.image;
  out.arch = p.arch;
  out.gpus = p.gpus;
  out.node_selector = p.node_selector;
  for (const auto& t : p.tolerations) out.tolerations.push_back({t.key, t.op, t.value, t.effect});
  return out;
}

namespace {

// How a warm tool's template starts (docs/warm-start.md); none for a cold one.
std::optional<backend::WarmStart> warm_start(const policy::ToolConfig& tool, std::vector<std::string> template_argv) {
  if (!tool.warm) return std::nullopt;
  return backend::WarmStart{tool.name, std::move(template_argv), tool.warm->recycle_calls, tool.warm->recycle_after};
}

}  // namespace

backend::RunRequest ExecuteStage::request_for(const Invocation& inv, const policy::ToolConfig& tool) const {
  using Mount = backend::Mount;
  backend::RunRequest request;
  request.limits = inv.limits;
  request.egress.allow = tool.network.allow;
  request.egress.forwards = tool.network.forwards;
  request.egress.resolve = tool.network.resolve;
  request.env = tool.env;
  request.credentials = inv.credentials;
  request.egress.inject = inv.injections;
  for (const auto& p : tool.data_paths) request.mounts.push_back({Mount::Kind::data, p, p, true});
  request.mounts.push_back({Mount::Kind::runner, options_.runner_dir, "/airlock", true});
  request.stdin_bytes = inv.arguments.dump();
  request.placement = placement_for(tool.placement);
  switch (tool.runtime.kind) {
    case policy::ToolRuntime::Kind::python: {
      fs::path file(tool.runtime.file);
      request.mounts.push_back(
          {Mount::Kind::tool_code, file.parent_path().string(), kToolDirInSandbox, true});
      const std::string module = std::string(kToolDirInSandbox) + "/" + file.filename().string();
      request.argv = {tool.runtime.interpreter, "-I", "-S", kRunnerInSandbox, "module", module};
      request.warm = warm_start(tool, {tool.runtime.interpreter, "-I", "-S", kRunnerInSandbox, "template", module});
      break;
    }
    case policy::ToolRuntime::Kind::command:
      request.argv = tool.runtime.command;
      break;
    case policy::ToolRuntime::Kind::python_code: {
      // run(args) gets `arguments` (python_code_input_schema); under a schema of the
      // operator's without it, the arguments other than the code, as before there was one.
      nlohmann::json args = inv.arguments;
      nlohmann::json code_request = {{"code", args.value("code", "")}};
      args.erase("code");
      const auto given = args.find("arguments");
      const bool explicit_args = given != args.end() && given->is_object() && args.size() == 1;
      code_request["arguments"] = explicit_args ? *given : args;
      request.argv = {tool.runtime.interpreter, "-I", "-S", kRunnerInSandbox, "code"};
      request.stdin_bytes = code_request.dump();
      // Its template imports the runner only; each call runs its code as `code` mode does.
      request.warm = warm_start(tool, {tool.runtime.interpreter, "-I", "-S", kRunnerInSandbox, "code-template"});
      break;
    }
  }
  return request;
}

namespace {

std::string first_denial(const nlohmann::json& denials) {
  const auto& d = denials.front();
  return d.value("host", "") + ":" + std::to_string(d.value("port", 0)) + " (" + d.value("rule", "") + ")";
}

}  // namespace

// A run that did not end well. A python-code cell that raised is not an error yet: its report
// is the output, for the output scan to redact like any result, and the call ends code_error
// (or egress_denied) after it. A run that exited non-zero after the egress proxy refused a
// connection is egress_denied, naming the connections, rather than tool_crashed.
StageResult ExecuteStage::failed_run(Invocation& inv, const policy::ToolConfig& tool,
                                     const std::string& rule_set, bool stopping) const {
  const auto& o = *inv.outcome;
  nlohmann::json denials = egress_denials(o, rule_set);
  const bool denied = !denials.empty() && o.verdict == sandbox::Verdict::exit_nonzero;
  if (denied) inv.error_details = {{"egress", denials}};
  if (tool.runtime.kind == policy::ToolRuntime::Kind::python_code)
    if (auto report = code_error_report(o, max_depth_)) {
      inv.output = std::move(*report);
      inv.reported_failure = denied ? fail(ErrorKind::egress_denied, "the code failed after the egress proxy refused " +
                                                                         first_denial(denials) + "; it raised")
                                    : fail(ErrorKind::code_error, "the code raised");
      return StageResult::next();
    }
  if (denied)
    return fail(ErrorKind::egress_denied,
                "the tool failed (" + o.message + ") after the egress proxy refused " + first_denial(denials));
  return run_error(o, inv.limits, stopping);
}

StageResult ExecuteStage::run(Invocation& inv, StageContext& ctx) {
  const policy::ToolConfig* tool = ctx.tool(inv);
  if (!tool) return deny(ErrorKind::unknown_tool, "there is no tool named '" + inv.tool_name + "'");
  auto backend = options_.backends.find(tool->risk);
  if (backend == options_.backends.end() || !backend->second) {
    auto why = options_.unavailable.find(tool->risk);
    return deny(ErrorKind::tier_unavailable,
                "tool '" + inv.tool_name + "' is " + std::string(policy::risk_name(tool->risk)) +
                    " risk: " +
                    (why != options_.unavailable.end() ? why->second : "no backend runs that tier here"));
  }
  if (tool->mcp) {
    const auto* server = ctx.config().find_mcp_server(tool->mcp->server);
    if (auto refused = mcp_tier_refusal(*tool, server ? server->risk : tool->risk); !refused.empty())
      return deny(ErrorKind::tier_unavailable, "tool '" + inv.tool_name + "' is " +
                                                   std::string(policy::risk_name(tool->risk)) + " risk: " + refused);
    return call_mcp_server(inv, *tool);
  }
  backend::RunContext context;
  context.rule_set = "the egress rules of tool " + inv.tool_name;
  context.invocation_id = inv.id;
  context.tool_name = inv.tool_name;
  if (inv.control) context.cancel = &inv.control->cancel;
  inv.request = request_for(inv, *tool);
  inv.outcome = backend->second->run(*inv.request, context);
  const auto& o = *inv.outcome;
  inv.tool_log = o.stderr_data.substr(0, options_.max_log_bytes);
  inv.notes = egress_notes(o);
  if (inv.request->warm && !o.warm)
    inv.notes.push_back("airlock: tool " + inv.tool_name + " ran cold: " +
                        (o.cold_reason.empty() ? "the " + std::string(backend->second->name()) +
                                                     " backend starts every call cold"
                                               : o.cold_reason));
  if (inv.control && inv.control->cancel.cancelled())
    return fail(ErrorKind::cancelled, "the client cancelled the call; its sandbox was stopped");
  if (o.verdict != sandbox::Verdict::ok) return failed_run(inv, *tool, context.rule_set, backend->second->stopping());

  // The tool's output is as hostile as a request: bounded like one.
  auto parsed = parse_json_bounded(o.stdout_data, max_depth_);
  if (!parsed && parsed.error().code == "too_deep")
    return fail(ErrorKind::invalid_output,
                "the tool's stdout: " + parsed.error().message + " (server.maxJsonDepth)");
  if (!parsed || !parsed->is_object())
    return fail(ErrorKind::invalid_output, "the tool's stdout is not one JSON object");
  nlohmann::json output = std::move(*parsed);
  if (auto it = output_schemas_.find(inv.tool_name); it != output_schemas_.end())
    if (auto problem = it->second->check(output))
      return fail(ErrorKind::invalid_output, "output" + problem->first + ": " + problem->second);
  inv.output = std::move(output);
  return StageResult::next();
}

namespace {

// Whose server process a call runs in: (agent, user), so that two users, two agents, or two
// agents acting for one user never share one (nor its credentials, leased for the first).
// Each name quoted as JSON: a name with spaces in it cannot pass for two.
std::string server_owner(const Invocation& inv) {
  auto quoted = [](const std::string& name) { return nlohmann::json(name).dump(); };
  std::string owner = inv.actor ? "agent " + quoted(inv.principal_name()) : std::string();
  if (inv.subject)
    owner += (owner.empty() ? "user " : " for user ") + quoted(inv.subject->issuer) + " " + quoted(inv.subject->sub);
  return owner;
}

InvocationError mcp_error(const Error& e, const std::string& tool) {
  if (e.code == "tier_unavailable") return deny(ErrorKind::tier_unavailable, "tool " + tool + ": " + e.message);
  if (e.code == "tool_disabled") return deny(ErrorKind::tool_disabled, e.message);
  if (e.code == "credential_denied")
    return deny(ErrorKind::credential_denied, "a credential of this tool's MCP server: " + e.message);
  if (e.code == "credential_unavailable")
    return fail(ErrorKind::credential_unavailable,
                "a credential of this tool's MCP server could not be made: " + e.message);
  if (e.code == "timeout") return fail(ErrorKind::timeout, e.message);
  if (e.code == "cancelled") return fail(ErrorKind::cancelled, e.message);
  if (e.code == "stopped") return fail(ErrorKind::stopped, e.message);
  if (e.code == "instances_full") {  // every instance the caps allow is busy with a call
    InvocationError refused = deny(ErrorKind::quota_exceeded, "tool " + tool + ": " + e.message);
    refused.quota = "mcpServerInstances";
    refused.retry_after_seconds = 1;
    return refused;
  }
  return fail(ErrorKind::tool_server_failed, "tool " + tool + ": " + e.message);
}

}  // namespace

// Why a tool of an MCP server may not be called here ("" when it may). The gateway runs the
// server in the sandbox of the server's risk's tier: the local sandbox, gVisor, or a pod of
// its own on Kubernetes (docs/mcp-gateway.md, "Servers on gVisor", "Servers on Kubernetes").
// The server's sandbox may not be weaker than the tool's tier asks for: a tool whose tier runs
// on gVisor or Kubernetes needs its server on that same backend (a tool raised there by
// riskOverrides, its server elsewhere, is refused); a tool of a local tier may run anywhere.
std::string ExecuteStage::mcp_tier_refusal(const policy::ToolConfig& tool, policy::Risk server_risk) const {
  const auto backend_of = [&](policy::Risk risk) -> std::string {
    const auto found = options_.backends.find(risk);
    return found != options_.backends.end() && found->second ? std::string(found->second->name()) : "";
  };
  const auto runs_servers = [](const std::string& b) { return b == "local" || b == "gvisor" || b == "kubernetes"; };
  const auto shown = [](const std::string& b) -> std::string {
    return b == "gvisor" ? "gVisor" : b == "kubernetes" ? "Kubernetes" : b;
  };
  const std::string tool_backend = backend_of(tool.risk);
  if (!runs_servers(tool_backend))
    return "that tier runs on the " + tool_backend +
           " backend, and MCP servers run only in the local sandbox, in gVisor or on Kubernetes";
  const std::string server_backend = backend_of(server_risk);
  if (server_backend.empty()) return "no backend runs the tier of its MCP server here";
  if (!runs_servers(server_backend))
    return "its MCP server is " + std::string(policy::risk_name(server_risk)) + " risk, whose tier runs on the " +
           server_backend + " backend, and MCP servers run only in the local sandbox, in gVisor or on Kubernetes";
  if (tool_backend != "local" && server_backend != tool_backend)
    return "that tier runs on " + shown(tool_backend) + ", and its MCP server (" +
           std::string(policy::risk_name(server_risk)) + " risk) runs " +
           (server_backend == "local" ? std::string("in the local sandbox") : "on " + shown(server_backend)) +
           ": raise the server's risk to a tier on " + shown(tool_backend);
  return "";
}

// A tool of an MCP server: the gateway calls it in that server's sandbox. Its result is the
// output as the server gave it ({content, structuredContent?, isError?}; a content tool's:
// the resources/read or prompts/get result object), scanned by DLP
// next like any output; isError stays in the output (the MCP answer carries it on) and
// ends the call tool_error once it has been scanned (Pipeline::run).
StageResult ExecuteStage::call_mcp_server(Invocation& inv, const policy::ToolConfig& tool) const {
  if (!options_.mcp)
    return fail(ErrorKind::tool_server_failed, "tool " + inv.tool_name + ": no MCP gateway runs here");
  McpToolCall call;
  call.invocation_id = inv.id;
  call.server = tool.mcp->server;
  call.remote_tool = tool.mcp->remote_name;
  call.method = tool.mcp->method;
  call.arguments = inv.arguments;
  call.owner = server_owner(inv);
  call.timeout = inv.limits.wall_time;
  call.lease_credentials = inv.lease_server_credentials;
  call.usage = &inv.server_usage;  // charged against quotas.cpuSeconds when the call ends
  if (inv.control) {
    call.cancel = &inv.control->cancel;
    call.progress = inv.control->progress;
  }
  auto result = options_.mcp->call(call);
  if (!result) return mcp_error(result.error(), inv.tool_name);
  // The instance's credentials: redacted from what leaves (the credentials stage's finalizer)
  // and named in the audit record, as a call's own are.
  inv.server_credential_values = std::move(result->credential_values);
  for (auto& use : result->credential_uses)
    inv.credential_leases.push_back({std::move(use.lease), std::move(use.hmac_sha256)});
  inv.tool_log = result->server_log.substr(0, options_.max_log_bytes);
  // A content tool's output is the server's result object (a ReadResourceResult, a
  // GetPromptResult), scanned like any output; a refusal stays a CallToolResult with isError.
  nlohmann::json output = result->method_result ? std::move(*result->method_result)
                                                : nlohmann::json{{"content", std::move(result->content)}};
  if (result->structured_content) {
    if (!result->structured_content->is_object())
      return fail(ErrorKind::invalid_output, "the server's structuredContent is not a JSON object");
    if (auto it = output_schemas_.find(inv.tool_name); it != output_schemas_.end())
      if (auto problem = it->second->check(*result->structured_content))
        return fail(ErrorKind::invalid_output,
                    "structuredContent" + problem->first + ": " + problem->second);
    output["structuredContent"] = std::move(*result->structured_content);
  }
  if (result->is_error) output["isError"] = true;
  // The tier's output cap holds for a server's result as for a sandbox's stdout.
  const std::string text = output.dump();
  if (text.size() > inv.limits.output_bytes)
    return fail(ErrorKind::output_limit, "the MCP server's result (" + std::to_string(text.size()) +
                                             " bytes) passed the " + std::to_string(inv.limits.output_bytes) + "-byte limit");
  inv.server_result = Invocation::ResultDigest{sha256_hex(text), text.size()};
  inv.tool_reported_error = result->is_error;
  inv.output = std::move(output);
  return StageResult::next();
}

}  // namespace airlock::pipeline
