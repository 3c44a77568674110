// airlock mcp ...: MCP. Its subcommands register themselves on this parent (pins here; the
// stdio server adds its own options and callback to the same command).
#include <iostream>

#include "cli/commands.hpp"

namespace airlock::cli {

CLI::App& add_mcp_command(CLI::App& app, ExitStatus& status) {
  auto* mcp = app.add_subcommand(kMcpCommand.name, kMcpCommand.summary);
  add_mcp_pins_command(*mcp, status);
  // Until the stdio server takes the bare command: a subcommand is needed.
  mcp->callback([mcp, &status] {
    if (!mcp->get_subcommands().empty()) return;
    std::cerr << "airlock mcp: expected a subcommand (pins); see airlock mcp --help\n";
    status.code = 2;
  });
  return *mcp;
}

}  // namespace airlock::cli
