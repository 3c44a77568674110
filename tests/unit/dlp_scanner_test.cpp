// The scanner as a whole: actions, thresholds, overlaps, JSON, any bytes, literals, policies.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/digest.hpp"
#include "dlp/literals.hpp"
#include "dlp/redaction.hpp"
#include "dlp/scanner.hpp"

using namespace airlock::dlp;

namespace {

Scanner make_scanner(const Policy& policy = Policy::defaults()) {
  auto scanner = Scanner::create(policy);
  if (!scanner) ADD_FAILURE() << scanner.error().message;
  return *scanner;
}

Policy policy_from(std::string_view yaml) {
  auto policy = parse_policy(yaml, "test.yaml");
  if (!policy) ADD_FAILURE() << policy.error().message;
  return policy.ok() ? *policy : Policy{};
}

std::string redacted(const Scanner& scanner, std::string_view text, const ScanOptions& options = {}) {
  return scanner.redact(text, scanner.scan(text, options));
}

constexpr std::string_view kEmailText = "write to jane.doe@example.org today";

}  // namespace

TEST(DlpActions, RedactReplacesWithTheLabel) {
  EXPECT_EQ(redacted(make_scanner(), kEmailText), "write to [REDACTED:EMAIL] today");
}

TEST(DlpActions, MaskKeepsTheLastFour) {
  auto scanner = make_scanner();  // credit_card and us_ssn mask by default
  EXPECT_EQ(redacted(scanner, "card 4539 6751 1253 2875."), "card ***************2875.");
  EXPECT_EQ(redacted(scanner, "SSN 536-22-1987"), "SSN *******1987");
  Finding short_finding{"email", Category::pii, 0, 6, 1, Action::mask, false};
  std::string out;
  detail::append_replacement(short_finding, "abc@de", "", out);
  EXPECT_EQ(out, "******");  // too short to keep four
}

TEST(DlpActions, HashIsKeyedAndJoinable) {
  const char* yaml = R"(
apiVersion: airlock.dev/v1
kind: DlpPolicy
spec:
  hashKey: k1
  detectors:
    email: {action: hash}
)";
  auto scanner = make_scanner(policy_from(yaml));
  std::string a = redacted(scanner, "from jane.doe@example.org");
  std::string b = redacted(scanner, "to jane.doe@example.org!");
  std::string c = redacted(scanner, "to john.roe@example.org!");
  std::string token = a.substr(5);
  EXPECT_EQ(token.rfind("[HASH:EMAIL:", 0), 0u) << a;
  EXPECT_EQ(token.size(), std::string("[HASH:EMAIL:0123456789abcdef]").size());
  EXPECT_NE(b.find(token), std::string::npos) << "equal values give equal tokens";
  EXPECT_EQ(c.find(token), std::string::npos);
  EXPECT_EQ(token, "[HASH:EMAIL:" + airlock::hmac_sha256_hex("k1", "jane.doe@example.org").substr(0, 16) + "]");
  // RFC 4231 test case 2: HMAC-SHA256("Jefe", "what do ya want for nothing?").
  EXPECT_EQ(airlock::hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  auto other_key = make_scanner(policy_from(std::string(yaml).replace(std::string(yaml).find("k1"), 2, "k2")));
  EXPECT_NE(redacted(other_key, "from jane.doe@example.org"), a);
}

TEST(DlpActions, HashWithoutAKeyIsAPolicyError) {
  Policy policy;
  policy.detectors["email"].action = Action::hash;
  auto scanner = Scanner::create(policy);
  ASSERT_FALSE(scanner.ok());
  EXPECT_NE(scanner.error().message.find("hashKey"), std::string::npos);
}

TEST(DlpActions, BlockRefusesThePayload) {
  Policy policy;
  policy.detectors["email"].action = Action::block;
  auto scanner = make_scanner(policy);
  auto result = scanner.scan(kEmailText);
  EXPECT_TRUE(result.blocked);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].action, Action::block);
  EXPECT_FALSE(make_scanner().scan(kEmailText).blocked);
}

TEST(DlpActions, AllowReportsButLeavesTheText) {
  Policy policy;
  policy.detectors["email"].action = Action::allow;
  auto scanner = make_scanner(policy);
  auto result = scanner.scan(kEmailText);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].action, Action::allow);
  EXPECT_EQ(scanner.redact(kEmailText, result), kEmailText);
}

TEST(DlpThresholds, BlockBelowItsThresholdIsRedactedInstead) {
  Policy policy;
  policy.detectors["email"].action = Action::block;
  policy.thresholds[static_cast<int>(Action::block)] = 0.99;  // email scores 0.85
  auto result = make_scanner(policy).scan(kEmailText);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].action, Action::redact);
  EXPECT_FALSE(result.blocked);
}

TEST(DlpThresholds, FindingsBelowTheirActionsThresholdAreDropped) {
  Policy policy;
  policy.detectors["email"].min_confidence = 0.9;
  EXPECT_TRUE(make_scanner(policy).scan(kEmailText).findings.empty());
  // A context word lifts it over: "email" before the address adds 0.1.
  EXPECT_EQ(make_scanner(policy).scan("email: jane.doe@example.org").findings.size(), 1u);
}

TEST(DlpThresholds, ContextWordsRaiseConfidence) {
  auto scanner = make_scanner();
  // Ten bare digits are a phone number only when something says so.
  EXPECT_TRUE(scanner.scan("ref 4157342219").findings.empty());
  auto with_context = scanner.scan("phone 4157342219");
  ASSERT_EQ(with_context.findings.size(), 1u);
  EXPECT_EQ(with_context.findings[0].detector, "phone_nanp");
  auto after = scanner.scan("0490 75 40 81 (mobile)");
  ASSERT_EQ(after.findings.size(), 1u);
  EXPECT_EQ(after.findings[0].detector, "phone_national");
  // Too far before (beyond the 48-byte window) does not count.
  EXPECT_TRUE(scanner.scan("phone " + std::string(60, '.') + " 4157342219").findings.empty());
}

TEST(DlpOverlaps, TheLargerSpanWinsThenConfidenceThenTableOrder) {
  auto scanner = make_scanner();
  // A card number inside a generic assignment: the assignment value is the larger span.
  auto result = scanner.scan("password=4539675112532875abcXYZ!");
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].detector, "generic_secret_assignment");
  // Same span, card (0.95 with context) against bare-digit SSN-or-phone shapes: confidence decides.
  result = scanner.scan("card 4539675112532875");
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].detector, "credit_card");
  // The same input always resolves the same way.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(scanner.scan("card 4539675112532875").findings, result.findings);
}

TEST(DlpOverlaps, AnAllowedDetectorNeverHidesOneThatActs) {
  Policy policy;
  policy.detectors["email"].action = Action::allow;
  auto scanner = make_scanner(policy);
  auto literals = LiteralSet::compile({"s3cretpass"});
  ASSERT_TRUE(literals.ok());
  std::string text = "login s3cretpass@example.org";
  auto result = scanner.scan(text, {&*literals, JsonMode::automatic});
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].detector, "literal");
  EXPECT_EQ(scanner.redact(text, result), "login [REDACTED:CREDENTIAL]@example.org");
}

TEST(DlpJson, EscapedSecretsAreFoundAtTheirOriginalBytes) {
  auto scanner = make_scanner();
  std::string json = R"({"note": "key \u0041KIAUP6PPB2TDBM72FQO here", "n": 1})";
  auto result = scanner.scan(json);
  ASSERT_EQ(result.findings.size(), 1u);
  const Finding& f = result.findings[0];
  EXPECT_EQ(f.detector, "aws_access_key_id");
  EXPECT_EQ(json.substr(f.start, f.end - f.start), R"(\u0041KIAUP6PPB2TDBM72FQO)");
  EXPECT_EQ(scanner.redact(json, result), R"({"note": "key [REDACTED:AWS_ACCESS_KEY_ID] here", "n": 1})");
  // Without JSON awareness the escaped key is invisible.
  EXPECT_TRUE(scanner.scan(json, {nullptr, JsonMode::off}).findings.empty());
}

TEST(DlpJson, KeysAndOtherEscapesAreDecoded) {
  auto scanner = make_scanner();
  // "\/" and "\u0040" inside an email, a surrogate pair before it, and a secret in a key.
  std::string json = R"([{"\ud83d\ude00 jane.doe\u0040example\u002eorg": true},)"
                     R"( {"ghp\u005fu8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d": 0}])";
  auto result = scanner.scan(json);
  ASSERT_EQ(result.findings.size(), 2u);
  EXPECT_EQ(result.findings[0].detector, "email");
  EXPECT_EQ(json.substr(result.findings[0].start, result.findings[0].end - result.findings[0].start),
            R"(jane.doe\u0040example\u002eorg)");
  EXPECT_EQ(result.findings[1].detector, "github_pat");
}

// Log lines in a JSON string: a finding right after a "\n" escape was also found in the raw
// bytes starting at the 'n', and redacting it left a lone backslash (invalid JSON: the call was
// withheld instead of redacted). One scan of the decoded document finds it once, at whole escapes.
TEST(DlpJson, FindingsAfterEscapesRedactToValidJson) {
  auto scanner = make_scanner();
  const std::string lines =
      "INFO start\n4539148803436467 card on file\n536-22-1234 ssn\n"
      "jane.doe@example.org wrote\n\t10.1.2.3 connected\n\"(415) 734-0001\" called\n";
  const std::string json = nlohmann::json{{"text", lines}, {"n", 1}}.dump();
  auto result = scanner.scan(json);
  ASSERT_FALSE(result.blocked);
  std::set<std::string> detectors;
  for (const auto& f : result.findings) detectors.insert(std::string(f.detector));
  for (const char* d : {"credit_card", "us_ssn", "email", "ipv4", "phone_nanp"})
    EXPECT_TRUE(detectors.count(d)) << d;
  const std::string redacted = scanner.redact(json, result);
  auto parsed = nlohmann::json::parse(redacted, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << redacted;
  const std::string text = parsed["text"];
  for (const char* value :
       {"4539148803436467", "536-22-1234", "jane.doe@example.org", "10.1.2.3", "734-0001"})
    EXPECT_EQ(text.find(value), std::string::npos) << value << " in " << text;
  EXPECT_NE(text.find("INFO start\n"), std::string::npos);  // the escapes outside findings stay
}

// A document that is one JSON string (a tool's result that is a string, `airlock scan` of a
// file holding one): scanned as JSON like the same string in an array, so a key spelled with
// an escape, or right after a "\n", is found at whole escapes and redacts to valid JSON.
TEST(DlpJson, ATopLevelStringIsScannedAsJson) {
  auto scanner = make_scanner();
  const std::string doc = R"( "line\nAKIAUP6PPB2TDBM72FQO and \u0041KIAUP6PPB2TDBM72FQO")" "\n";
  auto result = scanner.scan(doc);
  ASSERT_EQ(result.findings.size(), 2u) << "as text the escaped key is missed";
  for (const Finding& f : result.findings) EXPECT_EQ(f.detector, "aws_access_key_id");
  EXPECT_EQ(doc.substr(result.findings[0].start, result.findings[0].end - result.findings[0].start),
            "AKIAUP6PPB2TDBM72FQO");
  EXPECT_EQ(doc.substr(result.findings[1].start, result.findings[1].end - result.findings[1].start),
            R"(\u0041KIAUP6PPB2TDBM72FQO)");
  // The offsets the same string has inside an array, one byte further on.
  const std::string array = "[" + doc + "]";
  auto in_array = scanner.scan(array);
  ASSERT_EQ(in_array.findings.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(in_array.findings[i].start, result.findings[i].start + 1);
    EXPECT_EQ(in_array.findings[i].end, result.findings[i].end + 1);
  }
  // Redacted: still one JSON string, whose decoded text has both keys replaced.
  const std::string redacted = scanner.redact(doc, result);
  auto parsed = nlohmann::json::parse(redacted, nullptr, false);
  ASSERT_TRUE(parsed.is_string()) << redacted;
  EXPECT_EQ(parsed.get<std::string>(), "line\n[REDACTED:AWS_ACCESS_KEY_ID] and [REDACTED:AWS_ACCESS_KEY_ID]");
}

// What only starts (or ends) with a quote is not one JSON string: scanned as the text it is,
// with every finding the bytes give (those of JsonMode::off), nothing decoded away.
TEST(DlpJson, TextThatIsNotOneJsonStringIsScannedAsText) {
  auto scanner = make_scanner();
  const std::string escaped_key = R"(\u0041KIAUP6PPB2TDBM72FQO)";
  const std::vector<std::string> texts = {
      "\"note\" AKIAUP6PPB2TDBM72FQO " + escaped_key,                 // a quoted word, then text
      "\"a\" \"AKIAUP6PPB2TDBM72FQO " + escaped_key + "\"",           // two strings
      "\"unterminated AKIAUP6PPB2TDBM72FQO " + escaped_key,            // no closing quote
      "\"raw\ttab AKIAUP6PPB2TDBM72FQO " + escaped_key + "\"",        // a control character
      "\"bad \\x escape AKIAUP6PPB2TDBM72FQO " + escaped_key + "\"",  // not a JSON escape
      "\"short \\u00 AKIAUP6PPB2TDBM72FQO " + escaped_key + "\"",     // \u without four digits
      "\"AKIAUP6PPB2TDBM72FQO " + escaped_key + "\\\"",               // its last quote escaped
      "\"AKIAUP6PPB2TDBM72FQO " + escaped_key + "\" trailing",        // text after it
  };
  for (const std::string& text : texts) {
    const ScanResult as_text = scanner.scan(text, {nullptr, JsonMode::off});
    const ScanResult got = scanner.scan(text);
    ASSERT_EQ(as_text.findings.size(), 1u) << text;  // the plain key; the escaped one stays unread
    EXPECT_EQ(got.findings, as_text.findings) << text;
    EXPECT_EQ(scanner.redact(text, got), scanner.redact(text, as_text)) << text;
  }
}

TEST(DlpBytes, InvalidUtf8NeitherCrashesNorHidesSecrets) {
  auto scanner = make_scanner();
  std::string text = "\xff\xfe\xc3(AKIAUP6PPB2TDBM72FQO\x80\xbf jane.doe@example.org\xc0\xaf\xed\xa0\x80";
  auto result = scanner.scan(text);
  ASSERT_EQ(result.findings.size(), 2u);
  EXPECT_EQ(result.findings[0].detector, "aws_access_key_id");
  EXPECT_EQ(result.findings[1].detector, "email");
  EXPECT_EQ(scanner.redact(text, result),
            "\xff\xfe\xc3([REDACTED:AWS_ACCESS_KEY_ID]\x80\xbf [REDACTED:EMAIL]\xc0\xaf\xed\xa0\x80");
  // Random bytes with secrets spliced in: every secret is still found.
  std::mt19937 rng(3);
  for (int round = 0; round < 50; ++round) {
    std::string noise(2000, '\0');
    for (auto& c : noise) c = static_cast<char>(rng() & 0xFF);
    std::string data = noise.substr(0, 1000) + "\x80" + "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d" +
                       "\xff" + noise.substr(1000) + "\n" + "\x00" + std::string(1, '\0');
    bool found = false;
    for (const auto& f : scanner.scan(data).findings) found |= f.detector == "github_pat";
    EXPECT_TRUE(found) << "round " << round;
  }
}

TEST(DlpLiterals, FoundInEveryEncoding) {
  const std::string secret = "Tr0ub4dor&3:x/y";
  auto literals = LiteralSet::compile({secret});
  ASSERT_TRUE(literals.ok()) << literals.error().message;
  auto scanner = make_scanner();
  auto detectors_in = [&](const std::string& text) {
    std::vector<std::string> out;
    for (const auto& f : scanner.scan(text, {&*literals, JsonMode::off}).findings)
      out.push_back(std::string(f.detector));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(detectors_in("echo Tr0ub4dor&3:x/y done"), V{"literal"});
  EXPECT_EQ(detectors_in("b64 VHIwdWI0ZG9yJjM6eC95 ok"), V{"literal_base64"});  // base64(secret)
  EXPECT_EQ(detectors_in("hex 547230756234646f7226333a782f79 ok"), V{"literal_hex"});
  EXPECT_EQ(detectors_in("HEX 547230756234646F7226333A782F79 ok"), V{"literal_hex"});
  EXPECT_EQ(detectors_in("q=Tr0ub4dor%263%3Ax%2Fy&"), V{"literal_url"});
  // Inside Basic auth: base64("admin:" + secret), the secret at an offset of 6 bytes.
  EXPECT_EQ(detectors_in("Authorization: Basic YWRtaW46VHIwdWI0ZG9yJjM6eC95"), V{"literal_base64"});
  // At offsets 1 and 2 within a 3-byte group as well ("x" + secret, "a:" + secret).
  EXPECT_EQ(detectors_in("eFRyMHViNGRvciYzOngveQ=="), V{"literal_base64"});
  EXPECT_EQ(detectors_in("YTpUcjB1YjRkb3ImMzp4L3k="), V{"literal_base64"});
  // Half a secret is not the secret.
  EXPECT_EQ(detectors_in("echo Tr0ub4dor&3 and VHIwdWI0ZG9y"), V{});
}

TEST(DlpLiterals, UrlSafeBase64AndShortValues) {
  // bytes whose base64 has '+' and '/': base64url has '-' and '_' instead.
  std::string secret = "\xfb\xff\xbf\xfb\xff\xbf-key";
  auto literals = LiteralSet::compile({secret});
  ASSERT_TRUE(literals.ok());
  auto scanner = make_scanner();
  auto standard = scanner.scan("x +/+/+/+/LWtleQ y", {&*literals, JsonMode::off});
  auto url_safe = scanner.scan("x -_-_-_-_LWtleQ y", {&*literals, JsonMode::off});
  ASSERT_EQ(standard.findings.size(), 1u);
  EXPECT_EQ(standard.findings[0].detector, "literal_base64");
  ASSERT_EQ(url_safe.findings.size(), 1u);
  EXPECT_EQ(url_safe.findings[0].detector, "literal_base64url");
  EXPECT_FALSE(LiteralSet::compile({"abc"}).ok());  // would match everywhere
}

TEST(DlpLiterals, EncodingsListCoversTheForms) {
  auto forms = detail::literal_encodings("hunter2!");
  std::set<std::string> texts;
  for (const auto& f : forms) texts.insert(f.text);
  EXPECT_TRUE(texts.count("hunter2!"));
  // base64 "aHVudGVyMiE=" minus its last character, which depends on the byte after the value
  // when the value sits inside a longer base64 text.
  EXPECT_TRUE(texts.count("aHVudGVyMi"));
  EXPECT_TRUE(texts.count("68756e74657232"  "21"));
  EXPECT_TRUE(texts.count("68756E74657232"  "21"));
  EXPECT_TRUE(texts.count("hunter2%21"));
}

TEST(DlpPolicy, ParsesTheDocumentedFormat) {
  setenv("AIRLOCK_TEST_DLP_KEY", "secret-key", 1);
  auto policy = parse_policy(R"(
apiVersion: airlock.dev/v1
kind: DlpPolicy
metadata: {name: strict}
spec:
  contextWindow: 64
  thresholds: {redact: 0.4, block: 0.9}
  hashKeyEnv: AIRLOCK_TEST_DLP_KEY
  literals: {action: block}
  detectors:
    email: {action: hash}
    ipv4: {enabled: false}
    credit_card: {action: block, minConfidence: 0.8}
    high_entropy_hex: {enabled: true, minEntropy: 3.8, minLength: 40}
)",
                             "strict.yaml");
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  EXPECT_EQ(policy->context_window, 64u);
  EXPECT_DOUBLE_EQ(policy->threshold(Action::redact), 0.4);
  EXPECT_DOUBLE_EQ(policy->threshold(Action::block), 0.9);
  EXPECT_EQ(policy->hash_key, "secret-key");
  EXPECT_EQ(policy->literal_action, Action::block);
  EXPECT_EQ(policy->detectors.at("email").action, Action::hash);
  EXPECT_EQ(policy->detectors.at("ipv4").enabled, false);
  EXPECT_DOUBLE_EQ(*policy->detectors.at("credit_card").min_confidence, 0.8);
  EXPECT_EQ(*policy->detectors.at("high_entropy_hex").min_length, 40u);
  auto scanner = make_scanner(*policy);
  EXPECT_TRUE(scanner.scan("client 81.2.69.142").findings.empty());
}

TEST(DlpPolicy, JsonPoliciesWorkToo) {
  auto policy = parse_policy(
      R"({"apiVersion": "airlock.dev/v1", "kind": "DlpPolicy", "spec": {"detectors": {"email": {"action": "allow"}}}})",
      "p.json");
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  EXPECT_EQ(policy->detectors.at("email").action, Action::allow);
}

TEST(DlpPolicy, CodeFindingsAreRefusedUnlessThePolicySaysReport) {
  EXPECT_EQ(Policy::defaults().code_findings, CodeFindings::refuse);
  EXPECT_EQ(policy_from("apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n  code: {onFinding: report}\n").code_findings,
            CodeFindings::report);
  auto wrong = parse_policy("apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n  code: {onFinding: redact}\n", "p.yaml");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message, "p.yaml:4: spec.code.onFinding: expected refuse or report, got 'redact'");
}

TEST(DlpPolicy, ErrorsNameTheFileTheLineAndWhatWasExpected) {
  auto error_of = [](std::string_view text) {
    auto policy = parse_policy(text, "p.yaml");
    return policy.ok() ? std::string("(no error)") : policy.error().message;
  };
  EXPECT_EQ(error_of("apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n  detectors:\n    emial: {action: hash}\n"),
            "p.yaml:5: spec.detectors.emial: unknown detector (docs/dlp.md lists them)");
  EXPECT_EQ(error_of("apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n  detectors:\n    email: {action: shred}\n"),
            "p.yaml:5: spec.detectors.email.action: expected one of allow, redact, mask, hash, block");
  EXPECT_EQ(error_of("apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n  thresholds: {block: 2}\n"),
            "p.yaml:4: spec.thresholds.block: expected a number between 0 and 1");
  EXPECT_EQ(error_of("apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n  colour: red\n"),
            "p.yaml:4: spec.colour: unknown field (expected one of: thresholds, contextWindow, "
            "hashKey, hashKeyEnv, literals, detectors, code)");
  EXPECT_EQ(error_of("apiVersion: v2\nkind: DlpPolicy\n"), "p.yaml:1: apiVersion: expected airlock.dev/v1");
  EXPECT_NE(error_of("spec: [unclosed").find("p.yaml:1"), std::string::npos);
  EXPECT_NE(load_policy_file("/nonexistent/policy.yaml").error().message.find("/nonexistent/policy.yaml"),
            std::string::npos);
}

TEST(DlpScanner, ConcurrentScansShareOneScanner) {
  auto scanner = make_scanner();
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i)
        if (scanner.scan("mail jane.doe@example.org card 4539 6751 1253 2875").findings.size() != 2) ++wrong;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}
