#include "dlp/run_lexer/run_lexer.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dlp/run_lexer/run_lexer_blocks.hpp"

namespace airlock::dlp::detail {
namespace {

// Membership, byte by byte: the definitions the SIMD masks implement.
bool numeric_member(std::string_view d, std::ptrdiff_t k) {
  auto digit = [&](std::ptrdiff_t i) { return (class_at(d, i) & kDigit) != 0; };
  auto separator = [&](std::ptrdiff_t i) { return (class_at(d, i) & kSeparator) != 0; };
  if (digit(k)) return true;
  bool sep = separator(k);
  if ((sep || byte_at(d, k) == 'x') && digit(k - 1) && digit(k + 1)) return true;  // 415-734
  if (sep && digit(k - 1) && separator(k + 1) && digit(k + 2)) return true;          // 415) 734
  return sep && separator(k - 1) && digit(k - 2) && digit(k + 1);
}
bool hex_member(std::string_view d, std::ptrdiff_t k) {
  auto hex = [&](std::ptrdiff_t i) { return (class_at(d, i) & kHex) != 0; };
  char c = byte_at(d, k);
  return hex(k) || c == ':' || ((c == '-' || c == '.') && hex(k - 1) && hex(k + 1));
}
bool iban_start(std::string_view d, std::ptrdiff_t k) {
  auto is = [&](std::ptrdiff_t i, std::uint8_t bit) { return (class_at(d, i) & bit) != 0; };
  return is(k, kAlpha) && is(k + 1, kAlpha) && is(k + 2, kDigit) && is(k + 3, kDigit) &&
         !is(k - 1, kAlpha) && !is(k - 1, kDigit);
}
bool base64_member(std::string_view d, std::ptrdiff_t k) { return (class_at(d, k) & kBase64) != 0; }

template <typename Member>
void collect_reference(std::string_view data, std::size_t begin, Member member, RunSink& sink) {
  std::size_t k = begin;
  while (k < data.size()) {
    if (!member(data, static_cast<std::ptrdiff_t>(k))) {
      ++k;
      continue;
    }
    std::size_t start = k;
    Colons colons;
    while (k < data.size() && member(data, static_cast<std::ptrdiff_t>(k))) {
      if (data[k] == ':') {
        ++colons.count;
        colons.double_colon |= k > start && data[k - 1] == ':';
      }
      ++k;
    }
    sink.run(start, k, colons);
  }
}

#if defined(__SSE2__)
// One 16-byte lane's class masks, shifted into place in the block's 64-bit masks.
template <int Lane>
inline void classify_lane(const unsigned char* p, BlockMasks& m, bool need_base64) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * Lane));
  const auto eq = [&](char c) { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); };
  // (unsigned)(a - low) < count with SSE2's signed compare: move the range to start at -128.
  const auto in_range = [](__m128i a, int low, int count) {
    return _mm_cmplt_epi8(_mm_add_epi8(a, _mm_set1_epi8(static_cast<char>(128 - low))),
                          _mm_set1_epi8(static_cast<char>(count - 128)));
  };
  const auto bits = [](__m128i predicate) {
    return static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(predicate)))
           << (16 * Lane);
  };
  const __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
  const __m128i dash = eq('-'), dot = eq('.');
  const __m128i digit = in_range(v, '0', 10);
  const __m128i alpha = in_range(lower, 'a', 26);
  m.digit |= bits(digit);
  m.alpha |= bits(alpha);
  m.hex |= bits(_mm_or_si128(digit, in_range(lower, 'a', 6)));
  m.separator |= bits(_mm_or_si128(_mm_or_si128(eq(' '), dot),
                                   _mm_or_si128(dash, _mm_or_si128(eq('('), eq(')')))));
  m.x |= bits(eq('x'));
  m.colon |= bits(eq(':'));
  m.dash_dot |= bits(_mm_or_si128(dash, dot));
  if (need_base64)
    m.base64 |= bits(_mm_or_si128(_mm_or_si128(alpha, digit),
                                  _mm_or_si128(_mm_or_si128(eq('+'), eq('/')),
                                               _mm_or_si128(eq('_'), dash))));
}

struct ClassifyBaseline {
  BlockMasks operator()(const unsigned char* p, bool need_base64) const {
    BlockMasks m;
    classify_lane<0>(p, m, need_base64);
    classify_lane<1>(p, m, need_base64);
    classify_lane<2>(p, m, need_base64);
    classify_lane<3>(p, m, need_base64);
    return m;
  }
};
#else
BlockMasks classify_scalar(const unsigned char* p) {
  BlockMasks m;
  for (int i = 0; i < 64; ++i) {
    std::uint64_t bit = std::uint64_t{1} << i;
    std::uint8_t c = kClass[p[i]];
    if (c & kDigit) m.digit |= bit;
    if (c & kSeparator) m.separator |= bit;
    if (p[i] == 'x') m.x |= bit;
    if (c & kHex) m.hex |= bit;
    if (p[i] == ':') m.colon |= bit;
    if (p[i] == '-' || p[i] == '.') m.dash_dot |= bit;
    if (c & kAlpha) m.alpha |= bit;
    if (c & kBase64) m.base64 |= bit;
  }
  return m;
}
struct ClassifyBaseline {
  BlockMasks operator()(const unsigned char* p, bool) const { return classify_scalar(p); }
};
#endif


bool avx2_available() {
#if defined(__x86_64__)
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
                                __builtin_cpu_supports("popcnt");
  return available;
#else
  return false;
#endif
}

}  // namespace

std::size_t LexCursor::min() const { return std::min(std::min(numeric, hex), std::min(iban, base64)); }

void LexCursor::shift_back(std::size_t bytes) {
  numeric -= std::min(numeric, bytes);
  hex -= std::min(hex, bytes);
  iban -= std::min(iban, bytes);
  base64 -= std::min(base64, bytes);
}

void lex_runs(std::string_view data, LexCursor& cursor, bool at_end, const RunFamilies& families,
              LexedRuns& out) {
#if defined(__x86_64__)
  if (avx2_available()) return lex_runs_avx2(data, cursor, at_end, families, out);
#endif
  lex_runs_baseline(data, cursor, at_end, families, out);
}

void lex_runs_baseline(std::string_view data, LexCursor& cursor, bool at_end,
                       const RunFamilies& families, LexedRuns& out) {
  lex_blocks(data, cursor, at_end, families, out, ClassifyBaseline{});
}

void lex_runs_reference(std::string_view data, LexCursor& cursor, bool at_end,
                        const RunFamilies& families, LexedRuns& out) {
  const std::size_t size = data.size();
  if (families.numeric) {
    RunSink sink(size, at_end, kMinNumericRun, kMaxNumericRun, RunFilter::any, out.numeric);
    collect_reference(data, cursor.numeric, numeric_member, sink);
    cursor.numeric = next_cursor(sink.deferred(), cursor.numeric, size, at_end);
  }
  if (families.hex) {
    RunSink sink(size, at_end, kMinHexRun, kMaxHexRun, RunFilter::address_like, out.hex);
    collect_reference(data, cursor.hex, hex_member, sink);
    cursor.hex = next_cursor(sink.deferred(), cursor.hex, size, at_end);
  }
  if (families.base64) {
    RunSink sink(size, at_end, families.base64_min_length, kMaxBase64Run, RunFilter::any, out.base64);
    collect_reference(data, cursor.base64, base64_member, sink);
    cursor.base64 = next_cursor(sink.deferred(), cursor.base64, size, at_end);
  }
  if (families.iban) {
    std::size_t deferred = kNone;
    for (std::size_t k = cursor.iban; k < size; ++k) {
      if (!iban_start(data, static_cast<std::ptrdiff_t>(k))) continue;
      if (!at_end && k + kIbanLookahead > size)
        deferred = std::min(deferred, k);
      else
        out.iban_starts.push_back(k);
    }
    cursor.iban = next_cursor(deferred, cursor.iban, size, at_end);
  }
}

}  // namespace airlock::dlp::detail
