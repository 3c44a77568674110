// Checks on the YAML text made before yaml-cpp builds a tree of it: nesting depth, anchors
// and aliases, duplicate keys. They run on the parser's events, so nothing is expanded and
// nothing deep is built.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace airlock::policy {

// One mistake in the configuration, where it is.
struct ConfigIssue {
  YAML::Mark mark;
  std::string message;
};

// Appends what is wrong with the first document of `yaml` to `issues`. Returns false when
// the tree must not be built or walked: a syntax error, nesting deeper than
// kMaxConfigNesting, an anchor or an alias. A duplicate key is reported, but reading goes on.
bool scan_document(const std::string& yaml, std::vector<ConfigIssue>& issues);

}  // namespace airlock::policy
