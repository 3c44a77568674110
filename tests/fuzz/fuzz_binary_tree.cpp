// libFuzzer: arbitrary bytes as the parse worker's binary tree (native/ast_walker.c). The
// worker is sandboxed but has just parsed hostile source, so the decoder must never crash,
// read out of bounds or recurse without bound; it decodes or names what is wrong, and the
// engine turns anything that decodes into findings or a rejection.
#include <cstdint>
#include <string>

#include "validate/engine.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto tree = airlock::validate::SyntaxTree::from_binary(bytes, error);
  if (!tree && error.rfind("malformed binary tree", 0) != 0) __builtin_trap();
  static const airlock::validate::Json reply = {
      {"ok", true}, {"python", {3, 11}}, {"identifiers", airlock::validate::Json::array()}};
  airlock::validate::Policy policy;
  airlock::validate::Program program(reply, bytes, policy);
  (void)program.modules_to_introspect();
  auto findings = program.analyze({});
  if (!tree && (findings.size() != 1 || findings[0].rule != "parse-failed")) __builtin_trap();
  return 0;
}
