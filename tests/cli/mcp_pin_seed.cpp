// The gateway's pinning without a server, for tests/cli/mcp_pins_cli_test.sh: admits a
// listing of one tool to the pins in DB, as the gateway would when SERVER lists it.
//   mcp_pin_seed DB SERVER TOOL DESCRIPTION
// Prints each admitted tool's name and each refusal; exit 0 when the listing was handled, 1
// when the store failed.
#include <iostream>

#include "mcp/catalog.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: mcp_pin_seed DB SERVER TOOL DESCRIPTION\n";
    return 2;
  }
  auto pins = airlock::mcp::PinStore::open(argv[1]);
  if (!pins) {
    std::cerr << pins.error().message << "\n";
    return 1;
  }
  airlock::policy::McpServerConfig server;
  server.name = argv[2];
  airlock::mcp::ListedTool tool;
  tool.name = argv[3];
  tool.description = argv[4];
  tool.input_schema = {{"type", "object"}};
  auto admitted = airlock::mcp::admit_listing(server, {tool}, **pins);
  if (!admitted) {
    std::cerr << admitted.error().message << "\n";
    return 1;
  }
  for (const auto& t : admitted->tools)
    std::cout << "admitted " << t.name << " " << t.mcp->pin_sha256 << "\n";
  for (const auto& r : admitted->refused) std::cout << "refused " << r << "\n";
  return 0;
}
