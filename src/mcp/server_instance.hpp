// One running third-party MCP server: its long-lived sandbox (backend::StdioSandbox: a
// LocalSession, a GvisorStdioSession when its risk's tier runs on gVisor, or a
// SessionStdioSandbox when it runs sessions of another backend: Kubernetes), the
// stdio client on its pipes, and what it listed last. Started and initialized as a whole, or
// not at all; the gateway (gateway.cpp) decides when.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backend/local.hpp"
#include "backend/gvisor_stdio_session.hpp"
#include "backend/local_session.hpp"
#include "backend/session_backend.hpp"
#include "backend/stdio_sandbox.hpp"
#include "common/result.hpp"
#include "mcp/content_tools.hpp"
#include "mcp/listed_tool.hpp"
#include "mcp/stdio_client.hpp"
#include "pipeline/mcp_tool_caller.hpp"
#include "policy/sections/mcp_servers_config.hpp"

namespace airlock::mcp {

struct InstanceSetup {
  policy::McpServerConfig server;
  std::string owner;
  sandbox::Limits limits;
  std::vector<egress::Endpoint> forbidden;
  backend::RunningSandboxes* registry = nullptr;
  // Set: the sandbox is gVisor's, there (the server's risk's tier runs on the gvisor
  // backend). Unset: the local sandbox.
  std::optional<backend::GvisorPlace> gvisor;
  // Set (gvisor unset): each instance is the one exec of a session of its own on this backend
  // (a Kubernetes tier: a pod per instance, backend/session_stdio_sandbox.hpp), placed so.
  backend::SessionBackend* sessions = nullptr;
  backend::Placement placement;
  std::chrono::milliseconds start_timeout{30'000};
  std::size_t max_log_bytes = 64 * 1024;
  std::function<void()> on_end;            // the sandbox ended (its supervisor thread)
  std::function<void()> on_tools_changed;  // notifications/tools/list_changed (reader thread)
  // Its credentials (null: none), held until the instance is gone: then they are revoked.
  std::shared_ptr<pipeline::McpServerCredentials> credentials;
};

class ServerInstance {
 public:
  // Launches the sandbox, initializes, lists the tools. Errors ("tool_server_failed") name
  // the step; nothing of a failed start is left running.
  static Result<std::shared_ptr<ServerInstance>> start(InstanceSetup setup);
  ~ServerInstance();  // kills the sandbox and joins its threads
  ServerInstance(const ServerInstance&) = delete;
  ServerInstance& operator=(const ServerInstance&) = delete;

  // tools/list again (on list_changed); the listing replaces the last one.
  Result<std::vector<ListedTool>> relist();
  std::vector<ListedTool> tools() const;
  std::optional<ListedTool> find_tool(const std::string& name) const;

  // tools/call, or the call's content method (resources/read, prompts/get); the result's
  // server_log is what the server wrote on stderr meanwhile. A content method the server's
  // capabilities do not offer fails ("not_offered": not a crash) without asking it.
  Result<pipeline::McpToolResult> call(const pipeline::McpToolCall& call);
  // Every item of a content listing (mcp/content_tools.hpp), as the server gave them; an empty
  // array when its capabilities do not offer that kind.
  Result<nlohmann::json> list_content(const ContentListing& listing);

  void kill();
  // Set when the gateway stops it on purpose (idle, config change, shutdown), so a call that
  // fails under it is not taken for a crash.
  void mark_retired() { retired_ = true; }
  bool retired() const { return retired_; }
  // After a failed call: a server that hung up is given a moment to end on its own (so its
  // verdict is its own exit, not our kill); one that is still there, or spoke nonsense, is
  // killed.
  void end_after_failure();
  bool ended() const;
  // How the sandbox ended, from its Outcome: "exit_nonzero: the program exited with code 3".
  // Waits up to `timeout` for the end (after a kill it is quick).
  std::string end_verdict(std::chrono::milliseconds timeout) const;
  pid_t pid() const;
  // Whether its credentials (if any) expire before `t`: the gateway starts a new instance
  // rather than let a call run with a credential that runs out under it.
  bool credentials_expire_before(creds::Clock::time_point t) const;
  // When the earliest of its credentials expires (time_point::max() when it has none).
  creds::Clock::time_point credentials_expire_at() const;

 private:
  ServerInstance() = default;
  bool offers(std::string_view capability) const;  // the server's initialize capabilities name it

  // The CPU accounting of calls (docs/mcp-gateway.md, "Accounting"): the cgroup reading up to
  // which the instance's CPU was given to a call, and how many calls are in it now.
  struct Charged {
    std::optional<sandbox::CpuTime> mark;
    int calls = 0;
    bool began_once = false;  // a call has begun in it (the first takes a fresh reading)
  };
  void call_began();
  std::optional<sandbox::Usage> call_ended(std::chrono::steady_clock::time_point began);

  InstanceSetup setup_;
  std::unique_ptr<backend::StdioSandbox> session_;
  std::mutex charge_mu_;
  Charged charged_;
  std::unique_ptr<StdioClient> client_;
  mutable std::mutex mu_;
  std::vector<ListedTool> tools_;
  std::atomic<bool> retired_{false};
};

}  // namespace airlock::mcp
