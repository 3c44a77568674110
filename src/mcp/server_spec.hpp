// What a third-party MCP server's sandbox is made of, from its config: its command, its
// environment, its data paths as binds, its egress rules, its tier's limits. Nothing else of
// the host: the sandbox's own root, /usr read-only, a fresh /work and /tmp per instance.
#pragma once

#include <map>

#include "egress/rules.hpp"
#include "policy/sections/mcp_servers_config.hpp"
#include "policy/risk.hpp"
#include "sandbox/spec.hpp"

namespace airlock::mcp {

// The limits of the server's risk tier (`tiers` empty: the defaults). The wall time is the
// session's (backend/local_session.hpp): an instance lives until it is stopped.
sandbox::Limits server_limits(const policy::McpServerConfig& server,
                              const std::map<policy::Risk, sandbox::Limits>& tiers);

// argv, env (the sandbox adds PATH, HOME, LANG), data paths (read-only unless writable).
sandbox::Spec server_spec(const policy::McpServerConfig& server, const sandbox::Limits& limits);

// Whether two configs run the same server (what `where` says is not part of it): an instance
// of a server whose config changed is stopped at configure().
bool same_server(const policy::McpServerConfig& a, const policy::McpServerConfig& b);

}  // namespace airlock::mcp
