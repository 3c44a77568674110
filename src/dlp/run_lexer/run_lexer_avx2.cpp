// The run lexer's block loop built for AVX2 (this file is compiled with -mavx2 -mbmi2 -mpopcnt;
// lex_runs() calls it only on CPUs that have them): the same masks from two 32-byte lanes.
#include <immintrin.h>

#include "dlp/run_lexer/run_lexer_blocks.hpp"

namespace airlock::dlp::detail {
namespace {

template <int Lane>
inline void classify_lane_avx2(const unsigned char* p, BlockMasks& m, bool need_base64) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * Lane));
  const auto eq = [&](char c) { return _mm256_cmpeq_epi8(v, _mm256_set1_epi8(c)); };
  // (unsigned)(a - low) < count: the unsigned minimum of (a - low) and count - 1 is a - low.
  const auto in_range = [](__m256i a, int low, int count) {
    const __m256i shifted = _mm256_sub_epi8(a, _mm256_set1_epi8(static_cast<char>(low)));
    return _mm256_cmpeq_epi8(_mm256_min_epu8(shifted, _mm256_set1_epi8(static_cast<char>(count - 1))),
                             shifted);
  };
  const auto bits = [](__m256i predicate) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(predicate)))
           << (32 * Lane);
  };
  const __m256i lower = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
  const __m256i dash = eq('-'), dot = eq('.');
  const __m256i digit = in_range(v, '0', 10);
  const __m256i alpha = in_range(lower, 'a', 26);
  m.digit |= bits(digit);
  m.alpha |= bits(alpha);
  m.hex |= bits(_mm256_or_si256(digit, in_range(lower, 'a', 6)));
  m.separator |= bits(_mm256_or_si256(_mm256_or_si256(eq(' '), dot),
                                      _mm256_or_si256(dash, _mm256_or_si256(eq('('), eq(')')))));
  m.x |= bits(eq('x'));
  m.colon |= bits(eq(':'));
  m.dash_dot |= bits(_mm256_or_si256(dash, dot));
  if (need_base64)
    m.base64 |= bits(_mm256_or_si256(_mm256_or_si256(alpha, digit),
                                     _mm256_or_si256(_mm256_or_si256(eq('+'), eq('/')),
                                                     _mm256_or_si256(eq('_'), dash))));
}

struct ClassifyAvx2 {
  BlockMasks operator()(const unsigned char* p, bool need_base64) const {
    BlockMasks m;
    classify_lane_avx2<0>(p, m, need_base64);
    classify_lane_avx2<1>(p, m, need_base64);
    return m;
  }
};

}  // namespace

void lex_runs_avx2(std::string_view data, LexCursor& cursor, bool at_end,
                   const RunFamilies& families, LexedRuns& out) {
  lex_blocks(data, cursor, at_end, families, out, ClassifyAvx2{});
}

}  // namespace airlock::dlp::detail
