// Scanning a large input in pieces on several threads gives exactly the one-thread findings
// (candidates.hpp says how), and the RE2 confirmers compiled on first hit give the same findings
// whichever threads hit them first.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "dlp/candidates.hpp"
#include "dlp/detectors.hpp"
#include "dlp/engine.hpp"
#include "dlp/literals.hpp"
#include "dlp/scanner.hpp"

using namespace airlock::dlp;

namespace {

// Secrets of every engine, several spread over lines: a PEM block over four lines, a context
// word on the line before its phone number, a value group, a JWT, runs, a base64 literal.
const std::string kSecrets =
    "user jane.doe@example.org logged in from 81.2.69.142\n"
    "key=AKIAUP6PPB2TDBM72FQO token ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\n"
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\nqd7Hk2JxQ0wVbQ8s\n"
    "-----END RSA PRIVATE KEY-----\n"
    "auth eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxNzAwMDAwMDAwfQ."
    "Xq3vJ0cW8m2bJd9sPq7Lz1Yt4kN6rF5hA0uE3wG2iVo end\n"
    "card 4539 6751 1253 2875 and 416 60 039 office, iban GB82 WEST 1234 5698 7654 32\n"
    "my phone:\n+44 20 7946 0958\n"
    "DATABASE_URL=postgres://app:Tr0ub4dor-3x@db.internal:5432/app\n"
    "basic YWRtaW46VHIwdWI0ZG9yJjM6eC95 ssn 536-22-1987 (415) 734-2219x12\n";

// Log lines dense in digits (timestamps, durations, ids, addresses) with no secret in them.
std::string filler(std::size_t bytes, unsigned seed) {
  std::mt19937 random(seed);
  std::string out;
  while (out.size() < bytes) {
    out += "2026-12-03T12:" + std::to_string(10 + random() % 50) + ":" + std::to_string(10 + random() % 50) +
           ".123Z INFO GET /api/v1/items/" + std::to_string(random() % 1000000) + " 200 " +
           std::to_string(random() % 900) + "ms req=" + std::to_string(random()) + "\n";
  }
  return out;
}

Policy redacting_private_keys() {
  Policy policy;
  for (const char* id : {"private_key", "openssh_private_key", "pgp_private_key_block"})
    policy.detectors[id].action = Action::redact;
  for (const char* id : {"high_entropy_base64", "high_entropy_hex"}) policy.detectors[id].enabled = true;
  return policy;
}

Scanner make_scanner(const Policy& policy) {
  auto scanner = Scanner::create(policy);
  if (!scanner) ADD_FAILURE() << scanner.error().message;
  return std::move(*scanner);
}

ScanOptions with_threads(unsigned threads, const LiteralSet* literals = nullptr) {
  ScanOptions options;
  options.literals = literals;
  options.threads = threads;
  return options;
}

// How many findings of `result` start in [from, to).
std::size_t findings_in(const ScanResult& result, std::size_t from, std::size_t to) {
  std::size_t n = 0;
  for (const Finding& f : result.findings) n += f.start >= from && f.start < to;
  return n;
}

}  // namespace

TEST(DlpPieces, SplitAfterLineBreaksIntoPiecesOfAtLeastTheMinimum) {
  const std::string text = filler(10'000, 1);
  for (unsigned count : {1u, 2u, 3u, 7u, 100u}) {
    auto pieces = detail::split_at_lines(text, count, 1000);
    ASSERT_FALSE(pieces.empty());
    EXPECT_LE(pieces.size(), count);
    EXPECT_EQ(pieces.front().start, 0u);
    EXPECT_EQ(pieces.back().end, text.size());
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      EXPECT_GE(pieces[i].end - pieces[i].start, 1000u);
      if (i + 1 < pieces.size()) {
        EXPECT_EQ(pieces[i].end, pieces[i + 1].start);
        EXPECT_EQ(text[pieces[i].end - 1], '\n');
      }
    }
  }
  EXPECT_EQ(detail::split_at_lines(text, 7, 1000).size(), 7u);
  EXPECT_EQ(detail::split_at_lines(std::string(10'000, 'a'), 4, 1000).size(), 1u) << "no line break";
  EXPECT_EQ(detail::split_at_lines(text, 4, 20'000).size(), 1u) << "too short to split";
  EXPECT_EQ(detail::split_at_lines("", 4, 1000).size(), 1u);
}

// The split falls at each line of kSecrets in turn (and around it): every secret is found
// exactly once, and the findings are those of one thread.
TEST(DlpParallel, FindingsAcrossThePieceBoundaryAreFoundExactlyOnce) {
  const Scanner scanner = make_scanner(redacting_private_keys());
  auto literals = LiteralSet::compile({"admin:Tr0ub4dor&3:x/y"});
  ASSERT_TRUE(literals.ok()) << literals.error().message;
  const std::string prefix = filler(detail::kMinPieceBytes + 4096, 2);
  const ScanResult alone = scanner.scan(kSecrets, with_threads(1, &*literals));
  ASSERT_GE(alone.findings.size(), 12u);
  std::size_t split_inside = 0;
  for (std::size_t line = 0; line <= kSecrets.size(); line = kSecrets.find('\n', line) + 1) {
    // The split is at the first line break after the middle: put the middle at this line.
    const std::size_t middle = prefix.size() + line - 1;  // the '\n' ending the line before
    const std::string suffix = filler(2 * middle - prefix.size() - kSecrets.size(), 3);
    const std::string text = prefix + kSecrets + suffix;
    const auto pieces = detail::split_at_lines(text, 2, detail::kMinPieceBytes);
    ASSERT_EQ(pieces.size(), 2u);
    const std::size_t boundary = pieces[0].end;
    split_inside += boundary > prefix.size() && boundary < prefix.size() + kSecrets.size();

    const ScanResult one = scanner.scan(text, with_threads(1, &*literals));
    const ScanResult two = scanner.scan(text, with_threads(2, &*literals));
    EXPECT_EQ(one.findings, two.findings) << "boundary at " << boundary - prefix.size();
    EXPECT_EQ(findings_in(two, prefix.size(), prefix.size() + kSecrets.size()), alone.findings.size())
        << "boundary at " << boundary - prefix.size();
    EXPECT_EQ(scanner.redact(text, one), scanner.redact(text, two));
    if (kSecrets.find('\n', line) == std::string::npos) break;
  }
  EXPECT_GE(split_inside, 10u) << "the boundary fell inside the secrets' lines";
}

// Random log data with secrets at random places, split into 2 to 8 pieces.
TEST(DlpParallel, ManyPiecesGiveTheOneThreadFindings) {
  const Scanner scanner = make_scanner(redacting_private_keys());
  std::mt19937 random(42);
  std::string text;
  while (text.size() < 6 * detail::kMinPieceBytes) {
    text += filler(1000 + random() % 30000, static_cast<unsigned>(random()));
    text += kSecrets.substr(0, random() % kSecrets.size());  // secrets cut anywhere
    text += random() % 2 ? "\n" : " ";
  }
  const ScanResult one = scanner.scan(text, with_threads(1));
  ASSERT_GT(one.findings.size(), 200u);
  for (unsigned threads : {2u, 3u, 5u, 8u}) {
    const ScanResult many = scanner.scan(text, with_threads(threads));
    EXPECT_EQ(one.findings, many.findings) << threads << " threads";
    EXPECT_EQ(one.blocked, many.blocked);
  }
}

TEST(DlpParallel, JsonDocumentsAreSplitInTheirDecodedText) {
  const Scanner scanner = make_scanner(redacting_private_keys());
  std::string lines = filler(detail::kMinPieceBytes, 4) + kSecrets + filler(detail::kMinPieceBytes, 5);
  std::string escaped;  // one JSON string: every line break an escape
  for (char c : lines) escaped += c == '\n' ? std::string("\\n") : c == '"' ? std::string("\\\"") : std::string(1, c);
  const std::string document = "{\"log\": \"" + escaped + "\"}";
  const ScanResult one = scanner.scan(document, with_threads(1));
  const ScanResult two = scanner.scan(document, with_threads(2));
  ASSERT_GE(one.findings.size(), 12u);
  EXPECT_EQ(one.findings, two.findings);
}

TEST(DlpConfirmers, EveryDetectorsConfirmerCompiles) {
  Policy all;
  for (const auto& spec : detail::detector_table()) all.detectors[std::string(spec.id)].enabled = true;
  auto set = detail::DetectorSet::build(all);
  ASSERT_TRUE(set.ok()) << set.error().message;
  auto compiled = (*set)->compile_confirmers();
  EXPECT_TRUE(compiled.ok()) << compiled.error().message;
}

TEST(DlpConfirmers, AConfirmerRe2RefusesSaysSoInsteadOfCrashing) {
  detail::Confirmer confirmer("(?:[a-)$");
  EXPECT_FALSE(confirmer.get().regex->ok());
  EXPECT_FALSE(confirmer.get().has_value_group);
}

// Fresh scanners (nothing compiled yet) hit by eight threads at once: each thread's findings are
// those of a scanner whose confirmers were all compiled before.
TEST(DlpConfirmers, ConcurrentFirstHitsGiveTheSameFindings) {
  std::string text;
  for (const auto& spec : detail::detector_table())
    if (spec.engine == detail::Engine::vectorscan) text += std::string(spec.example) + " .\n";
  const Policy policy = redacting_private_keys();
  const Scanner reference = make_scanner(policy);
  const ScanResult expected = reference.scan(text);
  ASSERT_GE(expected.findings.size(), 20u);
  for (int round = 0; round < 20; ++round) {
    const Scanner fresh = make_scanner(policy);
    std::atomic<bool> go{false};
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        if (fresh.scan(text).findings != expected.findings) ++wrong;
      });
    go = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(wrong.load(), 0) << "round " << round;
  }
}
