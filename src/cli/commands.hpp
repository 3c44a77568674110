// Each subcommand registers itself on the root CLI11 app; the callback it installs runs the
// command and stores the process exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace airlock::cli {

// A usage or configuration error a command throws: said on stderr, exit 2.
struct UsageError {
  std::string message;
};

struct ExitStatus {
  int code = 0;
};

// What follows the first "--" on the command line, verbatim (`airlock run ... -- CMD ARGS`).
// main() cuts it off before CLI11 parses the rest, so no option can swallow the separator.
struct TrailingArgs {
  bool present = false;
  std::vector<std::string> args;
};

// The commands airlock-tools carries, with their one-line summaries: both programs' --help
// show them (`airlock` lists them and executes airlock-tools for them, main.cpp).
struct ToolsCommand {
  const char* name;
  const char* summary;
};
inline constexpr ToolsCommand kValidateCommand{"validate", "Check generated Python statically before it runs"};
inline constexpr ToolsCommand kScanCommand{"scan", "Find PII and secrets; report them or redact them"};
inline constexpr ToolsCommand kAuditCommand{"audit", "Inspect, verify and prove the tamper-evident audit log"};
inline constexpr ToolsCommand kCallCommand{"call", "Invoke a tool on the daemon and print the response"};
inline constexpr ToolsCommand kToolsListCommand{"tools", "Tools on the daemon"};
inline constexpr ToolsCommand kPolicyCommand{"policy", "Check what the access policy allows a call, offline"};
inline constexpr ToolsCommand kSecretsCommand{"secrets", "Set, list and remove the secrets credentials are given from"};
inline constexpr ToolsCommand kMcpCommand{"mcp", "Serve Airlock's tools over MCP on stdin and stdout; the gateway's tool pins"};
inline constexpr ToolsCommand kApprovalsCommand{"approvals", "List, show, approve and deny critical calls waiting on the daemon"};
inline constexpr ToolsCommand kSessionCommand{"session", "Create, list, exec in, end, snapshot and fork sessions on the daemon; run code cells; put, get, list and remove their files"};
inline constexpr ToolsCommand kToolsCommands[] = {kValidateCommand, kScanCommand,      kAuditCommand,
                                                  kCallCommand,     kToolsListCommand, kPolicyCommand,
                                                  kSecretsCommand,  kMcpCommand,       kApprovalsCommand,
                                                  kSessionCommand};

void add_run_command(CLI::App& app, ExitStatus& status, const TrailingArgs& trailing);
void add_doctor_command(CLI::App& app, ExitStatus& status);
void add_serve_command(CLI::App& app, ExitStatus& status);
void add_client_commands(CLI::App& app, ExitStatus& status);
void add_audit_command(CLI::App& app, ExitStatus& status);
void add_scan_command(CLI::App& app, ExitStatus& status);
void add_validate_command(CLI::App& app, ExitStatus& status);
void add_policy_command(CLI::App& app, ExitStatus& status);
void add_secrets_command(CLI::App& app, ExitStatus& status);
void add_approvals_command(CLI::App& app, ExitStatus& status);
void add_session_command(CLI::App& app, ExitStatus& status, const TrailingArgs& trailing);
// `session code` and `session interrupt`, on the `session` command.
void add_session_code_commands(CLI::App& session, ExitStatus& status);
// `mcp`, with its subcommands; returned so that others can be added to it.
CLI::App& add_mcp_command(CLI::App& app, ExitStatus& status);
// `mcp pins list|approve`, on the `mcp` command.
void add_mcp_pins_command(CLI::App& mcp, ExitStatus& status);

}  // namespace airlock::cli
