// deserialization: formats whose loading runs code (pickle and friends, unsafe YAML,
// torch.load); native-code: calling machine code or mapping memory (ctypes, cffi, mmap).
#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

const NamePatternTable& deserializer_names() {
  static const NamePatternTable kTable = {
      {"pickle.*", "unpickling runs arbitrary code (__reduce__)"},
      {"cPickle.*", "unpickling runs arbitrary code (__reduce__)"},
      {"dill.*", "dill unpickling runs arbitrary code"},
      {"cloudpickle.*", "unpickling runs arbitrary code"},
      {"shelve.*", "shelve stores pickles; opening one unpickles"},
      {"marshal.*", "marshal loads code objects"},
      {"jsonpickle.*", "jsonpickle rebuilds arbitrary objects"},
      {"copyreg.*", "copyreg changes how objects are pickled and rebuilt"},
      {"joblib.load", "joblib files are pickles"},
      {"pandas.read_pickle", "reads a pickle"},
      {"yaml.unsafe_load*", "builds arbitrary Python objects"},
      {"yaml.full_load*", "the full loader builds Python objects"},
      {"yaml.UnsafeLoader", "builds arbitrary Python objects"},
      {"yaml.Loader", "builds arbitrary Python objects"},
      {"yaml.FullLoader", "builds Python objects"},
      {"yaml.CLoader", "builds arbitrary Python objects"},
      {"yaml.CUnsafeLoader", "builds arbitrary Python objects"},
      {"yaml.CFullLoader", "builds Python objects"},
  };
  return kTable;
}

const NamePatternTable& native_code_names() {
  static const NamePatternTable kTable = {
      {"ctypes.*", "calls machine code and reads/writes raw memory"},
      {"cffi.*", "calls machine code and reads/writes raw memory"},
      {"mmap.*", "maps memory and files directly"},
  };
  return kTable;
}

bool is_safe_yaml_loader(const Node& loader, Analysis& analysis) {
  for (const auto& r : analysis.resolve(loader))
    if (r.name == "yaml.SafeLoader" || r.name == "yaml.CSafeLoader" ||
        r.name == "yaml.BaseLoader" || r.name == "yaml.CBaseLoader")
      return true;
  return false;
}

void check_calls(const Node& call, Analysis& analysis) {
  if (callee_matches(call, analysis, "yaml.load") || callee_matches(call, analysis, "yaml.load_all")) {
    auto loader = Analysis::argument(call, 1, "Loader");
    if (!loader || !is_safe_yaml_loader(loader, analysis))
      analysis.report(call, "deserialization",
                      "yaml.load without Loader=yaml.SafeLoader builds arbitrary Python objects; "
                      "use yaml.safe_load");
  }
  if (callee_matches(call, analysis, "torch.load")) {
    auto weights_only = Analysis::argument(call, 99, "weights_only");
    if (!weights_only.is("Constant") || weights_only.constant_text() != "True")
      analysis.report(call, "deserialization",
                      "torch.load without weights_only=True unpickles arbitrary objects");
  }
  if (callee_matches(call, analysis, "numpy.load")) {
    auto allow = Analysis::argument(call, 99, "allow_pickle");
    if (allow && !(allow.is("Constant") && allow.constant_text() == "False"))
      analysis.report(call, "deserialization", "numpy.load with allow_pickle unpickles objects");
  }
}

}  // namespace

void check_serialization(const Node& node, Analysis& analysis) {
  if (node.is("Import") || node.is("ImportFrom")) {
    report_imports(node, analysis, "deserialization", deserializer_names());
    report_imports(node, analysis, "native-code", native_code_names());
    return;
  }
  if (node.is("Call")) {
    check_calls(node, analysis);
    return;
  }
  if (!report_reference(node, analysis, "deserialization", deserializer_names()))
    report_reference(node, analysis, "native-code", native_code_names());
}

}  // namespace airlock::validate::rules
