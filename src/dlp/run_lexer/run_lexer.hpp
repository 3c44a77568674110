// The run lexer: one pass over the data, 64 bytes at a time with SIMD class masks, that finds
// the places the anchorless detectors care about:
//   numeric  digit groups joined by one or two of " .-()" (or an "x" before an extension)
//   hex      hex digits and ':' (so "::"), with '-' or '.' between two hex digits
//   iban     two letters then two digits, not inside a word
//   base64   runs of the base64 and base64url alphabets
// Runs shorter than a family's minimum are dropped in bulk with bit tricks, so digits in prose
// and short numbers in logs cost almost nothing. (These shapes have no literal for Vectorscan to
// anchor on: docs/performance.md, "DLP", compares the lexer with them as one Vectorscan database.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace airlock::dlp::detail {

struct Span {
  std::size_t start = 0, end = 0;
  friend bool operator==(const Span&, const Span&) = default;
};

struct RunFamilies {
  bool numeric = false;
  bool hex = false;
  bool iban = false;
  bool base64 = false;
  std::size_t base64_min_length = 32;
};

struct LexedRuns {
  std::vector<Span> numeric, hex, base64;
  std::vector<std::size_t> iban_starts;
  void clear() {
    numeric.clear();
    hex.clear();
    base64.clear();
    iban_starts.clear();
  }
};

// Where each family resumes: everything before its cursor has been reported.
struct LexCursor {
  std::size_t numeric = 0, hex = 0, iban = 0, base64 = 0;
  std::size_t min() const;
  void shift_back(std::size_t bytes);  // the window dropped `bytes` from its front
};

inline constexpr std::size_t kMinNumericRun = 7;  // "1.2.3.4", "467 3395"
inline constexpr std::size_t kMinHexRun = 7;      // "fe80::1"
// Runs are capped: a longer run is reported in pieces (bounded work and stream holdback).
inline constexpr std::size_t kMaxNumericRun = 256;
inline constexpr std::size_t kMaxHexRun = 256;
inline constexpr std::size_t kMaxBase64Run = 4096;
// Whether a byte belongs to a run depends on up to 3 bytes after it; matchers and context words
// read up to this many bytes past a run's end.
inline constexpr std::size_t kRunLookahead = 24;
inline constexpr std::size_t kIbanLookahead = 34 + 8;  // 34 characters, spaces between groups

// Lexes each family from its cursor to the end of data and advances the cursors. When more
// data may follow (!at_end), runs that could still grow are not reported: the cursor stops at
// the earliest of them.
void lex_runs(std::string_view data, LexCursor& cursor, bool at_end, const RunFamilies& families,
              LexedRuns& out);

// The baseline build (SSE2 on x86-64) that lex_runs() uses on CPUs without AVX2.
void lex_runs_baseline(std::string_view data, LexCursor& cursor, bool at_end,
                       const RunFamilies& families, LexedRuns& out);

// The same, one byte at a time: the reference the tests hold the SIMD builds to.
void lex_runs_reference(std::string_view data, LexCursor& cursor, bool at_end,
                        const RunFamilies& families, LexedRuns& out);

}  // namespace airlock::dlp::detail
