// What a tool's code may do, as the validator sees it: which modules it may import, where it
// may write and read, which hosts it may name. Plain data with safe defaults; loaded from YAML
// or JSON by load_policy_file() (format in docs/validate.md).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "validate/host_allowlist.hpp"

namespace airlock::validate {

// What to do with a network call whose destination is not a literal.
enum class NonLiteralDestination { warn, reject };

struct Policy {
  // Modules the code may import: exact names ("json", "urllib.request") or wildcards
  // ("xml.*" = every module below xml, "*" = everything) that never match a name-only module
  // (kNameOnlyModules) nor anything below one.
  std::set<std::string> allowed_imports = default_allowed_imports();
  // Absolute directories under which files may be written / read by literal path. Relative
  // paths are resolved against workdir.
  std::vector<std::string> write_roots = {"/work", "/tmp"};
  std::vector<std::string> read_roots = {"/work", "/tmp"};
  std::string workdir = "/work";
  // Writes whose path is not a literal: rejected unless this is set.
  bool allow_dynamic_paths = false;
  // Hosts the code may name in network calls (same matching as the egress layer).
  HostAllowlist allowed_hosts;
  // A non-literal destination in a network call. Unset: reject when allowed_hosts is empty
  // (the tool has no network), warn otherwise (the egress proxy still decides at run time).
  std::optional<NonLiteralDestination> non_literal_destination;
  // The interpreter that parses the code (and will run it), as a path inside the sandbox.
  std::string interpreter = "/usr/bin/python3";
  // Larger sources are rejected without parsing.
  std::uint64_t max_source_bytes = 2ULL << 20;

  static std::set<std::string> default_allowed_imports();
  NonLiteralDestination effective_non_literal_destination() const;
};

// Modules that only an exact entry can allow: a wildcard never matches them or their
// submodules. The list of the issue, plus the C modules behind them.
const std::set<std::string>& name_only_modules();
bool is_name_only_module(std::string_view module);

// Whether the policy allows importing `module` (by exact entry, or by a wildcard).
bool import_allowed(const Policy& policy, std::string_view module);

// Reads a policy from YAML or JSON (JSON is YAML). Unknown keys are errors; every error names
// file:line and what was expected.
Result<Policy> load_policy_file(const std::string& path);
Result<Policy> parse_policy_text(std::string_view text, const std::string& origin);

}  // namespace airlock::validate
