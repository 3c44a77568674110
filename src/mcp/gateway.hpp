// The gateway: third-party MCP servers (the config's mcpServers) run in Airlock's sandbox,
// one long-lived sandbox per (server, owner), so that two users, or two agents acting for one
// user, never share a server process. Started on first use, stopped after idleTimeout and at
// shutdown, restarted with backoff after a crash, bounded in number (per server and in total).
// Each start lists the server's tools (and again, on a thread of its own, on its
// notifications/tools/list_changed) and hands the listing to `listed`, which pins it
// (mcp/catalog.hpp) and publishes the admitted tools (the daemon).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/gvisor_stdio_session.hpp"
#include "backend/local.hpp"
#include "backend/session_backend.hpp"
#include "common/result.hpp"
#include "mcp/content_tools.hpp"
#include "mcp/listed_tool.hpp"
#include "pipeline/mcp_tool_caller.hpp"
#include "policy/config.hpp"

namespace airlock::mcp {

struct GatewayOptions {
  backend::RunningSandboxes* registry = nullptr;  // every server sandbox is registered here
  // Endpoints a server may never reach (the daemon's own), as for tool runs.
  std::shared_ptr<const std::vector<egress::Endpoint>> forbidden;
  // Each listing of a server's tools, from any owner's instance: at its start and on
  // notifications/tools/list_changed. Called from the gateway's threads, never under a lock
  // a call() holds. The callee decides what is admitted (pinning).
  std::function<void(const std::string& server, const std::vector<ListedTool>& tools)> listed;
  // Whether a tool may be called now (the pin of what this instance listed is approved).
  // Empty: all may. A call of a tool it refuses ends with code "tool_disabled".
  std::function<Status(const std::string& server, const ListedTool& tool)> admitted;
  // The limits of each risk tier (a server's sandbox has those of its `risk`, but for the
  // wall time: an instance lives until its idle timeout). Empty: policy::default_tiers().
  std::map<policy::Risk, sandbox::Limits> tiers;
  std::size_t max_log_bytes = 64 * 1024;   // of a server's stderr kept per call
  // The risk tiers that run on gVisor, and where (docs/mcp-gateway.md, "Servers on gVisor"):
  // a server whose `risk` is one of them runs each instance, the listing one too, in a gVisor
  // sandbox there. Any other tier's servers run in the local sandbox, but for...
  std::map<policy::Risk, backend::GvisorPlace> gvisor_tiers;
  // ...the tiers that run sessions of another backend (Kubernetes: docs/mcp-gateway.md,
  // "Servers on Kubernetes"): each instance is the one exec of a session of its own there...
  std::map<policy::Risk, backend::SessionBackend*> session_tiers;
  // ...and the tiers whose servers cannot run here, with why (a Kubernetes tier; a tier whose
  // backend is unavailable): their instances are refused, the listing one too, rather than
  // run in a weaker sandbox than the tier asks for.
  std::map<policy::Risk, std::string> refused_tiers;
};

class Gateway : public pipeline::McpToolCaller {
 public:
  explicit Gateway(GatewayOptions options);
  ~Gateway() override;  // shutdown()
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // The servers (from a config, at start and on each reload; the gateway keeps its own copy).
  // Instances of servers removed or changed are stopped; the others keep running.
  void configure(const std::vector<policy::McpServerConfig>& servers);
  // Instances at once, all servers together (server.maxMcpServerInstances; each server's own
  // cap is its maxInstances). Past a cap an idle instance is stopped to make room, else the
  // call fails with code "instances_full". Lowered: idle instances over it are stopped.
  void set_max_instances(std::size_t total);

  // Starts the server (owner "airlock listing", its own sandbox, stopped after idleTimeout
  // like any) if it is not running, and returns what it lists; `listed` is told too.
  Result<std::vector<ListedTool>> list_tools(const std::string& server);
  // The same instance's resources, resource templates or prompts (every page), as the server
  // gave them; empty when it does not offer that kind (mcp/content_tools.hpp).
  Result<nlohmann::json> list_content(const std::string& server, const ContentListing& listing);

  // Runs one tools/call in the (server, owner) instance, starting it if needed.
  Result<pipeline::McpToolResult> call(const pipeline::McpToolCall& call) override;

  // Running instances, as "server owner" strings (tests, metrics).
  std::vector<std::string> running() const;
  // Stops every instance and refuses new calls ("stopped"); nothing is left behind.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace airlock::mcp
