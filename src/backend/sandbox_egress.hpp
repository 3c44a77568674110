// The egress proxy of one sandbox, as run_local() and LocalSession compose it: prepared before
// the launch (it changes the spec: listeners, connect ports, the proxy's environment, the CA
// bundle for header injection), started on the launched sandbox's listeners, stopped when
// the sandbox has ended.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/ca_bundle.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "egress/policy.hpp"
#include "egress/proxy.hpp"
#include "egress/rules.hpp"
#include "sandbox/spec.hpp"

namespace airlock::backend {

// What the proxy needs is in two parts, so that a warm tool's child can be prepared ahead
// of its call (docs/warm-start.md): the sandbox's shape, known per tool (the listeners, the
// ports it may connect to, the proxy's environment: behind_proxy), and the policy of one
// call (its rules, the forbidden endpoints, the rule set named in denials: for_call), bound
// when the call is handed its sandbox. prepare() is both at once, for a cold run.
class SandboxEgress {
 public:
  // For rules with egress (rules.has_egress()): compiles the policy (with `forbidden` never
  // reachable) and rewrites `spec` to run behind the proxy. Errors name the step.
  static Result<std::unique_ptr<SandboxEgress>> prepare(
      sandbox::Spec& spec, const egress::EgressRules& rules, const std::string& rule_set,
      const std::vector<egress::Endpoint>& forbidden);

  // The spec as it runs behind the proxy of `rules`: listeners for the proxy's port (first)
  // and each forward's, the only ports it may connect to, and the proxy's environment.
  // Depends on the rules' forwards and on whether they allow anything, nothing else.
  static Result<sandbox::Spec> behind_proxy(const sandbox::Spec& spec,
                                            const egress::EgressRules& rules);
  // One call's proxy for a sandbox already shaped by behind_proxy(…, rules): its policy
  // only. Header injection is refused: its CA bundle is bound into the sandbox at launch.
  static Result<std::unique_ptr<SandboxEgress>> for_call(
      const egress::EgressRules& rules, const std::string& rule_set,
      const std::vector<egress::Endpoint>& forbidden);

  // The launched sandbox's listeners (Sandbox::take_listeners), in the spec's order.
  void start(std::vector<UniqueFd> listeners);
  // After the sandbox has ended: closes the proxy and returns every attempt it saw.
  std::vector<egress::EgressRecord> stop();

  SandboxEgress(const SandboxEgress&) = delete;
  SandboxEgress& operator=(const SandboxEgress&) = delete;
  ~SandboxEgress();  // stops the proxy; the CA bundle's file goes with it

 private:
  SandboxEgress(egress::EgressPolicy policy, const egress::EgressRules& rules,
                const std::string& rule_set);
  static Result<std::unique_ptr<SandboxEgress>> with_policy(
      const egress::EgressRules& rules, const std::string& rule_set,
      const std::vector<egress::Endpoint>& forbidden);

  egress::EgressProxy proxy_;
  bool has_proxy_listener_;
  std::vector<egress::PortForward> forwards_;
  std::optional<RunCaBundle> ca_bundle_;
  bool stopped_ = false;
};

}  // namespace airlock::backend
