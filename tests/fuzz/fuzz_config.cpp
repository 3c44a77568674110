// libFuzzer: arbitrary text as the daemon's YAML configuration. It must never crash; it
// either loads or fails with a message that names file:line.
#include <cstdint>
#include <string>

#include "policy/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto config = airlock::policy::parse_config(text, "fuzz.yaml", "/nonexistent-base");
  if (!config && config.error().message.rfind("fuzz.yaml:", 0) != 0) __builtin_trap();
  return 0;
}
