// Streaming: chunks go through Vectorscan's stream mode (so matches across chunk boundaries are
// reported) and the run lexer (which resumes where a run may still grow). The scanner keeps the
// bytes a match may still need and settles the stream up to a cut point:
//   frontier  no match that is not found yet can start before it (the longest match before the
//             current end, unconfirmed hits, runs that may grow, literals);
//   cut       the frontier moved back to the start of any candidate that crosses it.
// Nothing crosses the cut, so resolving overlaps on each side separately gives what a one-shot
// scan gives; the text before the cut is final and is returned with the actions applied.
#include <algorithm>
#include <optional>

#include "dlp/findings.hpp"
#include "dlp/redaction.hpp"
#include "dlp/scanner.hpp"
#include "dlp/scanner_internal.hpp"

namespace airlock::dlp {

using detail::Candidate;
using detail::Confirmation;
using detail::Hit;

namespace {

// Past this much held-back text, a chain of overlapping candidates is cut (see settle()). Above
// the longest single match (a 16 KiB PEM block), so only chains reach it.
constexpr std::size_t kMaxHeldBytes = 32 * 1024;

bool by_start(const Candidate& a, const Candidate& b) { return a.start < b.start; }

}  // namespace

struct StreamScanner::State {
  std::shared_ptr<const Scanner::Compiled> scanner;
  std::optional<LiteralSet> literals;
  detail::DetectorSet::StreamHandle detector_stream;
  detail::Stream literal_stream;

  std::string window;    // stream bytes from offset `base`
  std::size_t base = 0;
  std::size_t emitted = 0;          // stream offset up to which text has been returned
  std::vector<Hit> pending_hits;    // Vectorscan hits waiting for more bytes
  std::vector<Candidate> pending;   // confirmed candidates after the last cut
  std::size_t sorted = 0;           // pending[0, sorted) is in start order
  detail::LexCursor cursor;         // stream offsets
  bool blocked = false;
  bool finished = false;

  const detail::DetectorSet& detectors() const { return *scanner->detectors; }
  std::size_t total() const { return base + window.size(); }

  void scan_chunk(std::string_view chunk);
  void close_streams();
  StreamOutput settle(bool at_end);

 private:
  void confirm_pending_hits(const detail::Window& window_view);
  void match_new_runs(const detail::Window& window_view, bool at_end);
  std::size_t frontier(bool at_end) const;
  std::size_t cut_before_crossing(std::size_t frontier);
  void keep_after(std::size_t text_end);
  void trim(std::size_t keep_from);
};

void StreamScanner::State::scan_chunk(std::string_view chunk) {
  window.append(chunk);
  if (detector_stream.stream) {
    auto lease = detector_stream.scratch->acquire();
    detail::scan_stream(detector_stream.stream.get(), chunk.data(), static_cast<unsigned>(chunk.size()),
                        lease.get(), detail::DetectorSet::on_hit, &pending_hits);
  }
  if (literal_stream) {
    const auto& compiled = literals->compiled();
    std::vector<Hit> hits;
    auto lease = compiled.scratch->acquire();
    detail::scan_stream(literal_stream.get(), chunk.data(), static_cast<unsigned>(chunk.size()),
                        lease.get(), detail::DetectorSet::on_hit, &hits);
    for (const Hit& hit : hits) pending.push_back(detail::literal_candidate(detectors(), compiled, hit));
  }
}

void StreamScanner::State::close_streams() {
  if (detector_stream.stream) {
    auto lease = detector_stream.scratch->acquire();
    detail::close_stream(detector_stream.stream.release(), lease.get(), detail::DetectorSet::on_hit,
                         &pending_hits);
  }
  if (literal_stream) {
    auto lease = literals->compiled().scratch->acquire();
    detail::close_stream(literal_stream.release(), lease.get(), nullptr, nullptr);
  }
}

void StreamScanner::State::confirm_pending_hits(const detail::Window& window_view) {
  std::vector<Hit> waiting;
  for (const Hit& hit : pending_hits) {
    Candidate candidate;
    switch (detectors().confirm(window_view, hit, candidate)) {
      case Confirmation::candidate: pending.push_back(candidate); break;
      case Confirmation::need_more_data: waiting.push_back(hit); break;
      case Confirmation::rejected: break;
    }
  }
  pending_hits = std::move(waiting);
}

void StreamScanner::State::match_new_runs(const detail::Window& window_view, bool at_end) {
  detail::LexCursor local = cursor;
  local.shift_back(base);
  detail::LexedRuns runs;
  detail::lex_runs(window, local, at_end, detectors().run_families(), runs);
  detectors().match_runs(window_view, runs, pending);
  cursor = {local.numeric + base, local.hex + base, local.iban + base, local.base64 + base};
}

std::size_t StreamScanner::State::frontier(bool at_end) const {
  const std::size_t end = total();
  if (at_end) return end;
  std::size_t f = end;
  auto earliest_start = [](std::size_t match_end, std::size_t width) {
    return match_end > width ? match_end - width : 0;
  };
  if (detector_stream.stream) f = std::min(f, earliest_start(end + 1, detectors().max_match_width()));
  for (const Hit& hit : pending_hits)
    f = std::min(f, earliest_start(hit.end, detectors().detector(hit.detector).max_width));
  if (literals && literal_stream)
    f = std::min(f, earliest_start(end + 1, literals->compiled().max_length));
  // A run's matches may start one byte before it ("(" or "+").
  const auto& families = detectors().run_families();
  auto run_start = [](std::size_t c) { return c > 0 ? c - 1 : 0; };
  if (families.numeric) f = std::min(f, run_start(cursor.numeric));
  if (families.hex) f = std::min(f, run_start(cursor.hex));
  if (families.iban) f = std::min(f, run_start(cursor.iban));
  if (families.base64) f = std::min(f, run_start(cursor.base64));
  return std::max(f, emitted);
}

std::size_t StreamScanner::State::cut_before_crossing(std::size_t cut) {
  // New candidates arrive mostly in order: sort them and merge them in.
  std::sort(pending.begin() + static_cast<std::ptrdiff_t>(sorted), pending.end(), by_start);
  std::inplace_merge(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(sorted),
                     pending.end(), by_start);
  sorted = pending.size();
  // Move back over candidates that cross the cut, latest start first: each move can only
  // expose candidates that start earlier.
  for (auto it = pending.rbegin(); it != pending.rend(); ++it)
    if (it->start < cut && it->end > cut) cut = it->start;
  return std::max(cut, emitted);
}

// After a forced cut the text up to `text_end` has been returned: candidates keep only their
// part after it (cut short, so that nothing they cover leaves unredacted).
void StreamScanner::State::keep_after(std::size_t text_end) {
  std::vector<Candidate> kept;
  for (Candidate c : pending) {
    if (c.end <= text_end) continue;
    c.start = std::max(c.start, text_end);
    kept.push_back(c);
  }
  pending = std::move(kept);
  std::sort(pending.begin(), pending.end(), by_start);
  sorted = pending.size();
}

void StreamScanner::State::trim(std::size_t keep_from) {
  if (keep_from <= base) return;
  window.erase(0, keep_from - base);
  base = keep_from;
}

StreamOutput StreamScanner::State::settle(bool at_end) {
  const detail::Window window_view{window, base, at_end};
  confirm_pending_hits(window_view);
  match_new_runs(window_view, at_end);
  // Only after a forced cut can a new candidate start in text already returned.
  if (std::any_of(pending.begin() + static_cast<std::ptrdiff_t>(sorted), pending.end(),
                  [&](const Candidate& c) { return c.start < emitted; }))
    keep_after(emitted);

  const std::size_t reach = frontier(at_end);
  std::size_t cut = cut_before_crossing(reach);
  // Candidates that overlap one another in an endless chain ("a@b.cda@b.cda@b.cd...") would hold
  // everything back: past kMaxHeldBytes the cut is forced to the frontier and the candidates
  // crossing it are settled whole (the only case where a stream may differ from a one-shot scan).
  const bool forced = !at_end && cut < reach && total() - emitted > kMaxHeldBytes;
  if (forced) cut = reach;
  // In start order, what settles is a prefix: nothing that starts before the cut crosses it
  // (unless the cut was forced, and then it settles anyway).
  auto settled_end = std::partition_point(pending.begin(), pending.end(),
                                          [&](const Candidate& c) { return c.start < cut; });
  std::vector<Candidate> settled(pending.begin(), settled_end);
  pending.erase(pending.begin(), settled_end);
  sorted = pending.size();

  StreamOutput out;
  out.findings = detail::settle(detectors(), scanner->policy, std::move(settled));
  std::size_t text_end = cut;
  for (const Finding& f : out.findings) text_end = std::max(text_end, f.end);
  if (text_end > cut) keep_after(text_end);
  blocked = blocked || std::any_of(out.findings.begin(), out.findings.end(),
                                   [](const Finding& f) { return f.action == Action::block; });
  if (!blocked)
    detail::append_with_actions(std::string_view(window).substr(emitted - base, text_end - emitted),
                                emitted, out.findings, scanner->policy.hash_key, out.text);
  out.blocked = blocked;
  emitted = text_end;

  const std::size_t lookbehind = detectors().lookbehind();
  trim(std::min(emitted, reach > lookbehind ? reach - lookbehind : 0));
  return out;
}

StreamScanner::StreamScanner(std::unique_ptr<State> state) : state_(std::move(state)) {}
StreamScanner::StreamScanner(StreamScanner&&) noexcept = default;
StreamScanner& StreamScanner::operator=(StreamScanner&&) noexcept = default;
StreamScanner::~StreamScanner() = default;

StreamOutput StreamScanner::write(std::string_view chunk) {
  if (state_->finished) return {};
  state_->scan_chunk(chunk);
  return state_->settle(false);
}

StreamOutput StreamScanner::finish() {
  if (state_->finished) return {};
  state_->finished = true;
  state_->close_streams();
  return state_->settle(true);
}

std::size_t StreamScanner::buffered_bytes() const { return state_->window.size(); }

Result<StreamScanner> Scanner::open_stream(const LiteralSet* literals) const {
  auto state = std::make_unique<StreamScanner::State>();
  state->scanner = compiled_;
  auto handle = compiled_->detectors->open_stream();
  if (!handle) return handle.error();
  state->detector_stream = std::move(*handle);
  if (literals && literals->compiled().stream_database) {
    state->literals = *literals;
    hs_stream_t* stream = nullptr;
    if (detail::open_stream(literals->compiled().stream_database.get(), &stream) != HS_SUCCESS)
      return Error::make("dlp_stream", "Vectorscan could not open a literal stream");
    state->literal_stream.reset(stream);
  }
  return StreamScanner(std::move(state));
}

}  // namespace airlock::dlp
