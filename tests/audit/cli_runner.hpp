// Runs a command line for the audit CLI tests: its exit code and what it wrote, each stream
// through a file (std::system and sh, as a user's shell would run it).
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace airlock::audit::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Single-quoted for sh (GCC 12 at -O3 warns falsely on `"x" + string + "x"`, so append).
inline std::string quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += '\'';
  return out;
}

// `program args...` with its stdout in the file `out`, its stderr in `err`.
inline CommandResult run_command(const std::string& program, const std::vector<std::string>& args,
                                 const std::string& out, const std::string& err) {
  std::string command = quote(program);
  for (const auto& a : args) {
    command += ' ';
    command += quote(a);
  }
  command += " > ";
  command += quote(out);
  command += " 2> ";
  command += quote(err);
  int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

}  // namespace airlock::audit::testing
