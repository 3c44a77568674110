// How the execute stage calls a tool of a third-party MCP server (mcpServers in the config):
// the gateway (src/mcp/gateway.hpp) implements this; the pipeline knows only this interface.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "common/cancel_signal.hpp"
#include "common/result.hpp"
#include "creds/lease.hpp"
#include "egress/rules.hpp"
#include "pipeline/invocation_control.hpp"

namespace airlock::pipeline {

// The credentials a server instance runs with (mcpServers[].credentials): leased for its
// owner when it starts, and revoked when the last holder lets go of them (the instance, once
// its sandbox has ended). The values stay in memory only and are redacted from every call's
// result.
struct McpServerCredentials {
  std::map<std::string, std::string> env;      // added to the server's environment
  std::vector<egress::HeaderInjection> inject;  // headers its egress proxy sets
  std::vector<std::string> values;             // what each call's result is redacted of
  struct Use {
    creds::Lease lease;
    std::string hmac_sha256;  // of the value, for the audit record of each call
  };
  std::vector<Use> uses;
  creds::Clock::time_point expires_at = creds::Clock::time_point::max();  // the earliest lease's
  std::function<void()> revoke;  // called once, by the destructor

  McpServerCredentials() = default;
  McpServerCredentials(const McpServerCredentials&) = delete;
  McpServerCredentials& operator=(const McpServerCredentials&) = delete;
  ~McpServerCredentials();  // revokes, then wipes the values
};

// Leases a server's credentials for the call's owner; the gateway calls it only when it
// starts an instance. Error codes: credential_denied, credential_unavailable.
using McpCredentialLeaser = std::function<Result<std::shared_ptr<McpServerCredentials>>()>;

struct McpToolCall {
  std::string invocation_id;
  std::string server;       // mcpServers[].name
  std::string remote_tool;  // the server's own name for the tool ("read_file")
  nlohmann::json arguments = nlohmann::json::object();
  // "": tools/call of remote_tool with arguments. "resources/read", "prompts/get": that
  // request, with `arguments` as its params (a content tool, mcp/content_tools.hpp).
  std::string method;
  // Whose server process runs it: two owners never share one. `agent "<principal>"`, with
  // ` for user "<issuer>" "<sub>"` after it when the call is on behalf of a user (each name
  // quoted as JSON); `user "<issuer>" "<sub>"` for a person calling with their own token.
  std::string owner;
  std::chrono::milliseconds timeout{30'000};
  CancelSignal* cancel = nullptr;                    // may be null
  std::function<void(const Progress&)> progress;     // may be empty
  McpCredentialLeaser lease_credentials;             // empty: the server has none
  // Set, whether the call succeeded or not, to what its instance used meanwhile: the call's
  // wall time and the CPU of the instance's sandbox (its cgroup) while calls were in it, each
  // CPU-second given to exactly one call (docs/mcp-gateway.md, "Accounting"). Left null when
  // the call reached no instance, or the host cannot measure the sandbox's CPU. May be null.
  std::optional<sandbox::Usage>* usage = nullptr;
};

// The server's CallToolResult (or, for a content method, its result object as it is).
struct McpToolResult {
  nlohmann::json content = nlohmann::json::array();
  std::optional<nlohmann::json> method_result;  // resources/read, prompts/get
  std::optional<nlohmann::json> structured_content;
  bool is_error = false;
  std::string server_log;  // what the server wrote on stderr meanwhile (capped), for the log
  // The instance's credentials: their values (to redact from what the call returns) and
  // leases (for its audit record). Empty when it has none.
  std::vector<std::string> credential_values;
  std::vector<McpServerCredentials::Use> credential_uses;
};

class McpToolCaller {
 public:
  virtual ~McpToolCaller() = default;
  // Error codes: "credential_denied", "credential_unavailable" (its credentials could not be
  // leased for the owner), "tool_server_failed" (could not start, crashed, closed its pipe, spoke
  // nonsense), "tool_disabled" (its listing changed since it was pinned), "timeout",
  // "cancelled", "stopped" (the gateway is shutting down). The message says what and why.
  virtual Result<McpToolResult> call(const McpToolCall& call) = 0;
};

}  // namespace airlock::pipeline
