#include "dlp/candidates.hpp"

#include <algorithm>
#include <future>
#include <system_error>

#include "dlp/scanner_internal.hpp"

namespace airlock::dlp::detail {
namespace {

// Lexes the window from `begin` and matches the runs a block at a time, as a stream would: the
// runs of a whole piece of digit-dense logs made a vector of tens of MB (grown by copying, every
// page faulted in), where a block's runs fit in the cache.
void match_runs_by_block(const DetectorSet& detectors, const Window& window, std::size_t begin,
                         std::vector<Candidate>& out) {
  constexpr std::size_t kBlock = std::size_t{256} << 10;
  LexedRuns runs;
  LexCursor cursor;
  cursor.numeric = cursor.hex = cursor.iban = cursor.base64 = begin;
  for (std::size_t end = begin;;) {
    end = std::min(window.bytes.size(), end + kBlock);
    const bool last = end == window.bytes.size();
    // Not at the end, the lexer keeps back the runs that may still grow, as for a stream.
    lex_runs(window.bytes.substr(0, end), cursor, last && window.at_end, detectors.run_families(), runs);
    detectors.match_runs(window, runs, out);
    runs.clear();
    if (last) return;
  }
}

// The candidates that start in `piece`, found in a window around it (candidates.hpp).
void find_in_piece(const DetectorSet& detectors, std::string_view data, Span piece,
                   const LiteralSet::Compiled* literals, std::vector<Candidate>& out) {
  const std::size_t literal_width = literals ? literals->max_length : 0;
  const std::size_t behind = detectors.max_match_width() + detectors.lookbehind() + literal_width;
  const std::size_t ahead = detectors.lookahead() + literal_width;
  const std::size_t from = piece.start - std::min(piece.start, behind);
  const std::size_t to = piece.end + std::min(data.size() - piece.end, ahead);
  const Window window{data.substr(from, to - from), from, to == data.size()};
  auto outside = [&](const Candidate& c) { return c.start < piece.start || c.start >= piece.end; };

  std::vector<Hit> hits;
  detectors.find_hits(window.bytes, hits);
  for (Hit hit : hits) {
    hit.end += from;
    Candidate candidate;
    if (detectors.confirm(window, hit, candidate) == Confirmation::candidate && !outside(candidate))
      out.push_back(candidate);
  }
  const std::size_t first_run_candidate = out.size();
  match_runs_by_block(detectors, window, piece.start - from, out);
  out.erase(std::remove_if(out.begin() + static_cast<std::ptrdiff_t>(first_run_candidate), out.end(), outside),
            out.end());
  if (!literals) return;
  hits.clear();
  literals->find_hits(window.bytes, hits);
  for (Hit hit : hits) {
    hit.end += from;
    Candidate candidate = literal_candidate(detectors, *literals, hit);
    if (!outside(candidate)) out.push_back(candidate);
  }
}

}  // namespace

std::vector<Span> split_at_lines(std::string_view data, unsigned count, std::size_t min_bytes) {
  const std::size_t most = std::max<std::size_t>(1, data.size() / std::max<std::size_t>(min_bytes, 1));
  const std::size_t pieces = std::clamp<std::size_t>(count, 1, most);
  std::vector<Span> out;
  std::size_t start = 0;
  for (std::size_t i = 1; i < pieces; ++i) {
    const std::size_t nominal = std::max(data.size() / pieces * i, start + min_bytes);
    const std::size_t newline = data.find('\n', nominal);
    if (newline == std::string_view::npos || data.size() - (newline + 1) < min_bytes) break;
    out.push_back({start, newline + 1});
    start = newline + 1;
  }
  out.push_back({start, data.size()});
  return out;
}

std::vector<Candidate> find_candidates(const DetectorSet& detectors, std::string_view data,
                                       const LiteralSet::Compiled* literals, unsigned threads) {
  // Pieces of about kMinPieceBytes even for one thread: the Vectorscan pass and the lexer then
  // read each piece while it is still in the cache, where a whole buffer came from memory twice.
  const std::vector<Span> pieces = split_at_lines(data, static_cast<unsigned>(std::min<std::size_t>(
                                                            data.size() / kMinPieceBytes, 1u << 20)),
                                                  kMinPieceBytes);
  // Each thread takes a run of consecutive pieces, so its candidates come out in order.
  const std::size_t workers = std::clamp<std::size_t>(threads, 1, pieces.size());
  std::vector<std::vector<Candidate>> found(workers);
  auto work = [&](std::size_t w) {
    const std::size_t first = w * pieces.size() / workers, last = (w + 1) * pieces.size() / workers;
    for (std::size_t i = first; i < last; ++i) find_in_piece(detectors, data, pieces[i], literals, found[w]);
  };
  std::vector<std::future<void>> others;
  for (std::size_t w = 1; w < workers; ++w) {
    try {
      others.push_back(std::async(std::launch::async, work, w));
    } catch (const std::system_error&) {
      work(w);  // no thread to be had: this one does it
    }
  }
  work(0);
  for (auto& other : others) other.get();  // rethrows what a piece threw
  if (found.size() == 1) return std::move(found[0]);
  std::size_t total = 0;
  for (const auto& f : found) total += f.size();
  std::vector<Candidate> all;
  all.reserve(total);
  for (const auto& f : found) all.insert(all.end(), f.begin(), f.end());
  return all;
}

}  // namespace airlock::dlp::detail
