#include "backend/local.hpp"

#include <nlohmann/json.hpp>

#include "backend/sandbox_egress.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::backend {
namespace {

RunResult setup_failure(const std::string& message) {
  RunResult r;
  r.verdict = sandbox::Verdict::setup_error;
  r.message = message;
  return r;
}

}  // namespace

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
  RunResult result{sandbox->wait(), {}};
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

LocalBackend::LocalBackend(RunningSandboxes* registry,
                           std::shared_ptr<const std::vector<egress::Endpoint>> forbidden)
    : registry_(registry), forbidden_(std::move(forbidden)) {}

RunResult LocalBackend::run(const RunRequest& request, const RunContext& context) {
  LocalRunOptions options;
  options.rule_set = context.rule_set;
  if (forbidden_) options.forbidden = *forbidden_;
  options.registry = registry_;
  options.cancel = context.cancel;
  return run_local(local_spec(request), request.egress, options);
}

}  // namespace airlock::backend
