#include "cli/cli_main.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string_view>

namespace airlock::cli {

int run_cli(int argc, char** argv, const AddCommands& add) {
  CLI::App app{"airlock: run AI-agent tool calls in sandboxes"};
  app.set_version_flag("--version", "airlock 0.1.0");
  app.require_subcommand(1);
  ExitStatus status;
  TrailingArgs trailing;
  int parsed_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      trailing.present = true;
      trailing.args.assign(argv + i + 1, argv + argc);
      parsed_argc = i;
      break;
    }
  }
  add(app, status, trailing);
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 2, like other Unix tools (run's 125 is for sandbox setup failures).
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return status.code;
}

int exec_sibling(const char* program, char** argv) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string path = (ec ? std::filesystem::path(".") : self.parent_path()) / program;
  // argv as it is, argv[0] included, so usage lines say "airlock validate ...".
  ::execv(path.c_str(), argv);
  std::cerr << "airlock: cannot start " << path << ": " << std::strerror(errno) << "\n";
  return 125;
}

}  // namespace airlock::cli
