#include "dlp/run_lexer.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace airlock::dlp::detail {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// ---- byte classes (the scalar reference and the neighbours of a SIMD block) ----

enum ClassBit : std::uint8_t {
  kDigit = 1,
  kSeparator = 2,  // " .-()": between digit groups
  kHex = 4,        // [0-9a-fA-F]
  kAlpha = 8,
  kBase64 = 16,    // [A-Za-z0-9+/_-]
};

constexpr std::array<std::uint8_t, 256> make_class_table() {
  std::array<std::uint8_t, 256> table{};
  for (int c = 0; c < 256; ++c) {
    std::uint8_t bits = 0;
    bool digit = c >= '0' && c <= '9';
    bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    if (digit) bits |= kDigit | kHex;
    if ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) bits |= kHex;
    if (alpha) bits |= kAlpha;
    if (c == ' ' || c == '.' || c == '-' || c == '(' || c == ')') bits |= kSeparator;
    if (digit || alpha || c == '+' || c == '/' || c == '_' || c == '-') bits |= kBase64;
    table[static_cast<std::size_t>(c)] = bits;
  }
  return table;
}
constexpr auto kClass = make_class_table();

// The class bits of data[i], or none outside the data.
std::uint8_t class_at(std::string_view data, std::ptrdiff_t i) {
  if (i < 0 || static_cast<std::size_t>(i) >= data.size()) return 0;
  return kClass[static_cast<unsigned char>(data[static_cast<std::size_t>(i)])];
}
char byte_at(std::string_view data, std::ptrdiff_t i) {
  if (i < 0 || static_cast<std::size_t>(i) >= data.size()) return '\0';
  return data[static_cast<std::size_t>(i)];
}

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

// ---- run collection ----

// Reports runs of one family: pieces of at most `cap` bytes, at least `min` long; holds back
// (and remembers the start of) any run that could still grow when more data arrives.
class RunSink {
 public:
  RunSink(std::size_t size, bool at_end, std::size_t min, std::size_t cap, std::vector<Span>& out)
      : size_(size), at_end_(at_end), min_(min), cap_(cap), out_(out) {}

  void run(std::size_t start, std::size_t end) {
    while (end - start > cap_) {
      piece(start, start + cap_);
      start += cap_;
    }
    piece(start, end);
  }
  std::size_t min_length() const { return min_; }
  std::size_t cap() const { return cap_; }
  std::size_t deferred() const { return deferred_; }

 private:
  void piece(std::size_t start, std::size_t end) {
    if (!at_end_ && end + kRunLookahead > size_) {
      deferred_ = std::min(deferred_, start);
      return;
    }
    if (end - start >= min_) out_.push_back({start, end});
  }
  std::size_t size_;
  bool at_end_;
  std::size_t min_, cap_;
  std::vector<Span>& out_;
  std::size_t deferred_ = kNone;
};

std::size_t next_cursor(std::size_t deferred, std::size_t cursor, std::size_t size, bool at_end) {
  if (at_end) return size;
  std::size_t undecided = size >= kRunLookahead ? size - kRunLookahead : 0;
  return std::max(cursor, std::min(deferred, undecided));
}

template <typename Member>
void collect_reference(std::string_view data, std::size_t begin, Member member, RunSink& sink) {
  std::size_t k = begin;
  while (k < data.size()) {
    if (!member(data, static_cast<std::ptrdiff_t>(k))) {
      ++k;
      continue;
    }
    std::size_t start = k;
    while (k < data.size() && member(data, static_cast<std::ptrdiff_t>(k))) ++k;
    sink.run(start, k);
  }
}

// ---- the SIMD path ----

// Bits where a run of at least `length` set bits begins (runs are cut at the top of the word).
std::uint64_t long_run_starts(std::uint64_t m, std::size_t length) {
  if (length > 64) return 0;
  std::uint64_t all_set = m;  // bit k: bits k .. k+covered-1 are all set
  std::size_t covered = 1;
  while (covered < length && all_set != 0) {
    std::size_t step = std::min(covered, length - covered);
    all_set &= all_set >> step;
    covered += step;
  }
  return all_set & ~(all_set << 1);
}

// Feeds one family's 64-bit membership masks, block after block, into a RunSink. Only runs long
// enough to report are visited, except near the end of the data where a short run may still
// grow and must hold the cursor back.
class MaskRunCollector {
 public:
  MaskRunCollector(RunSink& sink, std::size_t size) : sink_(sink), size_(size) {}

  void block(std::uint64_t m, std::size_t base) {
    if (open_) {
      if (m == ~std::uint64_t{0}) {
        flush_full_pieces(base + 64);
        return;
      }
      unsigned k = static_cast<unsigned>(__builtin_ctzll(~m));
      sink_.run(start_, base + k);
      open_ = false;
      m &= ~std::uint64_t{0} << k;
    }
    if (m == 0) return;
    const bool near_end = base + 64 + kRunLookahead >= size_;
    std::uint64_t starts = near_end ? m & ~(m << 1) : long_run_starts(m, sink_.min_length());
    while (starts != 0) {
      unsigned s = static_cast<unsigned>(__builtin_ctzll(starts));
      std::uint64_t from_s = m >> s;
      if (from_s == (~std::uint64_t{0} >> s)) {  // reaches the top bit: continues next block
        open_at(base + s);
        return;
      }
      unsigned length = static_cast<unsigned>(__builtin_ctzll(~from_s));
      sink_.run(base + s, base + s + length);
      starts &= starts - 1;
    }
    if (m >> 63) {  // a run too short so far, that may continue in the next block
      unsigned trailing = static_cast<unsigned>(__builtin_clzll(~m));
      open_at(base + 64 - trailing);
    }
  }

  void finish(std::size_t end) {
    if (open_) sink_.run(start_, end);
    open_ = false;
  }

 private:
  void open_at(std::size_t start) {
    open_ = true;
    start_ = start;
  }
  // A run longer than the cap is reported piece by piece as it grows.
  void flush_full_pieces(std::size_t end) {
    while (end - start_ > sink_.cap()) {
      sink_.run(start_, start_ + sink_.cap());
      start_ += sink_.cap();
    }
  }
  RunSink& sink_;
  std::size_t size_;
  bool open_ = false;
  std::size_t start_ = 0;
};

struct BlockMasks {
  std::uint64_t digit = 0, separator = 0, x = 0, hex = 0, colon = 0, dash_dot = 0, alpha = 0,
                base64 = 0;
};

#if defined(__SSE2__)
// One 16-byte lane's class masks, shifted into place in the block's 64-bit masks.
template <int Lane>
inline void classify_lane(const unsigned char* p, BlockMasks& m) {
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
  m.base64 |= bits(_mm_or_si128(_mm_or_si128(alpha, digit),
                                _mm_or_si128(_mm_or_si128(eq('+'), eq('/')),
                                             _mm_or_si128(eq('_'), dash))));
}

inline BlockMasks classify_block(const unsigned char* p) {
  BlockMasks m;
  classify_lane<0>(p, m);
  classify_lane<1>(p, m);
  classify_lane<2>(p, m);
  classify_lane<3>(p, m);
  return m;
}
#else
BlockMasks classify_block(const unsigned char* p) {
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
#endif

struct FamilyMasks {
  std::uint64_t numeric = 0, hex = 0, iban = 0, base64 = 0;
};

FamilyMasks family_masks(std::string_view data, std::size_t base, const BlockMasks& b) {
  // The classes of the bytes just outside the block.
  const auto at = [&](std::ptrdiff_t offset) {
    return class_at(data, static_cast<std::ptrdiff_t>(base) + offset);
  };
  const std::uint8_t before2 = at(-2), before1 = at(-1), after0 = at(64), after1 = at(65),
                     after2 = at(66);
  const auto bit = [](std::uint8_t classes, ClassBit c) -> std::uint64_t { return (classes & c) ? 1 : 0; };
  FamilyMasks f;
  // numeric: digits, and separators between digits (one, or two in a row like ") ").
  const std::uint64_t d = b.digit, s = b.separator;
  const std::uint64_t d_prev = (d << 1) | bit(before1, kDigit);
  const std::uint64_t d_prev2 = (d << 2) | (bit(before1, kDigit) << 1) | bit(before2, kDigit);
  const std::uint64_t d_next = (d >> 1) | (bit(after0, kDigit) << 63);
  const std::uint64_t d_next2 = (d >> 2) | (bit(after0, kDigit) << 62) | (bit(after1, kDigit) << 63);
  const std::uint64_t s_prev = (s << 1) | bit(before1, kSeparator);
  const std::uint64_t s_next = (s >> 1) | (bit(after0, kSeparator) << 63);
  f.numeric = d | ((s | b.x) & d_prev & d_next) | (s & d_prev & s_next & d_next2) |
              (s & s_prev & d_prev2 & d_next);
  // hex: hex digits and colons, dashes and dots between hex digits.
  const std::uint64_t h = b.hex;
  const std::uint64_t h_prev = (h << 1) | bit(before1, kHex);
  const std::uint64_t h_next = (h >> 1) | (bit(after0, kHex) << 63);
  f.hex = h | b.colon | (b.dash_dot & h_prev & h_next);
  // iban: letter letter digit digit, not preceded by a letter or digit.
  const std::uint64_t a = b.alpha;
  const std::uint64_t a_next = (a >> 1) | (bit(after0, kAlpha) << 63);
  const std::uint64_t d_next3 = (d >> 3) | (bit(after0, kDigit) << 61) |
                                (bit(after1, kDigit) << 62) | (bit(after2, kDigit) << 63);
  const std::uint64_t alnum_prev = ((a | d) << 1) | bit(before1, kAlpha) | bit(before1, kDigit);
  f.iban = a & a_next & d_next2 & d_next3 & ~alnum_prev;
  f.base64 = b.base64;
  return f;
}

// Bits at or after `cursor` (relative to a block at `base`), within the data.
std::uint64_t bits_from(std::size_t cursor, std::size_t base, std::size_t size) {
  std::uint64_t m = ~std::uint64_t{0};
  if (cursor > base) m = cursor - base >= 64 ? 0 : m << (cursor - base);
  if (size < base + 64) m &= size <= base ? 0 : (~std::uint64_t{0} >> (64 - (size - base)));
  return m;
}

void collect_iban_starts(std::uint64_t m, std::size_t base, std::size_t size, bool at_end,
                         std::vector<std::size_t>& out, std::size_t& deferred) {
  while (m != 0) {
    std::size_t k = base + static_cast<std::size_t>(__builtin_ctzll(m));
    m &= m - 1;
    if (!at_end && k + kIbanLookahead > size)
      deferred = std::min(deferred, k);
    else
      out.push_back(k);
  }
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
  const std::size_t size = data.size();
  RunSink numeric(size, at_end, kMinNumericRun, kMaxNumericRun, out.numeric);
  RunSink hex(size, at_end, kMinHexRun, kMaxHexRun, out.hex);
  RunSink base64(size, at_end, families.base64_min_length, kMaxBase64Run, out.base64);
  MaskRunCollector numeric_runs(numeric, size), hex_runs(hex, size), base64_runs(base64, size);
  std::size_t iban_deferred = kNone;

  std::size_t begin = size;
  if (families.numeric) begin = std::min(begin, cursor.numeric);
  if (families.hex) begin = std::min(begin, cursor.hex);
  if (families.iban) begin = std::min(begin, cursor.iban);
  if (families.base64) begin = std::min(begin, cursor.base64);

  alignas(16) unsigned char tail[64];
  for (std::size_t base = begin; base < size; base += 64) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data()) + base;
    if (size - base < 64) {  // the last, partial block: pad with bytes that belong to nothing
      std::memset(tail, 0, sizeof tail);
      std::memcpy(tail, p, size - base);
      p = tail;
    }
    const FamilyMasks f = family_masks(data, base, classify_block(p));
    if (families.numeric) numeric_runs.block(f.numeric & bits_from(cursor.numeric, base, size), base);
    if (families.hex) hex_runs.block(f.hex & bits_from(cursor.hex, base, size), base);
    if (families.base64) base64_runs.block(f.base64 & bits_from(cursor.base64, base, size), base);
    if (families.iban)
      collect_iban_starts(f.iban & bits_from(cursor.iban, base, size), base, size, at_end,
                          out.iban_starts, iban_deferred);
  }
  numeric_runs.finish(size);
  hex_runs.finish(size);
  base64_runs.finish(size);

  if (families.numeric) cursor.numeric = next_cursor(numeric.deferred(), cursor.numeric, size, at_end);
  if (families.hex) cursor.hex = next_cursor(hex.deferred(), cursor.hex, size, at_end);
  if (families.base64) cursor.base64 = next_cursor(base64.deferred(), cursor.base64, size, at_end);
  if (families.iban) cursor.iban = next_cursor(iban_deferred, cursor.iban, size, at_end);
}

void lex_runs_reference(std::string_view data, LexCursor& cursor, bool at_end,
                        const RunFamilies& families, LexedRuns& out) {
  const std::size_t size = data.size();
  if (families.numeric) {
    RunSink sink(size, at_end, kMinNumericRun, kMaxNumericRun, out.numeric);
    collect_reference(data, cursor.numeric, numeric_member, sink);
    cursor.numeric = next_cursor(sink.deferred(), cursor.numeric, size, at_end);
  }
  if (families.hex) {
    RunSink sink(size, at_end, kMinHexRun, kMaxHexRun, out.hex);
    collect_reference(data, cursor.hex, hex_member, sink);
    cursor.hex = next_cursor(sink.deferred(), cursor.hex, size, at_end);
  }
  if (families.base64) {
    RunSink sink(size, at_end, families.base64_min_length, kMaxBase64Run, out.base64);
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
