// What Scanner and StreamScanner share.
#pragma once

#include <memory>
#include <vector>

#include "dlp/engine.hpp"
#include "dlp/literals.hpp"
#include "dlp/scanner.hpp"

namespace airlock::dlp {

struct Scanner::Compiled {
  Policy policy;
  std::unique_ptr<detail::DetectorSet> detectors;
};

namespace detail {

inline Candidate literal_candidate(const DetectorSet& detectors, const LiteralSet::Compiled& literals,
                                   const Hit& hit) {
  const auto& entry = literals.entries[hit.detector];
  return Candidate{detectors.literal_detector(entry.encoding), hit.end - entry.length, hit.end, 1.0,
                   false};
}

}  // namespace detail
}  // namespace airlock::dlp
