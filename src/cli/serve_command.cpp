// airlock serve --config FILE: the daemon.
#include "cli/commands.hpp"
#include "server/daemon.hpp"

namespace airlock::cli {

void add_serve_command(CLI::App& app, ExitStatus& status) {
  auto config = std::make_shared<std::string>();
  auto listen = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("serve", "Run the daemon: the tool registry, the pipeline and the HTTP API");
  cmd->add_option("--config", *config, "The configuration file (YAML, see docs/config.md)")->required();
  cmd->add_option("--listen", *listen, "HOST:PORT, overriding server.listen (port 0: any free port)");
  cmd->callback([config, listen, &status] { status.code = server::serve(*config, *listen); });
}

}  // namespace airlock::cli
