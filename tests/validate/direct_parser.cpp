#include "direct_parser.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "validate/source_checks.hpp"

extern char** environ;

namespace airlock::validate::test {
namespace {

// Runs argv with `input` on stdin; returns stdout.
std::string run(const std::vector<std::string>& argv, const std::string& input) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0)
    throw std::runtime_error("spawn " + argv[0]);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  std::size_t written = 0;
  while (written < input.size()) {
    ssize_t n = write(in[1], input.data() + written, input.size() - written);
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  close(in[1]);
  std::string output;
  char buffer[65536];
  ssize_t n;
  while ((n = read(out[0], buffer, sizeof buffer)) > 0) output.append(buffer, static_cast<std::size_t>(n));
  close(out[0]);
  int status;
  waitpid(pid, &status, 0);
  return output;
}

Json reply_of(const std::string& output) {
  auto newline = output.find('\n');
  if (newline == std::string::npos) throw std::runtime_error("no reply from ast_dump.py");
  return Json::parse(output.substr(newline + 1));
}

}  // namespace

Json parse_directly(const std::string& source) {
  return reply_of(run({"/usr/bin/python3", "-I", "-B", AIRLOCK_VALIDATE_PARSER_SCRIPT, "dump"}, source));
}

const ExportTable& exports_directly(const std::set<std::string>& modules) {
  static std::map<std::set<std::string>, ExportTable> cache;
  auto it = cache.find(modules);
  if (it != cache.end()) return it->second;
  std::vector<std::string> argv = {"/usr/bin/python3", "-I", "-B", AIRLOCK_VALIDATE_PARSER_SCRIPT,
                                   "exports"};
  argv.insert(argv.end(), modules.begin(), modules.end());
  auto table = parse_exports(reply_of(run(argv, "")));
  if (!table) throw std::runtime_error(table.error().message);
  return cache.emplace(modules, std::move(*table)).first->second;
}

Report check_directly(const std::string& source, const Policy& policy) {
  std::vector<Finding> findings = check_source_bytes(source, policy);
  Json reply = parse_directly(source);
  const ExportTable& exports = exports_directly(modules_to_introspect(reply, policy));
  for (auto& f : analyze(reply, policy, exports)) findings.push_back(std::move(f));
  return make_report(std::move(findings));
}

}  // namespace airlock::validate::test
