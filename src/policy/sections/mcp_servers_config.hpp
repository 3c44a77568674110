// The config's `mcpServers` section (policy/config_mcp_servers.cpp) and `server.mcp`: third-
// party MCP servers that Airlock runs in its sandbox (the gateway, docs/mcp.md), and the
// daemon's own MCP endpoint.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "egress/rules.hpp"
#include "policy/sections/backends_config.hpp"
#include "policy/sections/credentials_config.hpp"
#include "policy/risk.hpp"

namespace airlock::policy {

// A host directory a server sees: "/srv/shared-docs:/data" (read-only) or "...:/data:rw".
struct McpDataPath {
  std::string host_path;
  std::string path_inside;
  bool writable = false;
};

struct McpServerConfig {
  std::string name;                  // a tool-name segment: its tools are "<name>.<tool>"
  std::vector<std::string> command;  // argv inside the sandbox (argv[0] looked up in PATH)
  std::vector<McpDataPath> data_paths;
  egress::EgressRules network;       // default: none
  Risk risk = Risk::medium;          // of its tools, unless overridden
  std::vector<std::string> tools_allow;     // globs on the server's tool names; empty: all
  std::map<std::string, Risk> risk_overrides;  // server tool name -> risk
  std::map<std::string, std::string> env;
  // Leased for the instance's owner when an instance starts (as tools[].credentials are per
  // call), given as its environment, revoked when it stops (docs/mcp-gateway.md).
  std::vector<CredentialSpec> credentials;
  std::chrono::milliseconds idle_timeout{5 * 60'000};
  std::chrono::milliseconds call_timeout{60'000};  // per tools/call (the tier's timeout caps it)
  // From the sandbox's start to the server's answers to initialize and its first tools/list:
  // a server silent past it is ended and the call fails (else only the tier's wall time would
  // bound it).
  std::chrono::milliseconds start_timeout{30'000};
  // Instances of this server at once (one per owner); past it, an idle one is stopped to make
  // room, else the call is refused (quota_exceeded, quota "mcpServerInstances").
  unsigned max_instances = 16;
  // Where its pods run when its risk's tier runs on Kubernetes (the image must hold its
  // command); the local sandbox and gVisor ignore it.
  ToolPlacement placement;
  std::string where;                 // "file:line"
};

// Where a tool of the registry comes from when an MCP server provides it.
struct McpToolSource {
  std::string server;       // mcpServers[].name
  std::string remote_name;  // the server's name for it
  std::string pin_sha256;   // of its name, description and schemas as pinned
  // "": a tool the server lists (tools/call). "resources/read" or "prompts/get": one of the
  // server's content tools, which Airlock adds to read its resources and get its prompts
  // (mcp/content_tools.hpp); they are not listed as tools, and their arguments are the
  // method's params.
  std::string method;
  bool is_content() const { return !method.empty(); }
};

// server.mcp: the daemon's Streamable HTTP endpoint at /mcp.
struct McpEndpointConfig {
  bool enabled = true;
  // Origins a browser may send (DNS rebinding); a request with another Origin is refused 403.
  // A request without Origin (not a browser) is let through to authentication.
  std::vector<std::string> allowed_origins;
  // The resource identifier (RFC 9728) of /mcp: "https://airlock.example.com/mcp". Empty:
  // http(s)://<listen address>/mcp.
  std::string resource;
  // How long tools/list and GET /v1/tools wait, at start, for every configured MCP server's
  // first listing (or failure) before answering without the servers still pending (named).
  std::chrono::milliseconds first_listing_wait{10'000};
  std::size_t tools_page_size = 100;  // tools/list entries per page (cursor pagination)
};

}  // namespace airlock::policy
