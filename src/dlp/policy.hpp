// The DLP policy: which detectors run, what happens to what they find, and the confidence each
// action needs. Loaded from YAML (or JSON, which YAML reads too); the format is in docs/dlp.md.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace airlock::dlp {

enum class Category { pii, secret };

// In increasing order of severity; the order matters for overlap resolution and thresholds.
enum class Action { allow, redact, mask, hash, block };

std::string_view to_string(Category category);
std::string_view to_string(Action action);
std::optional<Action> parse_action(std::string_view text);

// What a policy changes for one detector; unset fields keep the detector's defaults.
struct DetectorOverride {
  std::optional<bool> enabled;
  std::optional<Action> action;
  std::optional<double> min_confidence;  // replaces the threshold of the detector's action
  std::optional<double> min_entropy;     // entropy-gated detectors: bits per character
  std::optional<unsigned> min_length;    // entropy-gated detectors: shortest value considered
};

// What a finding in model-written code (a python-code tool's `code`) does. Code is never
// redacted: a changed program computes something else and would answer as if it had not been
// changed. `refuse`: the call is refused (dlp_blocked, naming the detector and the line);
// `report`: the code runs as written and the answer lists the finding (dlp_findings). A
// detector whose action is block refuses either way; one whose action is allow is not a finding.
enum class CodeFindings { refuse, report };

struct Policy {
  // Minimum confidence for a finding to get each action. A block finding below the block
  // threshold is redacted instead (if it reaches the redact threshold); any other finding below
  // its action's threshold is dropped.
  std::array<double, 5> thresholds{0.5, 0.5, 0.5, 0.5, 0.7};  // indexed by Action
  std::size_t context_window = 48;   // bytes before a match searched for context words
  std::string hash_key;              // HMAC-SHA256 key for the hash action
  Action literal_action = Action::redact;
  CodeFindings code_findings = CodeFindings::refuse;  // spec.code.onFinding
  std::map<std::string, DetectorOverride, std::less<>> detectors;  // by detector id

  double threshold(Action action) const { return thresholds[static_cast<std::size_t>(action)]; }

  static Policy defaults() { return Policy{}; }
  // Every detector off: only the caller's literals are found, and redacted (the values of a
  // call's credentials, whatever the configured policy says of other findings).
  static Policy literals_only();
};

// `source_name` is used in error messages ("policy.yaml:12: ...").
Result<Policy> parse_policy(std::string_view text, std::string_view source_name);
Result<Policy> load_policy_file(const std::string& path);

}  // namespace airlock::dlp
