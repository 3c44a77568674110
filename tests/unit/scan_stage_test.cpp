// The scan stages scan a value where it is (dlp/json/json_value.hpp) and fall back to its compact
// text when that cannot be done exactly. Whichever way, a call must come out as it did when the
// stage scanned the text: the same arguments or result afterwards, the same redacted text for
// the audit record, the same redactions listed, the same refusals. Checked on the presidio-synth
// corpus and on every detector's example after escapes, in keys and in numbers, under a policy
// that redacts, masks, hashes and blocks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "common/json_limits.hpp"
#include "common/json_text.hpp"
#include "dlp/detectors.hpp"
#include "pipeline/invocation.hpp"
#include "pipeline/stages/content.hpp"
#include "policy/config.hpp"

namespace airlock::pipeline {
namespace {

using nlohmann::json;

const char* kCorpus = AIRLOCK_CORPORA_DIR "/presidio-synth/synth_dataset_v2.json";

struct Outcome {
  std::string refusal;  // "" when the call goes on
  json value;
  std::optional<std::string> redacted;
  std::vector<std::string> redactions;
};

// What the stage did before issue #20's third round: scan the compact text, redact it, parse it.
Outcome by_text(const dlp::Scanner& scanner, const json& value) {
  Outcome out;
  out.value = value;
  const std::string text = dump_compact(value);
  const dlp::ScanResult result = scanner.scan(text);
  if (result.findings.empty()) return out;
  if (result.blocked) return out.refusal = "blocked", out;
  const std::string redacted = scanner.redact(text, result);
  auto parsed = parse_json_bounded(redacted, 1u << 16);
  if (!parsed) return out.refusal = "withheld", out;
  out.value = std::move(*parsed);
  out.redacted = redacted;
  for (const auto& f : result.findings)
    if (f.action != dlp::Action::allow) out.redactions.emplace_back(f.detector);
  return out;
}

Outcome by_stage(ScanStage& stage, const policy::Config& config, const json& value) {
  Invocation inv;
  inv.arguments = value;
  StageContext ctx(config);
  StageResult result = stage.run(inv, ctx);
  Outcome out;
  if (!result.proceeds()) {
    const std::string& message = result.error()->message;
    out.refusal = message.find("did not leave valid JSON") != std::string::npos ? "withheld" : "blocked";
    return out;
  }
  out.value = std::move(inv.arguments);
  out.redacted = inv.redacted_input;
  for (const auto& r : inv.redactions) out.redactions.push_back(r.detector);
  return out;
}

// Cards and SSNs blocked, email masked, phones hashed, the rest as the defaults say.
std::shared_ptr<const dlp::Scanner> mixed_policy_scanner() {
  dlp::Policy policy = dlp::Policy::defaults();
  policy.hash_key = "scan-stage-test-key";
  policy.detectors["credit_card"].action = dlp::Action::block;
  policy.detectors["us_ssn"].action = dlp::Action::block;
  policy.detectors["email"].action = dlp::Action::mask;
  for (const char* phone : {"phone_international", "phone_nanp", "phone_national"})
    policy.detectors[phone].action = dlp::Action::hash;
  return std::make_shared<const dlp::Scanner>(std::move(*dlp::Scanner::create(policy)));
}

std::vector<json> documents() {
  std::vector<json> docs;
  for (const dlp::detail::DetectorSpec& spec : dlp::detail::detector_table()) {
    if (spec.example.empty()) continue;
    const std::string ex(spec.example);
    docs.push_back({{"note", "line\n" + ex + "\n\"" + ex + "\"\t\x01"}});
    docs.push_back({{ex, 1}, {"v", "caf\xC3\xA9 " + ex}});
    docs.push_back({{"list", json::array({ex, 42, {{"deep", "\\" + ex}}})}});
  }
  docs.push_back({{"card", 4111111111111111ull}});  // a number: the text's redaction is not JSON
  docs.push_back({{"phone", "+1 415 555 2671"}, {"email", "ana.lopez@example.org\nnext"}});
  if (!std::filesystem::exists(kCorpus)) return docs;
  std::ifstream in(kCorpus);
  std::string joined;
  for (const auto& sample : json::parse(in)) {
    docs.push_back({{"text", sample["full_text"]}});
    joined += sample["full_text"].get<std::string>() + "\n";
  }
  docs.push_back({{"log", joined}, {"source", "presidio"}});
  return docs;
}

TEST(DlpScanStage, ACallComesOutAsWhenTheStageScannedTheText) {
  if (!std::filesystem::exists(kCorpus))
    GTEST_SKIP() << "presidio-synth corpus not found at " << kCorpus
                 << " (it lives in ../shared/corpora beside the checkout)";
  const policy::Config config;
  std::map<std::string, std::size_t> outcomes;
  for (const auto& scanner : {mixed_policy_scanner(),
                              std::make_shared<const dlp::Scanner>(
                                  std::move(*dlp::Scanner::create(dlp::Policy::defaults())))}) {
    ScanStage stage(scanner, ScanStage::Direction::input);
    for (const json& doc : documents()) {
      const Outcome expected = by_text(*scanner, doc);
      const Outcome got = by_stage(stage, config, doc);
      ASSERT_EQ(got.refusal, expected.refusal) << doc.dump().substr(0, 300);
      ++outcomes[expected.refusal.empty() ? (expected.redacted ? "redacted" : "clean") : expected.refusal];
      if (!expected.refusal.empty()) continue;
      EXPECT_EQ(got.value, expected.value) << doc.dump().substr(0, 300);
      EXPECT_EQ(got.redacted, expected.redacted) << doc.dump().substr(0, 300);
      EXPECT_EQ(got.redactions, expected.redactions) << doc.dump().substr(0, 300);
    }
  }
  EXPECT_GT(outcomes["redacted"], 400u);
  EXPECT_GT(outcomes["clean"], 200u);
  EXPECT_GT(outcomes["blocked"], 10u);
  EXPECT_GT(outcomes["withheld"], 0u);
}

// A result that is one string (a tool's log lines): its compact text is one JSON string, which
// the scanner reads as JSON as `airlock scan` does, so a key right after a line break is found
// and redacted inside the string (scanned as text, "\nAKIA..." hid it).
TEST(DlpScanStage, AResultThatIsOneStringIsScannedAsJson) {
  auto scanner = std::make_shared<const dlp::Scanner>(std::move(*dlp::Scanner::create(dlp::Policy::defaults())));
  ScanStage stage(scanner, ScanStage::Direction::output);
  const policy::Config config;
  Invocation inv;
  inv.output = json("build log\nAKIAUP6PPB2TDBM72FQO\ndone");
  StageContext ctx(config);
  ASSERT_TRUE(stage.run(inv, ctx).proceeds());
  ASSERT_TRUE(inv.output && inv.output->is_string());
  EXPECT_EQ(inv.output->get<std::string>(), "build log\n[REDACTED:AWS_ACCESS_KEY_ID]\ndone");
  ASSERT_EQ(inv.redactions.size(), 1u);
  EXPECT_EQ(inv.redactions[0].detector, "aws_access_key_id");
  EXPECT_EQ(inv.redacted_output, dump_compact(*inv.output));
}

}  // namespace
}  // namespace airlock::pipeline
