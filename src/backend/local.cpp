#include "backend/local.hpp"

#include <set>

#include "egress/proxy.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::backend {
namespace {

sandbox::Outcome setup_failure(const std::string& message) {
  sandbox::Outcome o;
  o.verdict = sandbox::Verdict::setup_error;
  o.message = message;
  return o;
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

sandbox::Outcome run_local(sandbox::Spec spec, const LocalRunOptions& options) {
  auto& net = spec.network;
  if (!net.has_egress()) {
    auto launched = sandbox::Sandbox::launch(spec);
    if (!launched) return setup_failure(launched.error().message);
    Registration registration(options.registry, launched->get());
    return (*launched)->wait();
  }

  auto policy = egress::EgressPolicy::compile(net);
  if (!policy) return setup_failure(policy.error().message);
  for (const auto& e : options.forbidden) policy->forbid(e);

  // Listeners inside the sandbox: the proxy's port first, then each forward's.
  const bool proxy = !net.allow.empty();
  std::set<std::uint16_t> ports;
  if (proxy) ports.insert(egress::kProxyPort);
  for (const auto& f : net.forwards)
    if (!ports.insert(f.listen_port).second)
      return setup_failure("--forward " + std::to_string(f.listen_port) + ": port " +
                           std::to_string(f.listen_port) + " is already taken inside the sandbox" +
                           (f.listen_port == egress::kProxyPort ? " (by the egress proxy)" : ""));
  net.loopback_listeners.clear();
  if (proxy) net.loopback_listeners.push_back(egress::kProxyPort);
  for (const auto& f : net.forwards) net.loopback_listeners.push_back(f.listen_port);
  net.tcp_connect_ports = net.loopback_listeners;
  if (proxy)
    for (const auto& [name, value] : egress::proxy_environment()) spec.env.emplace(name, value);

  auto launched = sandbox::Sandbox::launch(spec);
  if (!launched) return setup_failure(launched.error().message);
  auto& sandbox = *launched;
  Registration registration(options.registry, sandbox.get());
  auto listeners = sandbox->take_listeners();

  egress::EgressProxy egress_proxy(std::move(*policy), options.rule_set);
  std::size_t next = 0;
  if (proxy) egress_proxy.add_proxy_listener(std::move(listeners[next++]));
  for (const auto& f : net.forwards) egress_proxy.add_forward_listener(std::move(listeners[next++]), f);
  egress_proxy.start();

  sandbox::Outcome outcome = sandbox->wait();
  egress_proxy.stop();
  outcome.egress = egress_proxy.records();
  return outcome;
}

}  // namespace airlock::backend

namespace airlock::backend {

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
  for (const auto& m : request.mounts) spec.binds.push_back({m.host_path, m.path_inside, !m.read_only});
  spec.network.allow = request.egress.allow;
  spec.network.forwards = request.egress.forwards;
  spec.network.resolve = request.egress.resolve;
  spec.network.limits = request.egress.limits;
  spec.stdin_source.kind = sandbox::StdinSource::Kind::bytes;
  spec.stdin_source.bytes = request.stdin_bytes;
  spec.output_mode = sandbox::OutputMode::collect;
  spec.kill_on_output_limit = true;  // past the cap the output is useless; no need to run on
  return spec;
}

LocalBackend::LocalBackend(RunningSandboxes* registry,
                           std::shared_ptr<const std::vector<egress::Endpoint>> forbidden)
    : registry_(registry), forbidden_(std::move(forbidden)) {}

sandbox::Outcome LocalBackend::run(const RunRequest& request, const RunContext& context) {
  LocalRunOptions options;
  options.rule_set = context.rule_set;
  if (forbidden_) options.forbidden = *forbidden_;
  options.registry = registry_;
  return run_local(local_spec(request), options);
}

}  // namespace airlock::backend
