// process-exec: starting, replacing or signalling processes.
#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

const NamePatternTable& process_names() {
  static const NamePatternTable kTable = {
      {"os.system", "runs a shell command"},
      {"os.popen", "runs a shell command"},
      {"os.exec*", "replaces the process with another program"},
      {"os.spawn*", "starts another program"},
      {"os.posix_spawn*", "starts another program"},
      {"os.fork*", "forks the process"},
      {"os.kill*", "signals other processes"},
      {"os.startfile", "starts another program"},
      {"os.plock", "locks process memory"},
      {"pty.*", "pty.spawn/fork start other programs"},
      {"subprocess.*", "starts other programs"},
      {"multiprocessing.*", "starts other processes"},
      {"concurrent.futures.process.*", "starts other processes"},
      {"concurrent.futures.ProcessPoolExecutor", "starts other processes"},
      {"asyncio.create_subprocess_exec", "starts another program"},
      {"asyncio.create_subprocess_shell", "runs a shell command"},
      {"asyncio.subprocess.*", "starts other programs"},
  };
  return kTable;
}

}  // namespace

void check_process_execution(const Node& node, Analysis& analysis) {
  if (node.is("Import") || node.is("ImportFrom")) {
    report_imports(node, analysis, "process-exec", process_names());
    return;
  }
  // Event-loop methods that start programs, on whatever object holds them.
  if (node.is("Attribute")) {
    auto attr = node.text("attr");
    if (attr == "subprocess_exec" || attr == "subprocess_shell" ||
        attr == "create_subprocess_exec" || attr == "create_subprocess_shell") {
      analysis.report(node, "process-exec", "." + std::string(attr) + " starts another program");
      return;
    }
  }
  report_reference(node, analysis, "process-exec", process_names());
}

}  // namespace airlock::validate::rules
