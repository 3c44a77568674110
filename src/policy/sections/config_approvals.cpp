// tools[].approval: {approvers, timeout} (policy/sections/approvals_config.hpp).
#include "policy/config_reader.hpp"

namespace airlock::policy::detail {

void read_approval(Reader& r, const YAML::Node& n, const std::string& what, ApprovalPolicy& out) {
  r.expect_map(n, what);
  r.only_keys(n, what, {"approvers", "timeout"});
  r.field(n, "approvers", [&](const YAML::Node& v) {
    auto count = r.unsigned_int(v, what + ".approvers", kMaxApprovers);
    if (count == 0) fail(v, what + ".approvers: at least 1 (a critical tool always needs a human)");
    out.approvers = static_cast<std::uint32_t>(count);
  });
  r.field(n, "timeout", [&](const YAML::Node& v) {
    auto timeout = r.duration(v, what + ".timeout");
    if (timeout < kMinApprovalTimeout || timeout > kMaxApprovalTimeout)
      fail(v, what + ".timeout: between 1s and 7d");
    out.timeout = timeout;
  });
}

}  // namespace airlock::policy::detail
