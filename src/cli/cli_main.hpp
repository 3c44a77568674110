// What the two CLI programs share: cutting off what follows "--", parsing with CLI11, usage
// errors as exit 2, and becoming a sibling program (execv) for what the other one does.
//
//   airlock        run, doctor, and the rest by name: a small program, because `airlock run`
//                  starts once per tool call and a program that also carries Vectorscan,
//                  SQLite, OpenSSL and the validator took 1 ms longer to start
//                  (docs/performance-history.md)
//   airlock-tools  every command, with everything they need (validate, scan, audit, call,
//                  tools, policy, secrets, and run --audit); `airlock` executes it for those
//   airlock-serve  the daemon (`airlock serve` executes it)
#pragma once

#include <functional>

#include "cli/commands.hpp"

namespace airlock::cli {

using AddCommands = std::function<void(CLI::App&, ExitStatus&, const TrailingArgs&)>;

// Parses argv with the commands `add` registers and runs the chosen one; the exit status.
int run_cli(int argc, char** argv, const AddCommands& add);

// Replaces this process with `program` (a file next to this one), passing argv on; returns
// only when that fails, having said why on stderr, with the exit status to use.
int exec_sibling(const char* program, char** argv);

}  // namespace airlock::cli
