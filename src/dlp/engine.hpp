// The compiled detector set: the policy applied to the detector table, the Vectorscan
// databases, the RE2 confirmers, and the steps that turn bytes into candidates:
//   1. one Vectorscan pass reports (detector, match end) for every anchored detector;
//   2. at each end, RE2 finds the leftmost start (and the value group), then boundaries,
//      extension, validator and context words decide;
//   3. the run lexer finds digit, hex, IBAN and base64 runs; shape matchers and validators
//      decide for the anchorless detectors.
// Offsets in Hit and Candidate are absolute (stream offsets); a Window says where its bytes are.
#pragma once

#include <re2/re2.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "dlp/detectors.hpp"
#include "dlp/policy.hpp"
#include "dlp/run_lexer/run_lexer.hpp"
#include "dlp/vectorscan/vectorscan.hpp"

namespace airlock::dlp::detail {

// Encodings a registered literal is searched in; each reports as its own detector.
enum class LiteralEncoding : std::uint8_t { raw, base64, base64url, hex, url };
inline constexpr std::size_t kLiteralEncodings = 5;

// Context words, lower case; first_letters has bit (c - 'a') for each word's first letter.
struct ContextWords {
  std::vector<std::string> words;
  std::uint32_t first_letters = 0;
};

// An anchored detector's RE2 confirmer: its pattern anchored with `$` at the match end, which
// finds the leftmost start (and the value group). Compiled on the detector's first hit, once,
// whichever scan thread gets there first: compiling all of them up front was a third of a
// short `airlock scan`'s CPU, and most inputs hit few detectors.
class Confirmer {
 public:
  explicit Confirmer(std::string expression) : expression_(std::move(expression)) {}
  struct Compiled {
    std::unique_ptr<re2::RE2> regex;  // ok() unless RE2 refused the pattern
    bool has_value_group = false;
  };
  const Compiled& get() const;
  const std::string& expression() const { return expression_; }

 private:
  std::string expression_;
  mutable std::once_flag once_;
  mutable Compiled compiled_;
};

struct CompiledDetector {
  std::string_view id;
  Category category = Category::secret;
  std::string_view label;
  Action action = Action::redact;
  double threshold = 0.5;  // confidence `action` needs (the policy's, or this detector's own)
  double reportable = 0.5;  // the least confidence any finding of this detector is kept at
  bool enabled = true;
  const DetectorSpec* spec = nullptr;  // null for the literal detectors
  ValidatorSettings settings;
  ContextWords context_words;
  std::unique_ptr<Confirmer> exact;  // Engine::vectorscan (null for the others)
  unsigned max_width = 0;            // Engine::vectorscan: the longest match
};

struct Hit {
  std::uint32_t detector = 0;
  std::size_t end = 0;
};

struct Candidate {
  std::uint32_t detector = 0;
  std::size_t start = 0, end = 0;
  double confidence = 0;
  bool example = false;
  friend bool operator==(const Candidate&, const Candidate&) = default;
};

struct Window {
  std::string_view bytes;
  std::size_t base = 0;  // absolute offset of bytes[0]
  bool at_end = true;    // no bytes follow
  std::size_t end() const { return base + bytes.size(); }
};

enum class Confirmation { candidate, rejected, need_more_data };

// One Vectorscan block-mode pass of `database` over `data`; hits carry the pattern id.
void scan_for_hits(const hs_database_t* database, ScratchPool& scratch, std::string_view data,
                   std::vector<Hit>& hits);

class DetectorSet {
 public:
  // `database_cache`: where compiled databases are kept between processes ("" for nowhere).
  static Result<std::unique_ptr<DetectorSet>> build(const Policy& policy,
                                                    const std::string& database_cache = {});
  // The block database came from the cache (for tests: a scanner is the same either way).
  bool block_database_from_cache() const { return block_from_cache_; }

  const std::vector<CompiledDetector>& detectors() const { return detectors_; }
  const CompiledDetector& detector(std::uint32_t index) const { return detectors_[index]; }
  std::uint32_t literal_detector(LiteralEncoding encoding) const {
    return literal_base_ + static_cast<std::uint32_t>(encoding);
  }

  // Step 1, whole buffer at once. Hits come in end order.
  void find_hits(std::string_view data, std::vector<Hit>& hits) const;
  // Step 1 for streams: the stream database is compiled on first use. The stream is null when
  // no anchored detector is enabled.
  struct StreamHandle {
    Stream stream;
    ScratchPool* scratch = nullptr;
  };
  Result<StreamHandle> open_stream() const;
  // hs_scan callback: appends a Hit to the std::vector<Hit> in `context`.
  static int on_hit(unsigned id, unsigned long long from, unsigned long long to, unsigned flags,
                    void* context);

  // Step 2.
  Confirmation confirm(const Window& window, Hit hit, Candidate& out) const;

  // Step 3.
  const RunFamilies& run_families() const { return families_; }
  void match_runs(const Window& window, const LexedRuns& runs, std::vector<Candidate>& out) const;

  // How far before the current end a match that is not reported yet may start, and how many
  // bytes before a match the checks look at (context words, boundaries).
  std::size_t max_match_width() const { return max_width_; }
  std::size_t lookbehind() const { return lookbehind_; }
  // How far past a candidate's start the checks that decide it may read: the longest match, its
  // extension (a PEM block), the lexer's and the shape matchers' look-ahead.
  std::size_t lookahead() const { return lookahead_; }

  // Compiles every enabled detector's confirmer now (they are otherwise compiled on first hit);
  // an error names the first pattern RE2 refuses. For tests and callers that want to know early.
  Status compile_confirmers() const;

 private:
  DetectorSet() = default;
  Status compile_vectorscan(const std::string& database_cache);
  Status prepare_confirmers(const std::vector<unsigned>& widths);
  Confirmation confirm_unparsed(const CompiledDetector& d, const Window& window, Hit hit,
                                Candidate& out) const;
  Status self_check() const;
  void index_run_engines();
  void add_candidate(std::uint32_t index, const Window& window, std::size_t match_start,
                     std::size_t value_start, std::size_t value_end, double confidence_delta,
                     std::vector<Candidate>& out) const;
  bool confirm_value(const CompiledDetector& detector, const Window& window,
                     std::size_t match_start, std::size_t value_start, std::size_t value_end,
                     double confidence_delta, Candidate& out) const;
  double context_boost(const CompiledDetector& detector, const Window& window,
                       std::size_t match_start, std::size_t match_end) const;

  std::vector<CompiledDetector> detectors_;
  std::uint32_t literal_base_ = 0;
  std::vector<PatternSpec> patterns_;  // the anchored detectors, for both databases
  Database block_database_;
  bool block_from_cache_ = false;
  std::unique_ptr<ScratchPool> scratch_ = std::make_unique<ScratchPool>();
  mutable std::once_flag stream_compiled_;
  mutable Database stream_database_;
  mutable Status stream_status_;
  mutable std::unique_ptr<ScratchPool> stream_scratch_ = std::make_unique<ScratchPool>();
  RunFamilies families_;
  std::array<std::vector<std::uint32_t>, 5> by_engine_;  // enabled detectors, by Engine
  std::size_t max_width_ = 0;
  std::size_t lookbehind_ = 0;
  std::size_t lookahead_ = 0;
  std::size_t context_window_ = 48;
};

}  // namespace airlock::dlp::detail
