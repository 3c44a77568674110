#include "pipeline/code_policy.hpp"

namespace airlock::pipeline {

Result<validate::Policy> code_policy(const policy::ValidationConfig& validation, const egress::EgressRules& network,
                                     const std::string& interpreter) {
  validate::Policy p;
  for (const auto& m : validation.allow_imports) p.allowed_imports.insert(m);
  if (!validation.write_roots.empty()) p.write_roots = validation.write_roots;
  if (!validation.read_roots.empty()) p.read_roots = validation.read_roots;
  p.allow_dynamic_paths = validation.allow_dynamic_paths;
  p.interpreter = interpreter.find('/') == std::string::npos ? "/usr/bin/" + interpreter : interpreter;
  auto allow = validate::HostAllowlist::parse(validation.allow_hosts);
  if (!allow) return allow.error();
  for (const auto& rule : network.allow)
    if (auto added = allow->add(rule.host, rule.port); !added) return added.error();
  p.allowed_hosts = std::move(*allow);
  return p;
}

}  // namespace airlock::pipeline
