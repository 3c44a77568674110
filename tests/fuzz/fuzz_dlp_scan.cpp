// libFuzzer: arbitrary bytes through the DLP scanner as `airlock scan` and the daemon use it
// (JSON-aware automatic mode). It must never crash; every finding lies in the input; and a
// document that is one JSON string (scanned as JSON, findings at whole escapes) is still one
// JSON string when redacted.
#include <cstdint>
#include <string>

#include "dlp/json/json_strings.hpp"
#include "dlp/scanner.hpp"

namespace {

const airlock::dlp::Scanner& scanner() {
  static const auto* made = new airlock::dlp::Scanner(
      std::move(*airlock::dlp::Scanner::create(airlock::dlp::Policy::defaults())));
  return *made;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto result = scanner().scan(text);
  for (const auto& f : result.findings)
    if (f.start >= f.end || f.end > text.size()) __builtin_trap();
  if (result.blocked || !airlock::dlp::detail::is_json_string(text)) return 0;
  if (!airlock::dlp::detail::is_json_string(scanner().redact(text, result))) __builtin_trap();
  return 0;
}
