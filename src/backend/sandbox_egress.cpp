#include "backend/sandbox_egress.hpp"

#include <set>

namespace airlock::backend {
namespace {

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

Result<sandbox::Spec> SandboxEgress::behind_proxy(const sandbox::Spec& spec,
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

SandboxEgress::SandboxEgress(egress::EgressPolicy policy, const egress::EgressRules& rules,
                             const std::string& rule_set)
    : proxy_(std::move(policy), rule_set),
      has_proxy_listener_(!rules.allow.empty()),
      forwards_(rules.forwards) {}

SandboxEgress::~SandboxEgress() { (void)stop(); }

Result<std::unique_ptr<SandboxEgress>> SandboxEgress::with_policy(
    const egress::EgressRules& rules, const std::string& rule_set,
    const std::vector<egress::Endpoint>& forbidden) {
  auto policy = egress::EgressPolicy::compile(rules);
  if (!policy) return policy.error();
  for (const auto& e : forbidden) policy->forbid(e);
  return std::unique_ptr<SandboxEgress>(new SandboxEgress(std::move(*policy), rules, rule_set));
}

Result<std::unique_ptr<SandboxEgress>> SandboxEgress::for_call(
    const egress::EgressRules& rules, const std::string& rule_set,
    const std::vector<egress::Endpoint>& forbidden) {
  if (!rules.inject.empty())
    return Error::make("egress", "header injection needs the run's CA bundle bound in at launch");
  return with_policy(rules, rule_set, forbidden);
}

Result<std::unique_ptr<SandboxEgress>> SandboxEgress::prepare(
    sandbox::Spec& spec, const egress::EgressRules& rules, const std::string& rule_set,
    const std::vector<egress::Endpoint>& forbidden) {
  auto egress = with_policy(rules, rule_set, forbidden);
  if (!egress) return egress.error();
  auto behind = behind_proxy(spec, rules);
  if (!behind) return behind.error();
  if (!rules.inject.empty()) {
    auto bundle = trust_interception_ca((*egress)->proxy_, *behind);
    if (!bundle) return bundle.error();
    (*egress)->ca_bundle_.emplace(std::move(*bundle));
  }
  spec = std::move(*behind);
  return std::move(*egress);
}

void SandboxEgress::start(std::vector<UniqueFd> listeners) {
  // Fail closed: listeners of another shape than these rules' are closed here (the sandbox's
  // connections are refused), never served with the wrong protocol or forward.
  if (listeners.size() != (has_proxy_listener_ ? 1 : 0) + forwards_.size()) return;
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
