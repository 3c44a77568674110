// What the gateway's listings become in Airlock's registry: each listed tool that the
// server's tools.allow admits, pinned on first sight, is a ToolConfig "<server>.<tool>" with
// the server's risk (or its override), input/output schemas from the listing (compiled, so a
// hostile schema disables the tool) and annotations. A listing that differs from the pin
// disables that tool until an admin approves it (`airlock mcp pins approve`).
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"
#include "mcp/listed_tool.hpp"
#include "mcp/pin_store.hpp"
#include "policy/config.hpp"

namespace airlock::mcp {

struct Admission {
  std::vector<policy::ToolConfig> tools;  // admitted, ready to add to a Config
  // One line per listed tool that is not exposed, and why: not allowed by tools.allow, a name
  // outside the tool name rule, a pin mismatch ("tool files.read_file changed since it was
  // pinned on ...: disabled until approved"), a schema that does not compile.
  std::vector<std::string> refused;
};

// Pins what is new (recording it), compares the rest, and builds the admitted tools.
Result<Admission> admit_listing(const policy::McpServerConfig& server,
                                const std::vector<ListedTool>& listing, PinStore& pins);

// Whether `tool` as listed now matches its approved pin (Gateway's `admitted` check).
Status check_pin(const std::string& server, const ListedTool& tool, PinStore& pins);

// `config` with the admitted tools of every server added (their names do not clash with
// configured tools: the config loader refuses a tool name containing a server's "name."),
// and a version that covers them.
policy::Config with_mcp_tools(const policy::Config& config, const std::vector<policy::ToolConfig>& tools);

}  // namespace airlock::mcp
