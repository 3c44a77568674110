// Scanning a parsed JSON value where it is. The DLP stages scanned the value's compact text
// (dump_compact, scanned JSON-aware: each escaped string decoded where it stands), redacted that
// text and parsed it back: on a 1 MiB argument the writing, the decoding and the parsing cost as
// much as the scan. Here the decoded text is written straight from the value (each string as it
// is, the rest as dump_compact writes it), findings are reported at the offsets the escaped text
// would give them, and redaction patches the strings they lie in. The findings are those of
// Scanner::scan(dump_compact(value)) (overlaps are ranked by the escaped length, as there), and
// a redacted value is the one parsing the redacted text gives.
//
//   auto scanned = dlp::ValueScan::scan(scanner, value);     // nullopt: scan the text instead
//   if (scanned && scanned->redact_in_place(value)) ...      // false: redact the text instead
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlp/scanner.hpp"

namespace airlock::dlp {

class ValueScan {
 public:
  // The findings in `value` (an array or an object). nullopt when the value cannot be laid out
  // as dump_compact writes it: not an array or object (the caller scans its text instead, a
  // lone string's as JSON), a string or key that is not UTF-8 (written with U+FFFD), a number
  // written as null, a binary value. Honours options.literals and options.threads (json is JSON
  // here).
  static std::optional<ValueScan> scan(const Scanner& scanner, nlohmann::json& value,
                                       const ScanOptions& options = {});

  // Offsets into dump_compact(value): equal to Scanner::scan(dump_compact(value)).
  const ScanResult& result() const { return result_; }

  // Applies each finding's action inside the string value it lies in, in the value scanned
  // (which must be unchanged since): it then equals what parsing
  // scanner.redact(dump_compact(value as scanned), result()) gives, and dump_compact(value) is
  // that text. Returns false and changes nothing when that cannot be done in place: a finding
  // outside one string value (in a key, a number, across quotes), cutting a UTF-8 character, or
  // whose replacement the text would escape or its parse decode. The caller then redacts the text.
  bool redact_in_place(const Scanner& scanner);

 private:
  struct Slot {             // one string of the value in the decoded text
    std::size_t start = 0;  // text[start, start + size) are its bytes
    std::size_t size = 0;
    std::string* value = nullptr;  // null for an object's key
  };
  struct Patch {
    std::size_t slot = 0, start = 0, end = 0;  // replaces the slot's bytes [start, end)
    std::string replacement;
  };
  class Layout;  // writes the decoded text

  bool patch_for(const Finding& finding, const Scanner& scanner, Patch& out) const;
  std::size_t decoded_offset(std::size_t escaped) const;

  ScanResult result_;
  std::vector<Slot> slots_;  // in text order
  // (decoded offset, escaped offset) for every finding's start and end, sorted.
  std::vector<std::pair<std::size_t, std::size_t>> offsets_;
};

}  // namespace airlock::dlp
