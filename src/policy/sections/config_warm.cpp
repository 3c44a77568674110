// tools[].warm: {recycleCalls, recycleAfter} (policy/sections/warm_config.hpp), and its checks against
// the rest of the tool: only a Python tool (a module, or python-code) has a template (with or
// without network rules: a warm call's egress proxy is bound at its hand-over).
#include "policy/config_reader.hpp"

namespace airlock::policy::detail {

void read_warm(Reader& r, const YAML::Node& n, const std::string& what, WarmPolicy& out) {
  if (n.IsNull()) return;  // `warm:` alone: the defaults
  r.expect_map(n, what);
  r.only_keys(n, what, {"recycleCalls", "recycleAfter"});
  r.field(n, "recycleCalls", [&](const YAML::Node& v) {
    auto calls = r.unsigned_int(v, what + ".recycleCalls", kMaxWarmRecycleCalls);
    if (calls == 0) fail(v, what + ".recycleCalls: at least 1");
    out.recycle_calls = static_cast<std::uint32_t>(calls);
  });
  r.field(n, "recycleAfter", [&](const YAML::Node& v) {
    auto after = r.duration(v, what + ".recycleAfter");
    if (after < kMinWarmRecycleAfter || after > kMaxWarmRecycleAfter)
      fail(v, what + ".recycleAfter: between 1s and 24h");
    out.recycle_after = after;
  });
}

std::string warm_conflict(const ToolConfig& t) {
  if (t.runtime.kind == ToolRuntime::Kind::command)
    return "only a runtime.python or runtime.python-code tool has a warm template (a command is not Python)";
  return "";
}

void check_warm_templates(Reader& r, const YAML::Node& tools, const Config& c) {
  std::size_t warm = 0;
  for (const auto& t : c.tools) warm += t.warm.has_value();
  if (warm > c.server.max_warm_templates)
    r.error(tools, "tools: " + std::to_string(warm) + " tools have warm: but server.maxWarmTemplates is " +
                       std::to_string(c.server.max_warm_templates) +
                       " (one template runs per warm tool)");
}

}  // namespace airlock::policy::detail
