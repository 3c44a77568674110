// The hosts a tool's code may name in network calls, matched exactly as the egress layer
// matches its rules (one implementation: netrules/rules.hpp, syntax in docs/egress.md):
//   "api.example.com"   that name (case, a trailing dot and IDNA spelling ignored)
//   "*.example.com"     any name below example.com, not example.com itself
//   "203.0.113.7"       that address; "10.0.0.0/8" any address in the block
// An entry may end in ":PORT" (or ":*"); without one it allows every port. A name never
// matches an address entry and an address never matches a name entry; numeric forms that
// resolvers accept (`2130706433`, `0x7f.1`, `127.1`) are read as the address they mean.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "netrules/rules.hpp"

namespace airlock::validate {

class HostAllowlist {
 public:
  HostAllowlist() = default;
  // Each entry as above; an entry that is none of those forms is an error naming it.
  static Result<HostAllowlist> parse(const std::vector<std::string>& entries);
  // One rule as the egress layer holds it (a tool's network.allow): a host and its port
  // (nullopt: any).
  Status add(const std::string& host, std::optional<std::uint16_t> port);

  // Whether code may name `host`; on `port` when the code says which (nullopt: it does not,
  // and the host alone decides).
  bool allows(std::string_view host, std::optional<std::uint16_t> port = std::nullopt) const;
  bool empty() const { return rules_.empty(); }
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  std::vector<std::string> entries_;  // as written, or "[host]:port" for an added rule
  std::vector<netrules::HostRule> rules_;
};

}  // namespace airlock::validate
