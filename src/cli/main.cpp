// airlock: run AI-agent tool calls in sandboxes. This program holds `run` and `doctor`; the
// other commands live in airlock-tools and airlock-serve, which it executes (cli_main.hpp says
// why).
#include <string_view>

#include "cli/cli_main.hpp"

namespace {

bool is_tools_command(std::string_view name) {
  for (const auto& c : airlock::cli::kToolsCommands)
    if (name == c.name) return true;
  return false;
}

// `airlock run --audit PATH ...`: the audit log is airlock-tools' (SQLite, OpenSSL).
bool is_run_with_audit(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "run") return false;
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") return false;
    if (arg == "--audit" || arg.rfind("--audit=", 0) == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc >= 2 && is_tools_command(argv[1])) || is_run_with_audit(argc, argv))
    return airlock::cli::exec_sibling("airlock-tools", argv);
  return airlock::cli::run_cli(argc, argv, [](CLI::App& app, airlock::cli::ExitStatus& status,
                                              const airlock::cli::TrailingArgs& trailing) {
    airlock::cli::add_run_command(app, status, trailing);
    airlock::cli::add_doctor_command(app, status);
    airlock::cli::add_serve_command(app, status);
    airlock::cli::add_mcp_command(app, status);
    for (const auto& c : airlock::cli::kToolsCommands)
      app.add_subcommand(c.name, c.summary);  // listed only: main() executes airlock-tools for them
  });
}
