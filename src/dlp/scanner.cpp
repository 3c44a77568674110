#include "dlp/scanner.hpp"

#include <algorithm>

#include "dlp/candidates.hpp"
#include "dlp/vectorscan/database_cache.hpp"
#include "dlp/findings.hpp"
#include "dlp/json/json_strings.hpp"
#include "dlp/redaction.hpp"
#include "dlp/scanner_internal.hpp"

namespace airlock::dlp {
namespace {

using detail::Candidate;
using detail::DetectorSet;

bool uses_hash(const Policy& policy) {
  if (policy.literal_action == Action::hash) return true;
  for (const auto& [id, o] : policy.detectors)
    if (o.action == Action::hash && o.enabled.value_or(true)) return true;
  return false;
}

}  // namespace

Result<Scanner> Scanner::create(const Policy& policy, const BuildOptions& build) {
  if (uses_hash(policy) && policy.hash_key.empty())
    return Error::make("invalid_policy", "the hash action needs a key (spec.hashKey or spec.hashKeyEnv)");
  auto detectors = DetectorSet::build(policy, build.database_cache);
  if (!detectors) return detectors.error();
  auto compiled = std::make_shared<Compiled>();
  compiled->policy = policy;
  compiled->detectors = std::move(*detectors);
  return Scanner(std::move(compiled));
}

BuildOptions BuildOptions::with_user_cache() {
  return BuildOptions{detail::DatabaseCache::default_directory()};
}

const Policy& Scanner::policy() const { return compiled_->policy; }

ScanResult Scanner::scan(std::string_view data, const ScanOptions& options) const {
  const DetectorSet& detectors = *compiled_->detectors;
  detail::DecodedStrings decoded;
  if (options.json == JsonMode::automatic && detail::looks_like_json(data))
    decoded = detail::decode_strings_in_place(data);
  const LiteralSet::Compiled* literals = options.literals ? &options.literals->compiled() : nullptr;
  const unsigned threads = std::max(options.threads, 1u);
  std::vector<Candidate> candidates;
  if (decoded.escapes.empty()) {
    candidates = detail::find_candidates(detectors, data, literals, threads);
  } else {
    candidates = detail::find_candidates(detectors, decoded.text, literals, threads);
    for (Candidate& c : candidates) {
      detail::Span original = decoded.original(c.start, c.end);
      c.start = original.start;
      c.end = original.end;
    }
  }
  return detail::settle_result(detectors, compiled_->policy, std::move(candidates));
}

std::string Scanner::redact(std::string_view data, const ScanResult& result) const {
  std::string out;
  out.reserve(data.size());
  detail::append_with_actions(data, 0, result.findings, compiled_->policy.hash_key, out);
  return out;
}

}  // namespace airlock::dlp
