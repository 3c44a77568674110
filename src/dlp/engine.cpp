#include "dlp/engine.hpp"

#include <algorithm>
#include <array>

#include "dlp/vectorscan/database_cache.hpp"

namespace airlock::dlp::detail {
namespace {

constexpr std::size_t kPrecedingBytes = 128;  // what a PrecedingCheck sees

constexpr std::array<std::string_view, kLiteralEncodings> kLiteralIds{
    "literal", "literal_base64", "literal_base64url", "literal_hex", "literal_url"};

ContextWords split_words(std::string_view words) {
  ContextWords out;
  while (!words.empty()) {
    auto bar = words.find('|');
    out.words.emplace_back(words.substr(0, bar));
    out.first_letters |= std::uint32_t{1} << (out.words.back()[0] - 'a');
    if (bar == std::string_view::npos) break;
    words.remove_prefix(bar + 1);
  }
  return out;
}

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Lower-case letter of a byte, or 0 if it is not a letter.
constexpr std::array<char, 256> make_letter_table() {
  std::array<char, 256> table{};
  for (int c = 'a'; c <= 'z'; ++c) table[static_cast<std::size_t>(c)] = static_cast<char>(c);
  for (int c = 'A'; c <= 'Z'; ++c) table[static_cast<std::size_t>(c)] = static_cast<char>(c - 'A' + 'a');
  return table;
}
constexpr auto kLetter = make_letter_table();
char letter_of(char c) { return kLetter[static_cast<unsigned char>(c)]; }

// A context word counts as a word: not inside another word; plural and -ing forms allowed.
// `text` is compared case-insensitively (the words are lower case).
bool word_at(std::string_view text, std::size_t at, std::string_view word) {
  if (text.size() - at < word.size()) return false;
  for (std::size_t i = 1; i < word.size(); ++i) {
    char c = text[at + i];
    if (word[i] != (letter_of(c) ? letter_of(c) : c)) return false;
  }
  std::size_t tail = at + word.size();
  std::size_t letters = 0;
  while (tail + letters < text.size() && letters < 4 && letter_of(text[tail + letters])) ++letters;
  if (letters == 0) return true;
  char suffix[4];
  for (std::size_t i = 0; i < letters; ++i) suffix[i] = letter_of(text[tail + i]);
  std::string_view s(suffix, letters);
  bool more = tail + letters < text.size() && letter_of(text[tail + letters]);
  return !more && (s == "s" || s == "es" || s == "ing" || s == "ed");
}

// Scans backwards: the word that gives context is usually right before the match.
bool contains_context_word(std::string_view text, const ContextWords& words) {
  for (std::size_t at = text.size(); at-- > 0;) {
    const char first = letter_of(text[at]);
    if (!first || (at > 0 && letter_of(text[at - 1]))) continue;  // not the start of a word
    if (!(words.first_letters & (std::uint32_t{1} << (first - 'a')))) continue;
    for (const auto& word : words.words)
      if (word[0] == first && word_at(text, at, word)) return true;
  }
  return false;
}

// Digits stuck to a letter with no separator inside ("ae0755281f" in a hash): no numeric
// detector can start or end there.
bool glued_single_number(std::string_view data, const Span& run) {
  auto alnum = [](char c) { return is_alpha(c) || (c >= '0' && c <= '9'); };
  bool glued = (run.start > 0 && alnum(data[run.start - 1])) || (run.end < data.size() && alnum(data[run.end]));
  if (!glued) return false;
  for (std::size_t i = run.start; i < run.end; ++i)
    if (data[i] < '0' || data[i] > '9') return false;
  return true;
}

// Every numeric shape needs a clean edge: a group stuck to a letter ("2024-05-28T...") can only
// be left out. If what remains is under seven digits in fewer than four groups (an IPv4 address
// is the shortest shape), no detector can match.
bool too_little_left(std::string_view data, const Span& run, const std::vector<DigitGroup>& groups) {
  auto alnum = [](char c) { return is_alpha(c) || (c >= '0' && c <= '9'); };
  std::size_t first = 0, last = groups.size();
  if (run.start > 0 && alnum(data[run.start - 1])) ++first;
  if (run.end < data.size() && alnum(data[run.end])) --last;
  if (last <= first) return true;
  std::size_t digits = 0;
  for (std::size_t i = first; i < last; ++i) digits += groups[i].size();
  return digits < 7 && last - first < 4;
}

const ValidatorSettings& settings_or(const DetectorOverride* o, const DetectorSpec& spec,
                                     ValidatorSettings& storage) {
  storage.min_entropy = o && o->min_entropy ? *o->min_entropy : spec.min_entropy;
  storage.min_length = o && o->min_length ? *o->min_length : spec.min_length;
  return storage;
}

// A table detector with the policy's overrides applied.
CompiledDetector compile_detector(const DetectorSpec& spec, const Policy& policy) {
  auto found = policy.detectors.find(spec.id);
  const DetectorOverride* o = found == policy.detectors.end() ? nullptr : &found->second;
  CompiledDetector d;
  d.id = spec.id;
  d.category = spec.category;
  d.label = spec.label;
  d.spec = &spec;
  d.enabled = o && o->enabled ? *o->enabled : spec.enabled;
  d.action = o && o->action ? *o->action : spec.action;
  d.threshold = o && o->min_confidence ? *o->min_confidence : policy.threshold(d.action);
  // A block finding below its threshold may still be redacted.
  d.reportable = d.action == Action::block ? std::min(d.threshold, policy.threshold(Action::redact))
                                           : d.threshold;
  settings_or(o, spec, d.settings);
  d.context_words = split_words(spec.context);
  return d;
}

CompiledDetector compile_literal_detector(std::string_view id, const Policy& policy) {
  CompiledDetector d;
  d.id = id;
  d.category = Category::secret;
  d.label = "CREDENTIAL";
  d.action = policy.literal_action;
  d.threshold = policy.threshold(d.action);
  d.reportable = std::min(d.threshold, policy.threshold(Action::redact));
  return d;
}

}  // namespace

Result<std::unique_ptr<DetectorSet>> DetectorSet::build(const Policy& policy,
                                                        const std::string& database_cache) {
  std::unique_ptr<DetectorSet> set(new DetectorSet());
  set->context_window_ = policy.context_window;
  for (const DetectorSpec& spec : detector_table()) set->detectors_.push_back(compile_detector(spec, policy));
  set->literal_base_ = static_cast<std::uint32_t>(set->detectors_.size());
  for (auto id : kLiteralIds) set->detectors_.push_back(compile_literal_detector(id, policy));
  if (auto status = set->compile_vectorscan(database_cache); !status) return status.error();
  set->index_run_engines();
  // Context words, the preceding-bytes checks (128), boundary bytes, the lexer's look-behind
  // and "base64," before a run.
  set->lookbehind_ = std::max<std::size_t>(set->context_window_, kPrecedingBytes) + 8;
  // The longest match and its extension (a PEM block's END line is looked for within it), and
  // what the lexer and the shape matchers read past a run.
  std::size_t extension = 0;
  for (const CompiledDetector& d : set->detectors_)
    if (d.enabled && d.spec) extension = std::max(extension, d.spec->max_extension);
  set->lookahead_ = set->max_width_ + extension + std::max(kIbanLookahead, kRunLookahead) + 64;
  return set;
}

// Which run families the lexer must find, and which detectors look at each engine's runs.
void DetectorSet::index_run_engines() {
  for (std::uint32_t index = 0; index < literal_base_; ++index) {
    const CompiledDetector& d = detectors_[index];
    if (!d.enabled) continue;
    by_engine_[static_cast<std::size_t>(d.spec->engine)].push_back(index);
    switch (d.spec->engine) {
      case Engine::vectorscan: break;
      case Engine::numeric: families_.numeric = true; break;
      case Engine::hex: families_.hex = true; break;
      case Engine::iban: families_.iban = true; break;
      case Engine::base64:
        if (!families_.base64 || d.settings.min_length < families_.base64_min_length)
          families_.base64_min_length = std::max<std::size_t>(d.settings.min_length, 8);
        families_.base64 = true;
        break;
    }
  }
}

Status DetectorSet::compile_vectorscan(const std::string& database_cache) {
  for (std::uint32_t index = 0; index < literal_base_; ++index) {
    const CompiledDetector& d = detectors_[index];
    if (d.enabled && d.spec->engine == Engine::vectorscan)
      patterns_.push_back({std::string(d.spec->pattern), index, 0});
  }
  if (patterns_.empty()) return Status::success();
  auto entry = load_or_compile(patterns_, HS_MODE_BLOCK, database_cache, block_from_cache_);
  if (!entry) return entry.error();
  if (auto status = prepare_confirmers(entry->widths); !status) return status;
  block_database_ = std::move(entry->database);
  if (auto status = scratch_->grow_for(block_database_.get()); !status) return status;
  if (auto status = self_check(); status || !block_from_cache_) return status;
  // A cached database that misses an example is not used: compile afresh, check again, and
  // put the good one in its place.
  auto fresh = load_or_compile(patterns_, HS_MODE_BLOCK, "", block_from_cache_);
  if (!fresh) return fresh.error();
  if (auto status = prepare_confirmers(fresh->widths); !status) return status;
  block_database_ = std::move(fresh->database);
  if (auto status = scratch_->grow_for(block_database_.get()); !status) return status;
  if (auto status = self_check(); !status) return status;
  (void)DatabaseCache(database_cache).store(DatabaseCache::key(patterns_, HS_MODE_BLOCK),
                                            block_database_.get(), fresh->widths);
  return Status::success();
}

// Each anchored detector's longest match and its RE2 confirmer (the pattern anchored at the
// match end, which finds the start), compiled on the detector's first hit.
Status DetectorSet::prepare_confirmers(const std::vector<unsigned>& widths) {
  max_width_ = 0;
  for (std::size_t i = 0; i < patterns_.size(); ++i) {
    CompiledDetector& d = detectors_[patterns_[i].id];
    d.max_width = widths[i];
    if (d.max_width == 0)
      return Error::make("dlp_compile", "detector " + std::string(d.id) +
                                            ": the pattern must have a bounded length");
    d.exact = std::make_unique<Confirmer>("(?:" + patterns_[i].expression + ")$");
    max_width_ = std::max<std::size_t>(max_width_, d.max_width);
  }
  return Status::success();
}

const Confirmer::Compiled& Confirmer::get() const {
  std::call_once(once_, [this] {
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);  // bytes, like Vectorscan: any input
    options.set_log_errors(false);
    compiled_.regex = std::make_unique<RE2>(expression_, options);
    compiled_.has_value_group = compiled_.regex->ok() && compiled_.regex->NumberOfCapturingGroups() >= 1;
  });
  return compiled_;
}

Status DetectorSet::compile_confirmers() const {
  for (const CompiledDetector& d : detectors_) {
    if (!d.exact) continue;
    const auto& compiled = d.exact->get();
    if (!compiled.regex->ok())
      return Error::make("dlp_compile", "detector " + std::string(d.id) + ": " + compiled.regex->error());
  }
  return Status::success();
}

// Fail closed if the Vectorscan build misses matches (its AVX-512 code did, see vectorscan.hpp):
// every anchored detector must report its own example, set in a sentence long enough to take
// the library's long-buffer code paths.
Status DetectorSet::self_check() const {
  const std::string padding =
      "The quick brown fox jumps over the lazy dog while the build server compiles again: ";
  for (const PatternSpec& pattern : patterns_) {
    const CompiledDetector& d = detectors_[pattern.id];
    const std::string text = padding + std::string(d.spec->example) + " " + padding;
    std::vector<Hit> hits;
    find_hits(text, hits);
    bool found = std::any_of(hits.begin(), hits.end(), [&](const Hit& h) {
      return h.detector == pattern.id && h.end > padding.size() &&
             h.end <= padding.size() + d.spec->example.size();
    });
    if (!found)
      return Error::make("dlp_self_check", "Vectorscan did not find the example of detector " +
                                               std::string(d.id) + " (" + scan_dispatch() +
                                               "); refusing to scan with it");
  }
  return Status::success();
}

int DetectorSet::on_hit(unsigned id, unsigned long long, unsigned long long to, unsigned,
                        void* context) {
  static_cast<std::vector<Hit>*>(context)->push_back({id, static_cast<std::size_t>(to)});
  return 0;
}

void scan_for_hits(const hs_database_t* database, ScratchPool& scratch, std::string_view data,
                   std::vector<Hit>& hits) {
  if (!database || data.empty()) return;
  auto lease = scratch.acquire();
  // Vectorscan scans at most 4 GiB per call; offsets stay absolute across the slices (a match
  // across a slice boundary, 2 GiB into one buffer, is not found).
  constexpr std::size_t kSlice = std::size_t{1} << 31;
  for (std::size_t offset = 0; offset < data.size(); offset += kSlice) {
    std::size_t first = hits.size();
    std::size_t length = std::min(kSlice, data.size() - offset);
    scan(database, data.data() + offset, static_cast<unsigned>(length), lease.get(),
         DetectorSet::on_hit, &hits);
    for (std::size_t i = first; i < hits.size(); ++i) hits[i].end += offset;
  }
}

void DetectorSet::find_hits(std::string_view data, std::vector<Hit>& hits) const {
  scan_for_hits(block_database_.get(), *scratch_, data, hits);
}

Result<DetectorSet::StreamHandle> DetectorSet::open_stream() const {
  if (patterns_.empty()) return StreamHandle{};
  std::call_once(stream_compiled_, [this] {
    auto database = compile_database(patterns_, HS_MODE_STREAM);
    if (!database) {
      stream_status_ = database.error();
      return;
    }
    stream_database_ = std::move(*database);
    stream_status_ = stream_scratch_->grow_for(stream_database_.get());
  });
  if (!stream_status_) return stream_status_.error();
  hs_stream_t* stream = nullptr;
  if (detail::open_stream(stream_database_.get(), &stream) != HS_SUCCESS)
    return Error::make("dlp_stream", "Vectorscan could not open a stream");
  return StreamHandle{Stream(stream), stream_scratch_.get()};
}

double DetectorSet::context_boost(const CompiledDetector& detector, const Window& window,
                                  std::size_t match_start, std::size_t match_end) const {
  if (detector.context_words.words.empty() || !detector.spec || detector.spec->context_boost == 0) return 0;
  std::size_t local = match_start - window.base;
  std::size_t from = local > context_window_ ? local - context_window_ : 0;
  std::string_view before = window.bytes.substr(from, local - from);
  if (contains_context_word(before, detector.context_words)) return detector.spec->context_boost;
  if (detector.spec->context_after == 0) return 0;
  std::string_view after = window.bytes.substr(match_end - window.base, detector.spec->context_after);
  after = after.substr(0, after.find('\n'));
  return contains_context_word(after, detector.context_words) ? detector.spec->context_boost : 0;
}

bool DetectorSet::confirm_value(const CompiledDetector& d, const Window& window,
                                std::size_t match_start, std::size_t value_start,
                                std::size_t value_end, double confidence_delta,
                                Candidate& out) const {
  // Validators never raise confidence, so a candidate that cannot reach the lowest confidence
  // its detector reports at is dropped before the costlier checks.
  const double base = d.spec->confidence + confidence_delta;
  const bool has_context = !d.context_words.words.empty() && d.spec->context_boost > 0;
  if (base + (has_context ? d.spec->context_boost : 0) < d.reportable) return false;
  double boost = -1;  // not computed yet
  if (base < d.reportable) {
    boost = context_boost(d, window, match_start, value_end);
    if (base + boost < d.reportable) return false;
  }
  std::string_view value = window.bytes.substr(value_start - window.base, value_end - value_start);
  Assessment assessment{base, false};
  if (d.spec->validate && !d.spec->validate(value, d.settings, assessment)) return false;
  if (boost < 0) boost = context_boost(d, window, match_start, value_end);
  out.start = value_start;
  out.end = value_end;
  out.confidence = std::clamp(assessment.confidence + boost, 0.0, 1.0);
  out.example = assessment.example;
  return out.confidence >= d.reportable;
}

Confirmation DetectorSet::confirm(const Window& window, Hit hit, Candidate& out) const {
  // Only the ids of this set's anchored detectors (a database loaded from a cache is checked,
  // but it is a file: an id it reports for anything else is not followed).
  if (hit.detector >= literal_base_ || !detectors_[hit.detector].exact) return Confirmation::rejected;
  const CompiledDetector& d = detectors_[hit.detector];
  const DetectorSpec& spec = *d.spec;
  const Confirmer::Compiled& confirmer = d.exact->get();
  if (!confirmer.regex->ok()) return confirm_unparsed(d, window, hit, out);
  const std::size_t end = hit.end - window.base;  // local offsets from here on
  if (spec.right != Boundary::none) {
    if (end >= window.bytes.size()) {
      if (!window.at_end) return Confirmation::need_more_data;
    } else if (touches(spec.right, static_cast<unsigned char>(window.bytes[end]))) {
      return Confirmation::rejected;  // a longer token; its own end is another hit
    }
  }
  // The leftmost start of a match ending here (the pattern is anchored with $ at `end`).
  re2::StringPiece text(window.bytes.data(), end);
  std::array<re2::StringPiece, 2> groups;
  std::size_t search_from = end > d.max_width ? end - d.max_width : 0;
  if (!confirmer.regex->Match(text, search_from, end, RE2::UNANCHORED, groups.data(),
                              confirmer.has_value_group ? 2 : 1))
    return Confirmation::rejected;
  std::size_t match_start = static_cast<std::size_t>(groups[0].data() - window.bytes.data());
  if (match_start > 0 && touches(spec.left, static_cast<unsigned char>(window.bytes[match_start - 1])))
    return Confirmation::rejected;
  if (spec.preceding) {
    std::size_t from = match_start > kPrecedingBytes ? match_start - kPrecedingBytes : 0;
    if (!spec.preceding(window.bytes.substr(from, match_start - from))) return Confirmation::rejected;
  }
  std::size_t value_start = match_start, value_end = end;
  if (confirmer.has_value_group && groups[1].data() != nullptr) {
    value_start = static_cast<std::size_t>(groups[1].data() - window.bytes.data());
    value_end = value_start + groups[1].size();
  }
  if (spec.extend) {
    switch (spec.extend(window.bytes, match_start, value_end, window.at_end)) {
      case Extension::done: break;
      case Extension::need_more_data: return Confirmation::need_more_data;
      case Extension::reject: return Confirmation::rejected;
    }
  }
  out.detector = hit.detector;
  if (!confirm_value(d, window, window.base + match_start, window.base + value_start,
                     window.base + value_end, 0, out))
    return Confirmation::rejected;
  return Confirmation::candidate;
}

// A confirmer RE2 refused (the table's patterns all compile, dlp_test checks it; this is for a
// compile that fails at run time): fail closed, the widest match that can end at the hit is a
// finding that acts.
Confirmation DetectorSet::confirm_unparsed(const CompiledDetector& d, const Window& window, Hit hit,
                                           Candidate& out) const {
  out.detector = hit.detector;
  out.end = std::min(hit.end, window.end());
  out.start = std::max(window.base, out.end > d.max_width ? out.end - d.max_width : 0);
  out.confidence = std::max(d.spec->confidence, d.threshold);
  out.example = false;
  return Confirmation::candidate;
}

void DetectorSet::add_candidate(std::uint32_t index, const Window& window,
                                std::size_t match_start, std::size_t value_start,
                                std::size_t value_end, double confidence_delta,
                                std::vector<Candidate>& out) const {
  Candidate candidate;
  candidate.detector = index;
  if (confirm_value(detectors_[index], window, match_start, value_start, value_end,
                    confidence_delta, candidate))
    out.push_back(candidate);
}

void DetectorSet::match_runs(const Window& window, const LexedRuns& runs,
                             std::vector<Candidate>& out) const {
  std::vector<DigitGroup> groups;
  std::vector<ShapeMatch> matches;
  auto run_detectors = [&](Engine engine, const RunView& view) {
    for (std::uint32_t index : by_engine_[static_cast<std::size_t>(engine)]) {
      matches.clear();
      detectors_[index].spec->shape(view, matches);
      for (const ShapeMatch& m : matches)
        add_candidate(index, window, window.base + m.start, window.base + m.start,
                      window.base + m.end, m.confidence_delta, out);
    }
  };
  for (const Span& run : runs.numeric) {
    if (glued_single_number(window.bytes, run)) continue;
    split_digit_groups(window.bytes, run.start, run.end, groups);
    if (too_little_left(window.bytes, run, groups)) continue;
    run_detectors(Engine::numeric, RunView{window.bytes, run.start, run.end, groups});
  }
  for (const Span& run : runs.hex) run_detectors(Engine::hex, RunView{window.bytes, run.start, run.end, {}});
  for (const Span& run : runs.base64)
    run_detectors(Engine::base64, RunView{window.bytes, run.start, run.end, {}});
  for (std::size_t start : runs.iban_starts) {
    std::size_t end = std::min(window.bytes.size(), start + kIbanLookahead);
    run_detectors(Engine::iban, RunView{window.bytes, start, end, {}});
  }
}

}  // namespace airlock::dlp::detail
