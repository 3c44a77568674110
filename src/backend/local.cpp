#include "backend/local.hpp"

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "backend/ca_bundle.hpp"
#include "egress/proxy.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::backend {
namespace {

RunResult setup_failure(const std::string& message) {
  RunResult r;
  r.verdict = sandbox::Verdict::setup_error;
  r.message = message;
  return r;
}

// Registers a running sandbox for as long as it runs.
class Registration {
 public:
  Registration(RunningSandboxes* registry, sandbox::Sandbox* s) : registry_(registry), sandbox_(s) {
    if (registry_) registry_->add(sandbox_);
  }
  ~Registration() {
    if (registry_) registry_->remove(sandbox_);
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  RunningSandboxes* registry_;
  sandbox::Sandbox* sandbox_;
};

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

namespace {

// The spec as it runs behind the proxy: listeners for the proxy's port (first) and each
// forward's, the only ports it may connect to, and the proxy's environment.
Result<sandbox::Spec> spec_behind_proxy(const sandbox::Spec& spec,
                                        const egress::EgressRules& rules) {
  const bool proxy = !rules.allow.empty();
  std::set<std::uint16_t> ports;
  if (proxy) ports.insert(egress::kProxyPort);
  for (const auto& f : rules.forwards)
    if (!ports.insert(f.listen_port).second)
      return Error::make("egress", "--forward " + std::to_string(f.listen_port) + ": port " +
                                       std::to_string(f.listen_port) +
                                       " is already taken inside the sandbox" +
                                       (f.listen_port == egress::kProxyPort
                                            ? " (by the egress proxy)" : ""));
  sandbox::Spec behind = spec;
  auto& net = behind.network;
  net.loopback_listeners.clear();
  if (proxy) net.loopback_listeners.push_back(egress::kProxyPort);
  for (const auto& f : rules.forwards) net.loopback_listeners.push_back(f.listen_port);
  net.tcp_connect_ports = net.loopback_listeners;
  if (proxy)
    for (const auto& [name, value] : egress::proxy_environment()) behind.env.emplace(name, value);
  return behind;
}

// Header injection: the proxy's per-run CA, trusted inside through a CA bundle of the run.
Result<RunCaBundle> trust_interception_ca(egress::EgressProxy& proxy, sandbox::Spec& spec) {
  auto pem = proxy.make_interception_ca();
  if (!pem) return pem.error();
  auto bundle = RunCaBundle::write(*pem);
  if (!bundle) return bundle.error();
  bundle->trust_inside(spec);
  return bundle;
}

}  // namespace

RunResult run_local(const sandbox::Spec& spec, const egress::EgressRules& rules,
                    const LocalRunOptions& options) {
  if (!rules.has_egress()) {
    auto launched = sandbox::Sandbox::launch(spec);
    if (!launched) return setup_failure(launched.error().message);
    Registration registration(options.registry, launched->get());
    CancelHook hook(options.cancel, [s = launched->get()] { s->kill(); });
    return {(*launched)->wait(), {}};
  }

  auto policy = egress::EgressPolicy::compile(rules);
  if (!policy) return setup_failure(policy.error().message);
  for (const auto& e : options.forbidden) policy->forbid(e);
  auto behind = spec_behind_proxy(spec, rules);
  if (!behind) return setup_failure(behind.error().message);

  egress::EgressProxy egress_proxy(std::move(*policy), options.rule_set);
  // Declared before the sandbox: the file outlives the run and goes when this returns.
  std::optional<RunCaBundle> ca_bundle;
  if (!rules.inject.empty()) {
    auto bundle = trust_interception_ca(egress_proxy, *behind);
    if (!bundle) return setup_failure(bundle.error().message);
    ca_bundle.emplace(std::move(*bundle));
  }

  auto launched = sandbox::Sandbox::launch(*behind);
  if (!launched) return setup_failure(launched.error().message);
  auto& sandbox = *launched;
  Registration registration(options.registry, sandbox.get());
  CancelHook hook(options.cancel, [s = sandbox.get()] { s->kill(); });
  auto listeners = sandbox->take_listeners();

  std::size_t next = 0;
  if (!rules.allow.empty()) egress_proxy.add_proxy_listener(std::move(listeners[next++]));
  for (const auto& f : rules.forwards)
    egress_proxy.add_forward_listener(std::move(listeners[next++]), f);
  egress_proxy.start();

  RunResult result{sandbox->wait(), {}};
  egress_proxy.stop();
  result.egress = egress_proxy.records();
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
