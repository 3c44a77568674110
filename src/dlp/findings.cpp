#include "dlp/findings.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace airlock::dlp::detail {
namespace {

struct Ranked {
  Finding finding;
  std::uint32_t detector = 0;
};

// True if [start, end) overlaps an interval already in `taken` (start -> end).
bool overlaps(const std::map<std::size_t, std::size_t>& taken, std::size_t start, std::size_t end) {
  auto next = taken.lower_bound(start);
  if (next != taken.end() && next->first < end) return true;
  if (next == taken.begin()) return false;
  return std::prev(next)->second > start;
}

// Keeps the best-ranked findings of a cluster that do not overlap a better one; appends them
// to `kept` in start order.
void resolve_cluster(std::vector<Ranked>::iterator first, std::vector<Ranked>::iterator last,
                     std::vector<Finding>& kept) {
  auto rank_key = [](const Ranked& r) {
    const Finding& f = r.finding;
    return std::make_tuple(f.action == Action::allow, -static_cast<long long>(f.end - f.start),
                           -f.confidence, r.detector, f.start, f.example);
  };
  std::sort(first, last, [&](const Ranked& a, const Ranked& b) { return rank_key(a) < rank_key(b); });
  std::map<std::size_t, std::size_t> taken;
  std::vector<Finding> chosen;
  for (auto it = first; it != last; ++it) {
    if (overlaps(taken, it->finding.start, it->finding.end)) continue;  // also drops duplicates
    taken.emplace(it->finding.start, it->finding.end);
    chosen.push_back(it->finding);
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const Finding& a, const Finding& b) { return a.start < b.start; });
  kept.insert(kept.end(), chosen.begin(), chosen.end());
}

}  // namespace

std::optional<Finding> decide_action(const DetectorSet& detectors, const Policy& policy,
                                     const Candidate& candidate) {
  const CompiledDetector& d = detectors.detector(candidate.detector);
  if (!d.enabled) return std::nullopt;
  Action action = d.action;
  double needed = d.threshold;
  auto downgrade_to_redact = [&] {
    action = Action::redact;
    needed = policy.threshold(Action::redact);
  };
  if (candidate.example && action == Action::block) downgrade_to_redact();
  if (candidate.confidence < needed && action == Action::block) downgrade_to_redact();
  if (candidate.confidence < needed) return std::nullopt;
  Finding f;
  f.detector = d.id;
  f.category = d.category;
  f.start = candidate.start;
  f.end = candidate.end;
  f.confidence = candidate.confidence;
  f.action = action;
  f.example = candidate.example;
  return f;
}

std::vector<Finding> settle(const DetectorSet& detectors, const Policy& policy,
                            std::vector<Candidate> candidates) {
  std::vector<Ranked> ranked;
  ranked.reserve(candidates.size());
  for (const Candidate& c : candidates) {
    if (c.end <= c.start) continue;
    if (auto f = decide_action(detectors, policy, c)) ranked.push_back({*f, c.detector});
  }
  // A total order: the findings do not depend on the order the candidates came in (one scan,
  // or pieces scanned by several threads).
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::tie(a.finding.start, a.finding.end, a.detector, a.finding.confidence, a.finding.example) <
           std::tie(b.finding.start, b.finding.end, b.detector, b.finding.confidence, b.finding.example);
  });
  // Overlaps only matter inside a cluster of findings that overlap one another; most findings
  // are alone in theirs.
  std::vector<Finding> kept;
  kept.reserve(ranked.size());
  std::size_t i = 0;
  while (i < ranked.size()) {
    std::size_t j = i + 1;
    std::size_t cluster_end = ranked[i].finding.end;
    while (j < ranked.size() && ranked[j].finding.start < cluster_end) {
      cluster_end = std::max(cluster_end, ranked[j].finding.end);
      ++j;
    }
    if (j == i + 1)
      kept.push_back(ranked[i].finding);
    else
      resolve_cluster(ranked.begin() + static_cast<std::ptrdiff_t>(i),
                      ranked.begin() + static_cast<std::ptrdiff_t>(j), kept);
    i = j;
  }
  return kept;
}

ScanResult settle_result(const DetectorSet& detectors, const Policy& policy,
                         std::vector<Candidate> candidates) {
  ScanResult result;
  result.findings = settle(detectors, policy, std::move(candidates));
  result.blocked = std::any_of(result.findings.begin(), result.findings.end(),
                               [](const Finding& f) { return f.action == Action::block; });
  return result;
}

}  // namespace airlock::dlp::detail
