// libFuzzer: arbitrary text as a tool's inputSchema in a configuration (indented under
// `inputSchema:`), through the config loader and schema compilation; a schema that compiles is
// then applied to a few values. It must never crash: it loads, or fails naming fuzz.yaml:line.
#include <cstdint>
#include <sstream>
#include <string>

#include "policy/config.hpp"
#include "policy/json_schema.hpp"

namespace {

std::string config_with_schema(const std::string& schema) {
  std::string text =
      "apiVersion: airlock.dev/v1\nkind: AirlockConfig\ntools:\n  - name: t\n"
      "    runtime: {type: command, command: [/bin/cat]}\n    inputSchema:\n";
  std::istringstream lines(schema);
  for (std::string line; std::getline(lines, line);) text += "      " + line + "\n";
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string schema(reinterpret_cast<const char*>(data), size);
  auto config = airlock::policy::parse_config(config_with_schema(schema), "fuzz.yaml", "/x");
  if (!config) {
    if (config.error().message.rfind("fuzz.yaml:", 0) != 0) __builtin_trap();
    return 0;
  }
  const auto& check = config->tools.at(0).input_check;
  if (!check) __builtin_trap();  // loaded means compiled
  for (const char* value : {R"({})", R"({"a": "xyz", "b": [1, "2", {"c": null}]})",
                            R"({"name": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "n": 1.5})"})
    (void)check->check(nlohmann::json::parse(value));
  return 0;
}
