// airlock: run AI-agent tool calls in sandboxes.
#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"airlock: run AI-agent tool calls in sandboxes"};
  app.set_version_flag("--version", "airlock 0.1.0");
  app.require_subcommand(1);
  airlock::cli::ExitStatus status;
  airlock::cli::add_run_command(app, status);
  airlock::cli::add_doctor_command(app, status);
  airlock::cli::add_scan_command(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 2, like other Unix tools (run's 125 is for sandbox setup failures).
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return status.code;
}
