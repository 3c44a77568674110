// Every rule id, its family and one line on what it refuses (SARIF rules[]; docs/validate.md
// has an example of each, and a unit test keeps the two in step).
#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {

const std::vector<RuleDescription>& catalog() {
  static const std::vector<RuleDescription> kRules = {
      {"source-too-large", "source", "the source is larger than the policy allows"},
      {"source-nul-byte", "source", "a NUL byte in the source"},
      {"source-not-utf8", "source", "bytes that are not UTF-8"},
      {"source-bidi-control", "source", "bidirectional control characters (Trojan Source)"},
      {"source-coding-cookie", "source", "a coding declaration other than UTF-8"},
      {"source-nfkc-identifier", "source", "an identifier that NFKC normalisation changes"},
      {"syntax-error", "parser", "the target interpreter cannot parse the code"},
      {"syntax-too-deep", "parser", "the syntax tree is nested too deeply to check"},
      {"unknown-node", "parser", "a node type the rule engine does not know"},
      {"parse-timeout", "parser", "the parser did not answer in time"},
      {"parse-failed", "parser", "the parse worker or the module introspection failed"},
      {"import-not-allowed", "imports", "an import the policy does not allow"},
      {"import-star", "imports", "from M import *"},
      {"import-relative", "imports", "a relative import"},
      {"import-unavailable", "imports", "an allowed module the target interpreter cannot import"},
      {"dynamic-code", "dynamic code", "running strings or code objects, or the import machinery"},
      {"process-exec", "process execution", "starting, replacing or signalling processes"},
      {"reflection-dunder", "reflection", "dunder attributes and names"},
      {"reflection-private", "reflection", "private attributes of modules and other objects"},
      {"reflection-frame", "reflection", "frame, traceback, generator and code attributes"},
      {"reflection-getattr", "reflection", "getattr/setattr/delattr/hasattr with a computed or _ name"},
      {"reflection-getattr-value", "reflection", "getattr and friends passed as values"},
      {"reflection-format", "reflection", "format fields that read attributes or items"},
      {"reflection-module-value", "reflection", "a module used as a value"},
      {"reflection-module-write", "reflection", "assigning or deleting a module attribute"},
      {"deserialization", "deserialisation", "loading formats that run code"},
      {"native-code", "native code", "ctypes, cffi, mmap"},
      {"file-write-outside-roots", "files", "a write outside the allowed write roots"},
      {"file-write-dynamic-path", "files", "a write to a path that is not a literal"},
      {"file-read-outside-roots", "files", "a literal read outside the allowed read roots"},
      {"network-host-not-allowed", "network", "a host the policy does not allow"},
      {"network-url-invalid", "network", "a URL that is not plain http(s)://host"},
      {"network-dynamic-destination", "network", "a network destination that is not a literal"},
      {"class-dangerous-method", "classes", "methods the interpreter calls implicitly"},
      {"class-metaclass", "classes", "metaclasses, class keywords, type(name, bases, ns)"},
      {"decorator-not-allowed", "classes", "a decorator that is not a plain allowed name"},
      {"reexport-module", "re-exports", "a module reached through an allowed module"},
      {"reexport-dangerous-callable", "re-exports",
       "a dangerous callable reached through an allowed module"},
  };
  return kRules;
}

}  // namespace airlock::validate::rules
