// The static validator's policy for model-written Python (docs/validate.md): a python-code
// tool's and a session template's code cells are checked by the same rules.
#pragma once

#include <string>

#include "common/result.hpp"
#include "egress/rules.hpp"
#include "policy/sections/validation_config.hpp"
#include "validate/policy.hpp"

namespace airlock::pipeline {

// `validation`'s imports, roots and hosts; the hosts the code may name are its validation list
// (any port) and its egress rules (with their ports), matched as egress matches them.
// `interpreter` is the Python inside the sandbox ("python3": /usr/bin/python3).
Result<validate::Policy> code_policy(const policy::ValidationConfig& validation, const egress::EgressRules& network,
                                     const std::string& interpreter);

}  // namespace airlock::pipeline
