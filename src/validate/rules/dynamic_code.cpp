// dynamic-code: anything that turns a string (or code object) into running code, or that
// reaches the import machinery.
#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

const NamePatternTable& dynamic_code_names() {
  static const NamePatternTable kTable = {
      {"builtins.eval", "evaluates a string as code"},
      {"builtins.exec", "executes a string as code"},
      {"builtins.compile", "compiles a string to code"},
      {"builtins.__import__", "imports any module by name, past the allowlist"},
      {"builtins.breakpoint", "starts a debugger that runs arbitrary code"},
      {"builtins.help", "starts the interactive help system (imports modules by name)"},
      {"builtins.globals", "exposes the module's namespace, including __builtins__"},
      {"builtins.locals", "exposes a frame's namespace"},
      {"builtins.vars", "exposes an object's __dict__"},
      {"importlib.*", "imports any module by name, past the allowlist"},
      {"code.*", "runs an interactive interpreter on strings"},
      {"codeop.*", "compiles strings to code"},
      {"runpy.*", "runs modules and files as code"},
      {"pdb.*", "the debugger evaluates arbitrary expressions"},
      {"bdb.*", "the debugger framework evaluates arbitrary expressions"},
      {"timeit.*", "timeit compiles and runs strings"},
      {"cProfile.*", "cProfile.run/runctx execute strings"},
      {"profile.*", "profile.run/runctx execute strings"},
      {"trace.*", "trace runs strings and files as code"},
      {"logging.config.listen", "accepts configuration (and code) over a socket"},
      {"logging.config.*", "logging.config builds objects from names in configuration"},
      {"pandas.eval", "evaluates a string expression"},
      {"sys.modules", "gives every loaded module, past the allowlist"},
      {"sys.meta_path", "changes how imports are resolved"},
      {"sys.path_hooks", "changes how imports are resolved"},
      {"sys.path_importer_cache", "changes how imports are resolved"},
      {"types.CodeType", "builds code objects"},
      {"types.FunctionType", "builds functions from code objects"},
      {"types.LambdaType", "builds functions from code objects"},
  };
  return kTable;
}

// Methods that evaluate strings on objects of libraries the program imports.
void check_string_evaluating_methods(const Node& call, Analysis& analysis) {
  auto func = call.child("func");
  if (!func.is("Attribute") || !analysis.program_imports("pandas.*")) return;
  auto method = func.text("attr");
  if (method == "eval" || method == "query")
    analysis.report(call, "dynamic-code",
                    "." + std::string(method) +
                        "(...) on a pandas object evaluates its string argument as code");
}

}  // namespace

void check_dynamic_code(const Node& node, Analysis& analysis) {
  if (node.is("Import") || node.is("ImportFrom")) {
    report_imports(node, analysis, "dynamic-code", dynamic_code_names());
    return;
  }
  if (node.is("Call")) {
    check_string_evaluating_methods(node, analysis);
    return;
  }
  report_reference(node, analysis, "dynamic-code", dynamic_code_names());
}

}  // namespace airlock::validate::rules
