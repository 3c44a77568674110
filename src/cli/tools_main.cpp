// airlock-tools: every airlock command, with every library they need. `airlock` executes it
// for validate, scan, audit, call, tools, policy, secrets, mcp and run --audit (cli_main.hpp says
// why); it also works when called directly.
#include "cli/cli_main.hpp"

int main(int argc, char** argv) {
  return airlock::cli::run_cli(argc, argv, [](CLI::App& app, airlock::cli::ExitStatus& status,
                                              const airlock::cli::TrailingArgs& trailing) {
    airlock::cli::add_run_command(app, status, trailing);
    airlock::cli::add_doctor_command(app, status);
    airlock::cli::add_serve_command(app, status);
    airlock::cli::add_client_commands(app, status);
    airlock::cli::add_audit_command(app, status);
    airlock::cli::add_scan_command(app, status);
    airlock::cli::add_validate_command(app, status);
    airlock::cli::add_policy_command(app, status);
    airlock::cli::add_secrets_command(app, status);
    airlock::cli::add_mcp_command(app, status);
    airlock::cli::add_approvals_command(app, status);
    airlock::cli::add_session_command(app, status, trailing);
  });
}
