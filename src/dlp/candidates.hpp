// Every candidate in a whole buffer: Vectorscan hits confirmed, runs matched, literals found. One
// thread scans it all, or several scan a piece each: the candidates are the same either way.
//
// How pieces give the same candidates: a piece keeps only the candidates that start in it, and
// each piece is scanned in a window reaching back over the longest match and the look-behind
// (context words, the bytes before a match) and ahead over the longest match, its extension and
// the look-aheads, so every check that decides a candidate reads the same bytes as in one scan.
// Pieces begin after a '\n', which no lexer run contains: no run is cut, and the lexer starts
// each piece at its first byte. Overlaps are resolved afterwards, over all the candidates.
#pragma once

#include <string_view>
#include <vector>

#include "dlp/engine.hpp"
#include "dlp/literals.hpp"

namespace airlock::dlp::detail {

// A piece is at least this long: below it a thread costs more than it saves.
inline constexpr std::size_t kMinPieceBytes = std::size_t{1} << 20;

// The candidates in `data`, scanned by up to `threads` threads (1: this one).
std::vector<Candidate> find_candidates(const DetectorSet& detectors, std::string_view data,
                                       const LiteralSet::Compiled* literals, unsigned threads);

// [start, end) spans that cover `data` in order: at most `count`, each but the last ending just
// after a '\n', each at least `min_bytes` long (fewer pieces when the lines do not allow more).
std::vector<Span> split_at_lines(std::string_view data, unsigned count, std::size_t min_bytes);

}  // namespace airlock::dlp::detail
