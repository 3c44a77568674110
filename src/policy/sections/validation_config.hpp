// `validation`: what the static validator allows model-written Python (docs/validate.md), for a
// python-code tool (tools[].validation) and for a session's code cells (sessionTemplates[].validation).
#pragma once

#include <string>
#include <vector>

namespace airlock::policy {

struct ValidationConfig {
  std::vector<std::string> allow_imports;
  std::vector<std::string> allow_hosts;
  std::vector<std::string> write_roots;   // default: the work dir and /tmp
  std::vector<std::string> read_roots;
  bool allow_dynamic_paths = false;
};

}  // namespace airlock::policy
