// Each detector on values it must find and on look-alikes it must leave alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "dlp/detectors.hpp"
#include "dlp/scanner.hpp"

using namespace airlock::dlp;

namespace {

Policy all_detectors_enabled() {
  Policy policy;
  for (const auto& spec : detail::detector_table()) policy.detectors[std::string(spec.id)].enabled = true;
  return policy;
}

const Scanner& default_scanner() {
  static const Scanner scanner = *Scanner::create(Policy::defaults());
  return scanner;
}

const Scanner& full_scanner() {
  static const Scanner scanner = *Scanner::create(all_detectors_enabled());
  return scanner;
}

struct Found {
  std::string detector;
  std::string value;
  bool example;
};

std::vector<Found> scan(const Scanner& scanner, std::string_view text) {
  std::vector<Found> out;
  for (const Finding& f : scanner.scan(text).findings)
    out.push_back({std::string(f.detector), std::string(text.substr(f.start, f.end - f.start)), f.example});
  return out;
}

std::string describe(const std::vector<Found>& found) {
  std::string s;
  for (const auto& f : found) s += f.detector + "[" + f.value + "] ";
  return s.empty() ? "nothing" : s;
}

struct Positive {
  const char* detector;
  const char* text;
  const char* value;  // the exact span expected
};

}  // namespace

TEST(DlpDetectorTable, IsLargeUniqueAndComplete) {
  auto table = detail::detector_table();
  EXPECT_GE(table.size(), 30u);
  std::set<std::string_view> ids;
  int pii = 0, secret = 0;
  for (const auto& spec : table) {
    EXPECT_TRUE(ids.insert(spec.id).second) << "duplicate id " << spec.id;
    EXPECT_FALSE(spec.label.empty()) << spec.id;
    EXPECT_FALSE(spec.example.empty()) << spec.id;
    EXPECT_GT(spec.confidence, 0) << spec.id;
    EXPECT_LE(spec.confidence, 1) << spec.id;
    if (spec.engine == detail::Engine::vectorscan)
      EXPECT_FALSE(spec.pattern.empty()) << spec.id;
    else
      EXPECT_NE(spec.shape, nullptr) << spec.id;
    (spec.category == Category::pii ? pii : secret)++;
  }
  EXPECT_GE(pii, 10);
  EXPECT_GE(secret, 20);
}

TEST(DlpDetectorTable, ContextWordsAreLowerCaseWords) {
  for (const auto& spec : detail::detector_table()) {
    std::string_view words = spec.context;
    for (std::size_t at = 0; at < words.size(); ++at) {
      bool word_start = at == 0 || words[at - 1] == '|';
      char c = words[at];
      if (word_start) {
        EXPECT_TRUE(c >= 'a' && c <= 'z') << spec.id << ": " << words;
      }
      EXPECT_FALSE(c >= 'A' && c <= 'Z') << spec.id << ": " << words;
    }
  }
}

TEST(DlpDetectorTable, DocsListEveryDetector) {
  const std::string path = AIRLOCK_SOURCE_DIR "/docs/dlp.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& spec : detail::detector_table())
    EXPECT_NE(text.str().find("| `" + std::string(spec.id) + "` |"), std::string::npos)
        << spec.id << " is not in the detector tables of docs/dlp.md";
}

TEST(DlpDetectorTable, EveryDetectorFindsItsDocumentedExample) {
  for (const auto& spec : detail::detector_table()) {
    std::string text = "some text before " + std::string(spec.example) + " and after";
    auto found = scan(full_scanner(), text);
    bool hit = false;
    for (const auto& f : found) hit |= f.detector == spec.id;
    EXPECT_TRUE(hit) << spec.id << " in \"" << text << "\": " << describe(found);
  }
}

TEST(DlpDetectors, FindExactSpans) {
  const std::vector<Positive> cases{
      {"email", "mail me at jane.doe+tag@mail.example.co.uk today", "jane.doe+tag@mail.example.co.uk"},
      {"email", "<a href=\"mailto:bob@corp.com\">", "bob@corp.com"},
      {"phone_international", "mobile: +1-984-182-0190.", "+1-984-182-0190"},
      {"phone_international", "+46 (0)8 928 571 38 fax", "+46 (0)8 928 571 38"},
      {"phone_international", "dial 0044 20 7946 0958 now", "0044 20 7946 0958"},
      {"phone_nanp", "Call (415) 734-2219 now", "(415) 734-2219"},
      {"phone_nanp", "at 415.734.2219,", "415.734.2219"},
      {"phone_nanp", "toll free 1-800-734-2219", "1-800-734-2219"},
      {"phone_nanp", "phone 4157342219", "4157342219"},
      {"phone_nanp", "Fax: 345-899-3560x4587", "345-899-3560x4587"},
      {"phone_national", "Phone: 0490 75 40 81", "0490 75 40 81"},
      {"phone_national", "Tel. (08) 8747 6301", "(08) 8747 6301"},
      {"phone_national", "416 60 039 office", "416 60 039"},
      {"credit_card", "card 4539 6751 1253 2875 exp", "4539 6751 1253 2875"},
      {"credit_card", "pan=4539-6751-1253-2875;", "4539-6751-1253-2875"},
      {"credit_card", "{\"cc\":\"4539675112532875\"}", "4539675112532875"},
      {"credit_card", "amex 3714 156183 65465", "3714 156183 65465"},
      {"iban", "to GB82 WEST 1234 5698 7654 32 today", "GB82 WEST 1234 5698 7654 32"},
      {"iban", "iban=DE89370400440532013000", "DE89370400440532013000"},
      {"iban", "FR1420041010050500013M02606.", "FR1420041010050500013M02606"},
      {"us_ssn", "SSN 536-22-1987.", "536-22-1987"},
      {"us_ssn", "social security number 536 22 1987", "536 22 1987"},
      {"us_ssn", "ssn: 536221987", "536221987"},
      {"ipv4", "GET / from 81.2.69.142:443", "81.2.69.142"},
      {"ipv6", "peer 2a00:1450:4001:82b::200e port", "2a00:1450:4001:82b::200e"},
      {"ipv6", "[fe80::1ff:fe23:4567:890a]:22", "fe80::1ff:fe23:4567:890a"},
      {"mac_address", "ether 3c:22:fb:7a:91:0e txq", "3c:22:fb:7a:91:0e"},
      {"mac_address", "Physical Address: 3C-22-FB-7A-91-0E", "3C-22-FB-7A-91-0E"},
      {"mac_address", "mac 3c22.fb7a.910e up", "3c22.fb7a.910e"},
      {"us_passport", "passport number 518242591", "518242591"},
      {"us_passport", "Passport #: A12345678", "A12345678"},
      {"us_drivers_license", "Driver's License: D1234567", "D1234567"},
      {"us_drivers_license", "DL# 12345678", "12345678"},
      {"date_of_birth", "DOB: 07/23/1984", "07/23/1984"},
      {"date_of_birth", "born on July 23, 1984 in", "July 23, 1984"},
      {"aws_access_key_id", "id=AKIAUP6PPB2TDBM72FQO&", "AKIAUP6PPB2TDBM72FQO"},
      {"aws_secret_access_key", "{\"AWS_SECRET_ACCESS_KEY\": \"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\"}",
       "2VD+eR1UYzaLiA+zNyD7CHLn+xC/1hsYgBds1ghx"},
      {"github_pat", "token ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d.", "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"},
      {"gitlab_pat", "PRIVATE-TOKEN: glpat-g6YYZYn9ZhyiA4uoRgna", "glpat-g6YYZYn9ZhyiA4uoRgna"},
      {"slack_token", "SLACK=xoxb-928159013962-4595711777741-jgVvVqE1SkHbn88HxjSI6bWH",
       "xoxb-928159013962-4595711777741-jgVvVqE1SkHbn88HxjSI6bWH"},
      {"stripe_secret_key", "Stripe.api_key = 'sk_live_goEmvnEN5N1aE6PwZPf1Qh6y'", "sk_live_goEmvnEN5N1aE6PwZPf1Qh6y"},
      {"url_with_password", "DATABASE_URL=postgres://app:Tr0ub4dor-3x@db.internal:5432/app", "Tr0ub4dor-3x"},
      {"url_with_password", "https://user:p%40ss-w0rd@example.com/x", "p%40ss-w0rd"},
      {"generic_secret_assignment", "export DB_PASSWORD=s3cR3t!v4lue-2024", "s3cR3t!v4lue-2024"},
      {"generic_secret_assignment", "{\"api_key\": \"9f8b7c6d5e4f3a2b1c0dQ\"}", "9f8b7c6d5e4f3a2b1c0dQ"},
      {"generic_secret_assignment", "token: zq8X4mN2pL7vR1kT\n", "zq8X4mN2pL7vR1kT"},
  };
  for (const auto& c : cases) {
    auto found = scan(default_scanner(), c.text);
    bool hit = false;
    for (const auto& f : found) hit |= f.detector == c.detector && f.value == c.value;
    EXPECT_TRUE(hit) << c.detector << " should find [" << c.value << "] in \"" << c.text
                     << "\", found " << describe(found);
  }
}

TEST(DlpDetectors, PrivateKeyBlocksRunToTheirEndLine) {
  std::string pem = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5\n"
                    "oAoGCCqGSM49AwEHoUQDQgAE\n-----END EC PRIVATE KEY-----";
  std::string text = "key:\n" + pem + "\nrest";
  auto found = scan(default_scanner(), text);
  ASSERT_EQ(found.size(), 1u) << describe(found);
  EXPECT_EQ(found[0].detector, "private_key");
  EXPECT_EQ(found[0].value, pem);
  // A truncated key (no END line) is still the key's body.
  std::string truncated = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5v\nbmUAAAAE";
  found = scan(default_scanner(), truncated + "\n");
  ASSERT_EQ(found.size(), 1u) << describe(found);
  EXPECT_EQ(found[0].value, truncated + "\n");
  auto result = default_scanner().scan(text);
  EXPECT_TRUE(result.blocked);
}

TEST(DlpDetectors, LeaveLookAlikesAlone) {
  const std::vector<const char*> benign{
      "request 123e4567-e89b-12d3-a456-426614174000 done",  // UUID
      "commit e83c5163316f89bfbde7d9ab23ca2e25604af290 (HEAD)",  // git SHA
      "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      "<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
      "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\">",
      "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
      "ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation.",
      "2024-05-28T02:16:07.507Z INFO started in 12ms",
      "version 1.2.3 and v1.2.3.4 and pi 3.14159265",
      "order 12345678 shipped, 3 items, total 1 234 567",
      "timestamp 1700000000000 ms",
      "xghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d",  // inside a longer token
      "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8",      // too short
      "XAKIAUP6PPB2TDBM72FQO1",
      "GB82 WEST 1234 5698 7654 33",  // IBAN with a bad checksum
      "SSN 078-05-1120 and 000-12-3456",  // known fake, area 000
      "The office is at 17031 2202 Rissik St",  // a house number
      "std::max(a, b); std::vector<int> v; a::b",
      "MAC 00:00:00:00:00:00",
      "password = get_password()",
      "password: ${DB_PASSWORD}",
      "token = refresh_token_value",
      "user@localhost and a@b.c",
      "see https://example.com/path?x=1#frag",
      "passport photo 518242591",  // nine digits without a passport number cue
      "4539 6751 1253 2876",  // Luhn fails
  };
  for (const char* text : benign) {
    auto found = scan(default_scanner(), text);
    EXPECT_TRUE(found.empty()) << "\"" << text << "\": " << describe(found);
  }
}

TEST(DlpDetectors, DataUriIsNotAHighEntropySecretEvenWhenEnabled) {
  auto found = scan(full_scanner(),
                    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
                    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==");
  EXPECT_TRUE(found.empty()) << describe(found);
}

TEST(DlpDetectors, HighEntropyDetectorsAreOffByDefaultAndFlagHashesWhenOn) {
  const char* sha = "e83c5163316f89bfbde7d9ab23ca2e25604af290";
  EXPECT_TRUE(scan(default_scanner(), sha).empty());
  auto found = scan(full_scanner(), sha);
  ASSERT_EQ(found.size(), 1u) << describe(found);
  EXPECT_EQ(found[0].detector, "high_entropy_hex");
}

TEST(DlpDetectors, VendorDocumentationKeysAreReportedAsExamples) {
  const std::vector<std::pair<const char*, const char*>> cases{
      {"AKIAIOSFODNN7EXAMPLE", "aws_access_key_id"},
      {"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key"},
      {"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
       "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
       "jwt"},
      {"ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "github_pat"},
      {"card 4111 1111 1111 1111", "credit_card"},
      {"(303) 555-0142", "phone_nanp"},
      {"from 192.0.2.17", "ipv4"},
  };
  for (const auto& [text, detector] : cases) {
    auto found = scan(default_scanner(), text);
    ASSERT_EQ(found.size(), 1u) << text << ": " << describe(found);
    EXPECT_EQ(found[0].detector, detector) << text;
    EXPECT_TRUE(found[0].example) << text;
  }
  // A live-looking key of the same shape is not an example.
  auto live = scan(default_scanner(), "AKIAUP6PPB2TDBM72FQO");
  ASSERT_EQ(live.size(), 1u);
  EXPECT_FALSE(live[0].example);
}
