// From candidates to findings: the policy's action and thresholds, then overlap resolution.
//
// Overlap rule (deterministic, documented in docs/dlp.md): findings that overlap are ranked by
//   1. the larger span, 2. the higher confidence, 3. the detector's place in the table
//      (literals last), 4. the earlier start;
// the best is kept and every finding overlapping a kept one is dropped. Findings whose action is
// allow are ranked after all others, so an allowed detector never hides a finding that acts.
#pragma once

#include <optional>
#include <vector>

#include "dlp/engine.hpp"
#include "dlp/policy.hpp"
#include "dlp/scanner.hpp"

namespace airlock::dlp::detail {

// The finding for a candidate, or nothing if its confidence is below what its action needs.
// A block finding below the block threshold is redacted instead; documentation values
// (example) are never blocked.
std::optional<Finding> decide_action(const DetectorSet& detectors, const Policy& policy,
                                     const Candidate& candidate);

// Decides actions, removes duplicates and resolves overlaps; the result is sorted by start.
std::vector<Finding> settle(const DetectorSet& detectors, const Policy& policy,
                            std::vector<Candidate> candidates);

// settle(), and whether a finding blocks.
ScanResult settle_result(const DetectorSet& detectors, const Policy& policy,
                         std::vector<Candidate> candidates);

}  // namespace airlock::dlp::detail
