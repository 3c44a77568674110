// The SIMD run lexer against its byte-at-a-time reference, whole and in pieces.
#include <gtest/gtest.h>

#include <random>

#include "dlp/run_lexer/run_lexer.hpp"

using namespace airlock::dlp::detail;

namespace {

const RunFamilies kAll{true, true, true, true, 16};

// Text made of the bytes the lexer cares about, so runs, joiners and edges are dense.
std::string random_text(std::mt19937& rng, std::size_t size) {
  static const std::string alphabet =
      "0123456789012345678901234567890123456789 .-()x:abcdefABCDEFghzGBDE+/_=\n\t\"',;\xff\xc3";
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::string text(size, ' ');
  for (auto& c : text) c = alphabet[pick(rng)];
  return text;
}

void expect_same(const LexedRuns& a, const LexedRuns& b, const std::string& what) {
  EXPECT_EQ(a.numeric, b.numeric) << what << " numeric";
  EXPECT_EQ(a.hex, b.hex) << what << " hex";
  EXPECT_EQ(a.base64, b.base64) << what << " base64";
  EXPECT_EQ(a.iban_starts, b.iban_starts) << what << " iban";
}

}  // namespace

TEST(DlpRunLexer, FindsTheRunsOfEachFamily) {
  std::string text = "call 415-734-2219 or (08) 8747 6301; ip fe80::1ff:fe23:4567:890a; "
                     "iban DE89370400440532013000; b64 QUJDREVGR0hJSktMTU5PUFFSU1RVVldY end";
  LexedRuns runs;
  LexCursor cursor;
  lex_runs(text, cursor, true, kAll, runs);
  auto texts = [&](const std::vector<Span>& spans) {
    std::vector<std::string> out;
    for (auto s : spans) out.push_back(text.substr(s.start, s.end - s.start));
    return out;
  };
  EXPECT_EQ(texts(runs.numeric),
            (std::vector<std::string>{"415-734-2219", "08) 8747 6301", "89370400440532013000"}));
  // Hex runs without a colon are only kept at a MAC address's length (14 or 17).
  EXPECT_EQ(texts(runs.hex), (std::vector<std::string>{"fe80::1ff:fe23:4567:890a"}));
  std::vector<std::string> iban_starts;
  for (auto at : runs.iban_starts) iban_starts.push_back(text.substr(at, 4));
  EXPECT_EQ(iban_starts, (std::vector<std::string>{"fe80", "fe23", "DE89"}));
  EXPECT_EQ(texts(runs.base64),
            (std::vector<std::string>{"DE89370400440532013000", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"}));
  EXPECT_EQ(cursor.min(), text.size());
}

TEST(DlpRunLexer, SimdMatchesTheReferenceOnRandomText) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::string text = random_text(rng, 1 + rng() % 700);
    for (bool at_end : {true, false}) {
      // lex_runs() is the AVX2 build on CPUs that have it; the baseline build is SSE2.
      LexedRuns fast, baseline, reference;
      LexCursor fast_cursor, baseline_cursor, reference_cursor;
      lex_runs(text, fast_cursor, at_end, kAll, fast);
      lex_runs_baseline(text, baseline_cursor, at_end, kAll, baseline);
      lex_runs_reference(text, reference_cursor, at_end, kAll, reference);
      expect_same(fast, reference, "round " + std::to_string(round));
      expect_same(baseline, reference, "baseline, round " + std::to_string(round));
      EXPECT_EQ(fast_cursor.numeric, reference_cursor.numeric);
      EXPECT_EQ(fast_cursor.iban, reference_cursor.iban);
      EXPECT_EQ(baseline_cursor.hex, reference_cursor.hex);
      if (HasFailure()) return;
    }
  }
}

TEST(DlpRunLexer, LongRunsArePiecedTheSameWay) {
  std::string text = std::string(3000, '7') + " " + std::string(9000, 'A') + " " + std::string(600, 'f');
  LexedRuns fast, baseline, reference;
  LexCursor a, b, c;
  lex_runs(text, a, true, kAll, fast);
  lex_runs_baseline(text, c, true, kAll, baseline);
  lex_runs_reference(text, b, true, kAll, reference);
  expect_same(fast, reference, "long runs");
  expect_same(baseline, reference, "long runs, baseline");
  EXPECT_EQ(fast.numeric.front().end - fast.numeric.front().start, kMaxNumericRun);
}

TEST(DlpRunLexer, LexingInPiecesGivesTheWholeResult) {
  std::mt19937 rng(11);
  for (int round = 0; round < 100; ++round) {
    std::string text = random_text(rng, 50 + rng() % 400);
    LexedRuns whole;
    LexCursor cursor;
    lex_runs(text, cursor, true, kAll, whole);
    // Grow the data a few bytes at a time, as a stream would.
    LexedRuns pieces;
    LexCursor growing;
    for (std::size_t size = 0; size < text.size();) {
      size = std::min(text.size(), size + 1 + rng() % 37);
      lex_runs(std::string_view(text).substr(0, size), growing, size == text.size(), kAll, pieces);
    }
    expect_same(whole, pieces, "round " + std::to_string(round));
    if (HasFailure()) return;
  }
}
