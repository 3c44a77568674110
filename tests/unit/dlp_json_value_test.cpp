// ValueScan (dlp/json/json_value.hpp): a parsed value scanned where it is must give the findings of
// the path it replaces -- dump_compact(value), Scanner::scan of that text, redact() of the text
// and a parse of the result -- exactly: the same detectors at the same offsets, the same
// redacted value and text, on the presidio-synth corpus (sentences with line breaks, quotes and
// non-ASCII) and on every detector's example set after escapes, in keys, in numbers, under
// redact, mask and hash policies. Where it cannot redact in place, it says so and changes nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/json_limits.hpp"
#include "common/json_text.hpp"
#include "dlp/detectors.hpp"
#include "dlp/json/json_value.hpp"
#include "dlp/scanner.hpp"

using namespace airlock;
using namespace airlock::dlp;
using json = nlohmann::json;

namespace {

const char* kCorpus = AIRLOCK_CORPORA_DIR "/presidio-synth/synth_dataset_v2.json";

// The path ValueScan replaces (the scan stages before issue #20's third round).
struct ByText {
  ScanResult result;
  std::string redacted_text;
  std::optional<json> redacted;  // nullopt: the redacted text was not JSON
};

ByText by_text(const Scanner& scanner, const json& value) {
  ByText out;
  const std::string text = dump_compact(value);
  out.result = scanner.scan(text);
  out.redacted_text = scanner.redact(text, out.result);
  if (auto parsed = parse_json_bounded(out.redacted_text, 1u << 16)) out.redacted = std::move(*parsed);
  return out;
}

struct Tally {
  std::size_t documents = 0, findings = 0, in_place = 0, declined = 0;
};

// Scans `value` both ways and checks they agree; counts what happened.
void expect_same(const Scanner& scanner, const json& value, Tally& tally) {
  json scanned_value = value;
  auto scanned = ValueScan::scan(scanner, scanned_value);
  ASSERT_TRUE(scanned.has_value()) << value.dump().substr(0, 200);
  const ByText reference = by_text(scanner, value);
  ++tally.documents;
  tally.findings += reference.result.findings.size();
  ASSERT_EQ(scanned->result().findings, reference.result.findings) << value.dump().substr(0, 300);
  EXPECT_EQ(scanned->result().blocked, reference.result.blocked);
  if (scanned->redact_in_place(scanner)) {
    tally.in_place += reference.result.findings.empty() ? 0 : 1;
    ASSERT_TRUE(reference.redacted.has_value()) << "redacted in place where the text was not JSON";
    EXPECT_EQ(scanned_value, *reference.redacted) << value.dump().substr(0, 300);
    EXPECT_EQ(dump_compact(scanned_value), reference.redacted_text);
  } else {
    ++tally.declined;
    EXPECT_EQ(scanned_value, value) << "declined, yet changed";
  }
}

std::vector<std::string> corpus_sentences() {
  std::vector<std::string> out;
  std::ifstream in(kCorpus);
  for (const auto& sample : json::parse(in)) out.push_back(sample["full_text"]);
  return out;
}

Scanner scanner_with(Action action) {
  Policy policy = Policy::defaults();
  policy.hash_key = "json-value-test-key";
  if (action != Action::redact)
    for (const detail::DetectorSpec& spec : detail::detector_table()) policy.detectors[std::string(spec.id)].action = action;
  return std::move(*Scanner::create(policy));
}

// Documents with every detector's example where escapes and structure are around it.
std::vector<json> example_documents() {
  std::vector<json> docs;
  for (const detail::DetectorSpec& spec : detail::detector_table()) {
    if (spec.example.empty()) continue;
    const std::string ex(spec.example);
    docs.push_back({{"note", "first line\n" + ex + "\nlast line"}});
    docs.push_back({{"quoted", "say \"" + ex + "\" twice: \"" + ex + "\""}});
    docs.push_back({{"tabbed", "\t" + ex + "\t\x01\x1f" + ex + "\\"}});
    docs.push_back({{"unicode", "caf\xC3\xA9 " + ex + " \xE2\x82\xAC\xF0\x9F\x94\x91" + ex}});
    docs.push_back(json::array({ex, json::array({1, 2.5, nullptr, true}), {{"k", ex + "\n"}}}));
    docs.push_back({{ex, "a key"}, {"value", "x"}});
    docs.push_back({{"config", "password=\"" + ex + "\"\nsecret: " + ex}});
  }
  docs.push_back({{"card", 4111111111111111ull}, {"ssn", "123-45-6789"}});
  docs.push_back({{"phone", 4155552671}, {"text", "call +1 415 555 2671\n"}});
  return docs;
}

TEST(DlpJsonValue, SameFindingsAndRedactionsAsTheTextOnTheCorpus) {
  if (!std::filesystem::exists(kCorpus))
    GTEST_SKIP() << "presidio-synth corpus not found at " << kCorpus
                 << " (it lives in ../shared/corpora beside the checkout)";
  const std::vector<std::string> sentences = corpus_sentences();
  for (Action action : {Action::redact, Action::mask, Action::hash}) {
    const Scanner scanner = scanner_with(action);
    Tally tally;
    std::string joined;
    json items = json::array();
    for (std::size_t i = 0; i < sentences.size(); ++i) {
      expect_same(scanner, {{"text", sentences[i]}}, tally);
      joined += sentences[i] + (i % 3 == 0 ? "\n" : "\t\"quoted\" ");
      items.push_back(i % 2 == 0 ? json(sentences[i]) : json{{"s", sentences[i]}, {"n", i}});
      if (i % 50 == 0) expect_same(scanner, {{sentences[i], "as a key"}}, tally);
    }
    expect_same(scanner, {{"log", joined}}, tally);
    expect_same(scanner, {{"items", items}}, tally);
    expect_same(scanner, items, tally);
    SCOPED_TRACE(std::string(to_string(action)));
    std::printf("%s: %zu documents, %zu findings, redacted in place %zu, left to the text %zu\n",
                std::string(to_string(action)).c_str(), tally.documents, tally.findings, tally.in_place,
                tally.declined);
    EXPECT_GT(tally.findings, 1000u);
    EXPECT_GT(tally.in_place, 250u);
  }
}

TEST(DlpJsonValue, SameFindingsAndRedactionsAsTheTextForEveryDetectorsExample) {
  for (Action action : {Action::redact, Action::mask, Action::hash}) {
    const Scanner scanner = scanner_with(action);
    Tally tally;
    for (const json& doc : example_documents()) expect_same(scanner, doc, tally);
    EXPECT_GT(tally.findings, 100u);
    EXPECT_GT(tally.in_place, 50u);
    EXPECT_GT(tally.declined, 5u);  // the keys and the numbers
  }
}

TEST(DlpJsonValue, ASecretAfterAnEscapeIsFoundFromItsFirstByteAndRedactedInPlace) {
  const Scanner scanner = scanner_with(Action::redact);
  json value = {{"note", "line one\nAKIAUP6PPB2TDBM72FQO is the key"}};
  auto scanned = ValueScan::scan(scanner, value);
  ASSERT_TRUE(scanned);
  ASSERT_EQ(scanned->result().findings.size(), 1u);
  const Finding& f = scanned->result().findings[0];
  EXPECT_EQ(f.detector, "aws_access_key_id");
  // {"note":"line one\nAKIA...: the offsets are those of the escaped text.
  EXPECT_EQ(dump_compact(value).substr(f.start, f.end - f.start), "AKIAUP6PPB2TDBM72FQO");
  ASSERT_TRUE(scanned->redact_in_place(scanner));
  EXPECT_EQ(value, json({{"note", "line one\n[REDACTED:AWS_ACCESS_KEY_ID] is the key"}}));
}

TEST(DlpJsonValue, AFindingInAKeyOrANumberIsLeftToTheTextAndNothingChanges) {
  const Scanner scanner = scanner_with(Action::redact);
  for (json value : {json{{"AKIAUP6PPB2TDBM72FQO", "the key is the key"}},
                     json{{"card", 4111111111111111ull}}}) {
    const json before = value;
    auto scanned = ValueScan::scan(scanner, value);
    ASSERT_TRUE(scanned);
    ASSERT_FALSE(scanned->result().findings.empty()) << before.dump();
    EXPECT_FALSE(scanned->redact_in_place(scanner));
    EXPECT_EQ(value, before);
  }
}

TEST(DlpJsonValue, WhatDumpCompactWritesOtherwiseIsLeftToTheText) {
  const Scanner scanner = scanner_with(Action::redact);
  json text = "AKIAUP6PPB2TDBM72FQO";  // not an object or array: its text is not scanned as JSON
  EXPECT_FALSE(ValueScan::scan(scanner, text));
  json invalid = {{"s", std::string("\xff\xfe AKIAUP6PPB2TDBM72FQO")}};  // written with U+FFFD
  EXPECT_FALSE(ValueScan::scan(scanner, invalid));
  json nan = {{"x", std::nan("")}};  // written as null
  EXPECT_FALSE(ValueScan::scan(scanner, nan));
}

}  // namespace
