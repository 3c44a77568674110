// Shape matchers for the detectors that have no literal to anchor on (phone numbers, card
// numbers, SSNs, IP and MAC addresses, IBANs, high-entropy strings). The run lexer hands them
// maximal runs of digits, hex digits or base64 characters; they pick the sub-spans with the
// detector's shape. Validators (checksums, numbering rules) run afterwards.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace airlock::dlp::detail {

// Digits between separators, as offsets into RunView::data.
struct DigitGroup {
  std::size_t start = 0, end = 0;
  std::size_t size() const { return end - start; }
};

struct RunView {
  std::string_view data;  // the whole buffer: shapes look at the bytes around the run
  std::size_t start = 0, end = 0;
  std::span<const DigitGroup> groups;  // numeric runs only

  std::string_view text() const { return data.substr(start, end - start); }
  // The separator between groups[i] and groups[i + 1].
  std::string_view separator_after(std::size_t i) const {
    return data.substr(groups[i].end, groups[i + 1].start - groups[i].end);
  }
  char byte_before(std::size_t position) const { return position == 0 ? '\0' : data[position - 1]; }
  char byte_at(std::size_t position) const { return position < data.size() ? data[position] : '\0'; }
};

struct ShapeMatch {
  std::size_t start = 0, end = 0;
  double confidence_delta = 0;  // formats that need a context word start lower
};

using ShapeMatcher = void (*)(const RunView& run, std::vector<ShapeMatch>& out);

// Splits a numeric run into its digit groups.
void split_digit_groups(std::string_view data, std::size_t start, std::size_t end,
                        std::vector<DigitGroup>& groups);

// Numeric runs.
void match_ipv4(const RunView& run, std::vector<ShapeMatch>& out);
void match_credit_card(const RunView& run, std::vector<ShapeMatch>& out);
void match_us_ssn(const RunView& run, std::vector<ShapeMatch>& out);
void match_phone_international(const RunView& run, std::vector<ShapeMatch>& out);
void match_phone_nanp(const RunView& run, std::vector<ShapeMatch>& out);
void match_phone_national(const RunView& run, std::vector<ShapeMatch>& out);
// Hex runs (hex digits joined by ':', '-', '.').
void match_ipv6(const RunView& run, std::vector<ShapeMatch>& out);
void match_mac_address(const RunView& run, std::vector<ShapeMatch>& out);
// IBAN: the run starts at two letters followed by two digits.
void match_iban(const RunView& run, std::vector<ShapeMatch>& out);
// Base64-alphabet runs.
void match_base64_run(const RunView& run, std::vector<ShapeMatch>& out);
void match_hex_run(const RunView& run, std::vector<ShapeMatch>& out);

}  // namespace airlock::dlp::detail
