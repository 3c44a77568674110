#include "backend/sandbox_egress.hpp"

#include <set>

namespace airlock::backend {
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

SandboxEgress::SandboxEgress(egress::EgressPolicy policy, const egress::EgressRules& rules,
                             const std::string& rule_set)
    : proxy_(std::move(policy), rule_set),
      has_proxy_listener_(!rules.allow.empty()),
      forwards_(rules.forwards) {}

SandboxEgress::~SandboxEgress() { (void)stop(); }

Result<std::unique_ptr<SandboxEgress>> SandboxEgress::prepare(
    sandbox::Spec& spec, const egress::EgressRules& rules, const std::string& rule_set,
    const std::vector<egress::Endpoint>& forbidden) {
  auto policy = egress::EgressPolicy::compile(rules);
  if (!policy) return policy.error();
  for (const auto& e : forbidden) policy->forbid(e);
  auto behind = spec_behind_proxy(spec, rules);
  if (!behind) return behind.error();
  std::unique_ptr<SandboxEgress> egress(new SandboxEgress(std::move(*policy), rules, rule_set));
  if (!rules.inject.empty()) {
    auto bundle = trust_interception_ca(egress->proxy_, *behind);
    if (!bundle) return bundle.error();
    egress->ca_bundle_.emplace(std::move(*bundle));
  }
  spec = std::move(*behind);
  return egress;
}

void SandboxEgress::start(std::vector<UniqueFd> listeners) {
  std::size_t next = 0;
  if (has_proxy_listener_) proxy_.add_proxy_listener(std::move(listeners[next++]));
  for (const auto& f : forwards_) proxy_.add_forward_listener(std::move(listeners[next++]), f);
  proxy_.start();
}

std::vector<egress::EgressRecord> SandboxEgress::stop() {
  if (!stopped_) {
    stopped_ = true;
    proxy_.stop();
  }
  return proxy_.records();
}

}  // namespace airlock::backend
