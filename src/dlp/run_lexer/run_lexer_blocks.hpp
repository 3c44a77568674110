// The block loop of the run lexer, shared by the baseline (SSE2) build in run_lexer.cpp and the
// AVX2 build in run_lexer_avx2.cpp: each includes it once, with its own classifier. Everything
// here has internal linkage, so the two builds never mix.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "dlp/run_lexer/run_lexer.hpp"

namespace airlock::dlp::detail {

// The AVX2 build (defined when the compiler targets x86-64).
void lex_runs_avx2(std::string_view data, LexCursor& cursor, bool at_end,
                   const RunFamilies& families, LexedRuns& out);

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
inline std::uint8_t class_at(std::string_view data, std::ptrdiff_t i) {
  if (i < 0 || static_cast<std::size_t>(i) >= data.size()) return 0;
  return kClass[static_cast<unsigned char>(data[static_cast<std::size_t>(i)])];
}
inline char byte_at(std::string_view data, std::ptrdiff_t i) {
  if (i < 0 || static_cast<std::size_t>(i) >= data.size()) return '\0';
  return data[static_cast<std::size_t>(i)];
}

// ---- run collection ----

// Which runs of a family are worth reporting, beyond their length.
enum class RunFilter {
  any,
  // Hex runs: an IPv6 address has "::" or seven colons, a MAC address five colons or is 14 or
  // 17 long; the hashes, UUIDs, dates and times that make up most hex runs are dropped here.
  address_like,
};

// What the lexer counts inside a run: colons, and whether two are adjacent.
struct Colons {
  std::size_t count = 0;
  bool double_colon = false;
  Colons& operator+=(const Colons& other) {
    count += other.count;
    double_colon |= other.double_colon;
    return *this;
  }
};
constexpr Colons kPieceColons{7, true};  // pieces of an over-long run are always kept

// Reports runs of one family: pieces of at most `cap` bytes, at least `min` long; holds back
// (and remembers the start of) any run that could still grow when more data arrives.
class RunSink {
 public:
  RunSink(std::size_t size, bool at_end, std::size_t min, std::size_t cap, RunFilter filter,
          std::vector<Span>& out)
      : size_(size), at_end_(at_end), min_(min), cap_(cap), filter_(filter), out_(out) {}

  void run(std::size_t start, std::size_t end, Colons colons) {
    while (end - start > cap_) {
      piece(start, start + cap_, kPieceColons);
      start += cap_;
      colons = kPieceColons;
    }
    piece(start, end, colons);
  }
  std::size_t min_length() const { return min_; }
  std::size_t cap() const { return cap_; }
  std::size_t deferred() const { return deferred_; }

 private:
  void piece(std::size_t start, std::size_t end, Colons colons) {
    if (!at_end_ && end + kRunLookahead > size_) {
      deferred_ = std::min(deferred_, start);
      return;
    }
    const std::size_t length = end - start;
    if (length < min_) return;
    if (filter_ == RunFilter::address_like && !colons.double_colon && colons.count < 5 &&
        length != 14 && length != 17)
      return;
    out_.push_back({start, end});
  }
  std::size_t size_;
  bool at_end_;
  std::size_t min_, cap_;
  RunFilter filter_;
  std::vector<Span>& out_;
  std::size_t deferred_ = kNone;
};

inline std::size_t next_cursor(std::size_t deferred, std::size_t cursor, std::size_t size, bool at_end) {
  if (at_end) return size;
  std::size_t undecided = size >= kRunLookahead ? size - kRunLookahead : 0;
  return std::max(cursor, std::min(deferred, undecided));
}

// ---- the SIMD path ----

// Bits where a run of at least `length` set bits begins (runs are cut at the top of the word).
inline std::uint64_t long_run_starts(std::uint64_t m, std::size_t length) {
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

  // m: members of the family; colons: ':' bytes (counted for the hex family, 0 otherwise).
  void block(std::uint64_t m, std::uint64_t colons, std::size_t base) {
    // "::": a colon whose previous byte (in this block or the last) is a colon.
    const std::uint64_t double_colons = colons & ((colons << 1) | previous_colon_);
    previous_colon_ = colons >> 63;
    if (open_) {
      if (m == ~std::uint64_t{0}) {
        open_colons_ += colons_in(colons, double_colons, ~std::uint64_t{0}, true);
        flush_full_pieces(base + 64);
        return;
      }
      unsigned k = static_cast<unsigned>(__builtin_ctzll(~m));
      std::uint64_t run_bits = k == 0 ? 0 : (~std::uint64_t{0} >> (64 - k));
      open_colons_ += colons_in(colons, double_colons, run_bits, true);
      sink_.run(start_, base + k, open_colons_);
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
        open_at(base + s, colons_in(colons, double_colons, ~std::uint64_t{0} << s));
        return;
      }
      unsigned length = static_cast<unsigned>(__builtin_ctzll(~from_s));
      std::uint64_t run_bits = ((std::uint64_t{1} << length) - 1) << s;
      sink_.run(base + s, base + s + length, colons_in(colons, double_colons, run_bits));
      starts &= starts - 1;
    }
    if (m >> 63) {  // a run too short so far, that may continue in the next block
      unsigned trailing = static_cast<unsigned>(__builtin_clzll(~m));
      open_at(base + 64 - trailing, colons_in(colons, double_colons, ~std::uint64_t{0} << (64 - trailing)));
    }
  }

  void finish(std::size_t end) {
    if (open_) sink_.run(start_, end, open_colons_);
    open_ = false;
  }

 private:
  // `continues`: the run began in an earlier block, so its first byte here has its predecessor
  // in the run too.
  static Colons colons_in(std::uint64_t colons, std::uint64_t double_colons, std::uint64_t run_bits,
                          bool continues = false) {
    // A "::" whose first colon is before the run is not inside the run.
    const std::uint64_t inside_doubles =
        double_colons & run_bits & ((run_bits << 1) | (continues ? 1 : 0));
    return {static_cast<std::size_t>(__builtin_popcountll(colons & run_bits)), inside_doubles != 0};
  }
  void open_at(std::size_t start, Colons colons) {
    open_ = true;
    start_ = start;
    open_colons_ = colons;
  }
  // A run longer than the cap is reported piece by piece as it grows.
  void flush_full_pieces(std::size_t end) {
    while (end - start_ > sink_.cap()) {
      sink_.run(start_, start_ + sink_.cap(), kPieceColons);
      start_ += sink_.cap();
      open_colons_ = kPieceColons;
    }
  }
  RunSink& sink_;
  std::size_t size_;
  bool open_ = false;
  Colons open_colons_;
  std::uint64_t previous_colon_ = 0;
  std::size_t start_ = 0;
};

struct BlockMasks {
  std::uint64_t digit = 0, separator = 0, x = 0, hex = 0, colon = 0, dash_dot = 0, alpha = 0,
                base64 = 0;
};

struct FamilyMasks {
  std::uint64_t numeric = 0, hex = 0, iban = 0, base64 = 0, colon = 0;
};

inline FamilyMasks family_masks(std::string_view data, std::size_t base, const BlockMasks& b) {
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
  f.colon = b.colon;
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
inline std::uint64_t bits_from(std::size_t cursor, std::size_t base, std::size_t size) {
  std::uint64_t m = ~std::uint64_t{0};
  if (cursor > base) m = cursor - base >= 64 ? 0 : m << (cursor - base);
  if (size < base + 64) m &= size <= base ? 0 : (~std::uint64_t{0} >> (64 - (size - base)));
  return m;
}

inline void collect_iban_starts(std::uint64_t m, std::size_t base, std::size_t size, bool at_end,
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

template <typename Classifier>
inline void lex_blocks(std::string_view data, LexCursor& cursor, bool at_end,
                       const RunFamilies& families, LexedRuns& out, Classifier classify_block) {
  const std::size_t size = data.size();
  RunSink numeric(size, at_end, kMinNumericRun, kMaxNumericRun, RunFilter::any, out.numeric);
  RunSink hex(size, at_end, kMinHexRun, kMaxHexRun, RunFilter::address_like, out.hex);
  RunSink base64(size, at_end, families.base64_min_length, kMaxBase64Run, RunFilter::any, out.base64);
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
    const FamilyMasks f = family_masks(data, base, classify_block(p, families.base64));
    if (families.numeric)
      numeric_runs.block(f.numeric & bits_from(cursor.numeric, base, size), 0, base);
    if (families.hex) hex_runs.block(f.hex & bits_from(cursor.hex, base, size), f.colon, base);
    if (families.base64)
      base64_runs.block(f.base64 & bits_from(cursor.base64, base, size), 0, base);
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

}  // namespace
}  // namespace airlock::dlp::detail
