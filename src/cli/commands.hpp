// Each subcommand registers itself on the root CLI11 app; the callback it installs runs the
// command and stores the process exit status.
#pragma once

#include <CLI/CLI.hpp>

namespace airlock::cli {

struct ExitStatus {
  int code = 0;
};

void add_run_command(CLI::App& app, ExitStatus& status);
void add_doctor_command(CLI::App& app, ExitStatus& status);
void add_scan_command(CLI::App& app, ExitStatus& status);

}  // namespace airlock::cli
