#include "backend/local.hpp"

#include <nlohmann/json.hpp>

#include "backend/sandbox_egress.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/warm/warm.hpp"

namespace airlock::backend {

RunResult setup_failure(const std::string& message) {
  RunResult r;
  r.verdict = sandbox::Verdict::setup_error;
  r.message = message;
  return r;
}

void RunningSandboxes::add(sandbox::Sandbox* s) {
  std::lock_guard lock(mu_);
  running_.insert(s);
  if (stopping_) s->kill();
}

void RunningSandboxes::remove(sandbox::Sandbox* s) {
  std::lock_guard lock(mu_);
  running_.erase(s);
}

std::size_t RunningSandboxes::count() const {
  std::lock_guard lock(mu_);
  return running_.size();
}

void RunningSandboxes::kill_all() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  for (auto* s : running_) s->kill();
}

bool RunningSandboxes::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

RunResult run_local(const sandbox::Spec& spec, const egress::EgressRules& rules,
                    const LocalRunOptions& options) {
  sandbox::Spec behind = spec;
  // Declared before the sandbox: the proxy (and the CA bundle's file) outlive the run.
  std::unique_ptr<SandboxEgress> egress;
  if (rules.has_egress()) {
    auto prepared = SandboxEgress::prepare(behind, rules, options.rule_set, options.forbidden);
    if (!prepared) return setup_failure(prepared.error().message);
    egress = std::move(*prepared);
  }
  auto launched = sandbox::Sandbox::launch(behind);
  if (!launched) return setup_failure(launched.error().message);
  auto& sandbox = *launched;
  SandboxRegistration registration(options.registry, sandbox.get());
  CancelHook hook(options.cancel, [s = sandbox.get()] { s->kill(); });
  if (egress) egress->start(sandbox->take_listeners());
  RunResult result;
  static_cast<airlock::sandbox::Outcome&>(result) = sandbox->wait();
  if (egress) result.egress = egress->stop();
  return result;
}

nlohmann::json to_json(const RunResult& result) {
  nlohmann::json j = sandbox::to_json(static_cast<const sandbox::Outcome&>(result));
  auto egress = nlohmann::json::array();
  for (const auto& r : result.egress) egress.push_back(egress::to_json(r));
  j["egress"] = std::move(egress);
  return j;
}

std::string_view mount_kind_name(Mount::Kind kind) {
  switch (kind) {
    case Mount::Kind::tool_code: return "tool_code";
    case Mount::Kind::runner: return "runner";
    case Mount::Kind::data: return "data";
  }
  return "data";
}

sandbox::Spec local_spec(const RunRequest& request) {
  sandbox::Spec spec;
  spec.argv = request.argv;
  spec.env = request.env;
  for (const auto& c : request.credentials) spec.env[c.env_name] = c.value;
  spec.limits = request.limits;
  for (const auto& m : request.mounts)
    spec.binds.push_back({m.host_path, m.path_inside, !m.read_only});
  spec.stdin_source.kind = sandbox::StdinSource::Kind::bytes;
  spec.stdin_source.bytes = request.stdin_bytes;
  spec.output_mode = sandbox::OutputMode::collect;
  spec.kill_on_output_limit = true;  // past the cap the output is useless; no need to run on
  return spec;
}

namespace {

// A networked tool's sandbox behind the proxy (its listeners, ports and the proxy's
// environment), which the call's proxy serves once the call is handed over.
Result<sandbox::Spec> shape_for_egress(sandbox::Spec spec, const egress::EgressRules& rules) {
  if (!rules.has_egress()) return spec;
  return SandboxEgress::behind_proxy(spec, rules);
}

// Templates of a tool with other binds, environment or limits (a new configuration) are
// other templates.
std::string warm_key(const RunRequest& request, const sandbox::Spec& template_spec) {
  nlohmann::json binds = nlohmann::json::array();
  for (const auto& b : template_spec.binds) binds.push_back({b.source, b.dest, b.writable});
  const auto& l = template_spec.limits;
  return nlohmann::json{{"tool", request.warm->key},
                        {"argv", template_spec.argv},
                        {"env", template_spec.env},
                        {"binds", binds},
                        {"listeners", template_spec.network.loopback_listeners},
                        {"limits", {l.memory_bytes, l.disk_bytes, l.open_files}}}
      .dump();
}

}  // namespace

Result<sandbox::Spec> warm_template_spec(const RunRequest& request) {
  RunRequest without_input = request;
  without_input.credentials.clear();
  without_input.stdin_bytes.clear();
  // Behind the proxy as its calls are: their listeners' ports are the only ones its Landlock
  // lets them bind and connect to, and the proxy's environment is its own.
  auto shaped = shape_for_egress(local_spec(without_input), request.egress);
  if (!shaped) return shaped.error();
  sandbox::Spec spec = std::move(*shaped);
  spec.argv = request.warm->template_argv;
  spec.binds.push_back({sandbox::warm_library_path(), sandbox::kWarmLibraryInSandbox, false});
  spec.stdin_source.kind = sandbox::StdinSource::Kind::none;
  spec.limits.cpu_time.reset();  // it idles; each call has its own
  spec.limits.pids = 4096;
  // Backstop only: it is replaced at its recycle age, by its next call.
  spec.limits.wall_time = request.warm->recycle_after + std::chrono::hours(24);
  return spec;
}

Result<sandbox::Spec> warm_call_spec(const RunRequest& request) {
  auto shaped = shape_for_egress(local_spec(request), request.egress);
  if (!shaped) return shaped.error();
  sandbox::Spec spec = std::move(*shaped);
  nlohmann::json env = nlohmann::json::object();
  for (const auto& c : request.credentials) {
    env[c.env_name] = c.value;
    spec.env.erase(c.env_name);
  }
  // stdin_bytes is the arguments' JSON text already: spliced in, not parsed again.
  spec.stdin_source.bytes = "{\"env\":" + env.dump() + ",\"arguments\":" + request.stdin_bytes + "}";
  spec.binds.push_back({sandbox::warm_library_path(), sandbox::kWarmLibraryInSandbox, false});
  return spec;
}

LocalBackend::LocalBackend(RunningSandboxes* registry,
                           std::shared_ptr<const std::vector<egress::Endpoint>> forbidden,
                           unsigned max_warm_templates)
    : registry_(registry),
      forbidden_(std::move(forbidden)),
      ready_sessions_([this](const ReadySessions& wanted) { return start_ready_session(wanted); },
                      kReadySessionMaxAge) {
  if (max_warm_templates > 0) warm_ = std::make_unique<WarmPool>(max_warm_templates);
}

void LocalBackend::shutdown() {
  ready_sessions_.shutdown();
  if (warm_) warm_->shutdown();
}

std::optional<RunResult> LocalBackend::run_warm(const RunRequest& request,
                                                const RunContext& context,
                                                std::string& why_cold) {
  if (!warm_) {
    why_cold = "server.maxWarmTemplates is 0";
    return std::nullopt;
  }
  if (!request.egress.inject.empty()) {
    why_cold = "header injection needs the call's CA bundle bound in at launch";
    return std::nullopt;
  }
  if (sandbox::warm_library_path().empty()) {
    why_cold = "libairlock_warm.so is not installed";
    return std::nullopt;
  }
  if (auto why = sandbox::warm_calls_unsupported()) {  // before a template is launched for nothing
    why_cold = *why;
    return std::nullopt;
  }
  auto template_spec = warm_template_spec(request);
  auto call_spec = warm_call_spec(request);
  // This call's proxy (its policy only: the shape is the template's), declared before the
  // sandbox, which it outlives. Made before a child is taken: a bad rule costs no child.
  auto egress = call_egress(request.egress, context.rule_set);
  if (!template_spec || !call_spec || !egress) {  // the cold run reports the same error
    why_cold = !template_spec ? template_spec.error().message
               : !call_spec   ? call_spec.error().message
                              : egress.error().message;
    return std::nullopt;
  }
  WarmSettings settings{request.warm->recycle_calls, request.warm->recycle_after};
  auto lease = warm_->lease(warm_key(request, *template_spec), *template_spec, settings, why_cold);
  if (!lease) return std::nullopt;
  auto started = lease.start_call(*call_spec);
  if (!started) {  // nothing of the call has reached the template's child yet: run it cold
    why_cold = "its warm template did not start the call: " + started.error().message;
    return std::nullopt;
  }
  auto& sandbox = *started;
  SandboxRegistration registration(registry_, sandbox.get());
  CancelHook hook(context.cancel, [s = sandbox.get()] { s->kill(); });
  // The child opened its listeners in its own network namespace, before it was handed this
  // call; they are served by this call's proxy only, and closed with it.
  if (*egress) (*egress)->start(sandbox->take_listeners());
  RunResult result;
  static_cast<airlock::sandbox::Outcome&>(result) = sandbox->wait();
  if (*egress) result.egress = (*egress)->stop();
  result.warm = true;
  return result;
}

Result<std::unique_ptr<SandboxEgress>> LocalBackend::call_egress(const egress::EgressRules& rules,
                                                                 const std::string& rule_set) const {
  if (!rules.has_egress()) return std::unique_ptr<SandboxEgress>();
  return SandboxEgress::for_call(rules, rule_set, forbidden_ ? *forbidden_ : std::vector<egress::Endpoint>{});
}

RunResult LocalBackend::run(const RunRequest& request, const RunContext& context) {
  std::string why_cold;
  if (request.warm)
    if (auto warm = run_warm(request, context, why_cold)) return std::move(*warm);
  RunResult cold = run_cold(request, context);
  cold.cold_reason = std::move(why_cold);
  return cold;
}

RunResult LocalBackend::run_cold(const RunRequest& request, const RunContext& context) {
  LocalRunOptions options;
  options.rule_set = context.rule_set;
  if (forbidden_) options.forbidden = *forbidden_;
  options.registry = registry_;
  options.cancel = context.cancel;
  return run_local(local_spec(request), request.egress, options);
}

}  // namespace airlock::backend
