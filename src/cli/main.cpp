// airlock: run AI-agent tool calls in sandboxes.
#include <string_view>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"airlock: run AI-agent tool calls in sandboxes"};
  app.set_version_flag("--version", "airlock 0.1.0");
  app.require_subcommand(1);
  airlock::cli::ExitStatus status;
  airlock::cli::TrailingArgs trailing;
  int parsed_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      trailing.present = true;
      trailing.args.assign(argv + i + 1, argv + argc);
      parsed_argc = i;
      break;
    }
  }
  airlock::cli::add_run_command(app, status, trailing);
  airlock::cli::add_doctor_command(app, status);
  airlock::cli::add_serve_command(app, status);
  airlock::cli::add_client_commands(app, status);
  airlock::cli::add_audit_command(app, status);
  airlock::cli::add_scan_command(app, status);
  airlock::cli::add_validate_command(app, status);
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 2, like other Unix tools (run's 125 is for sandbox setup failures).
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return status.code;
}
