// airlock mcp --config FILE [--key KEY]: Airlock's MCP server on stdin and stdout, for MCP
// clients that launch their servers. Like `airlock serve`, it becomes `airlock-serve` (the
// daemon's program), which builds the daemon without listening. The key travels in the
// environment, not in the daemon's argv, which other users can read in /proc.
// Its subcommands (`mcp pins`) register on the same command.
#include <cstdlib>
#include <iostream>

#include "cli/cli_main.hpp"
#include "cli/commands.hpp"

namespace airlock::cli {
namespace {

void serve_stdio(const std::string& config, std::string key, ExitStatus& status) {
  if (key.empty())
    if (const char* from_env = std::getenv("AIRLOCK_API_KEY")) key = from_env;
  if (config.empty()) {
    std::cerr << "airlock mcp: --config is required (or a subcommand: pins); see airlock mcp --help\n";
    status.code = 2;
    return;
  }
  if (key.empty()) {
    std::cerr << "airlock mcp: no API key: give --key or set AIRLOCK_API_KEY\n";
    status.code = 2;
    return;
  }
  ::setenv("AIRLOCK_API_KEY", key.c_str(), 1);
  std::vector<std::string> args = {"airlock-serve", "--config", config, "--mcp-stdio"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  exec_sibling("airlock-serve", argv.data());
  status.code = 1;  // reached only when the daemon could not be started
}

}  // namespace

CLI::App& add_mcp_command(CLI::App& app, ExitStatus& status) {
  auto config = std::make_shared<std::string>();
  auto key = std::make_shared<std::string>();
  auto* mcp = app.add_subcommand(kMcpCommand.name, kMcpCommand.summary);
  mcp->add_option("--config", *config, "The configuration file (YAML, see docs/config.md)");
  mcp->add_option("--key", *key, "The API key that decides the principal (default: $AIRLOCK_API_KEY)");
  add_mcp_pins_command(*mcp, status);
  mcp->callback([mcp, config, key, &status] {
    if (!mcp->get_subcommands().empty()) return;  // `mcp pins ...` ran
    serve_stdio(*config, *key, status);
  });
  return *mcp;
}

}  // namespace airlock::cli
