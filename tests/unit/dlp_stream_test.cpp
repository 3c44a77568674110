// Streaming gives what a one-shot scan of the whole stream gives, wherever the chunks split.
#include <gtest/gtest.h>

#include <random>

#include "dlp/scanner.hpp"

using namespace airlock::dlp;

namespace {

// Secrets of every engine: anchored (Vectorscan), extended (PEM, JWT), runs (phone, card, IBAN,
// IP), context after the match, a value group, and a registered literal in base64.
const std::string kStream =
    "log start\nuser jane.doe@example.org logged in from 81.2.69.142\n"
    "key=AKIAUP6PPB2TDBM72FQO token ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\n"
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END RSA PRIVATE KEY-----\n"
    "auth eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxNzAwMDAwMDAwfQ."
    "Xq3vJ0cW8m2bJd9sPq7Lz1Yt4kN6rF5hA0uE3wG2iVo end\n"
    "card 4539 6751 1253 2875 and 416 60 039 office, iban GB82 WEST 1234 5698 7654 32\n"
    "DATABASE_URL=postgres://app:Tr0ub4dor-3x@db.internal:5432/app\n"
    "basic YWRtaW46VHIwdWI0ZG9yJjM6eC95 ssn 536-22-1987 (415) 734-2219x12\n";

Policy redacting_private_keys() {
  Policy policy;
  for (const char* id : {"private_key", "openssh_private_key", "pgp_private_key_block"})
    policy.detectors[id].action = Action::redact;
  return policy;
}

struct Streamed {
  std::string text;
  std::vector<Finding> findings;
  bool blocked = false;
};

Streamed stream_in_chunks(const Scanner& scanner, const LiteralSet* literals,
                          const std::vector<std::string_view>& chunks) {
  auto stream = scanner.open_stream(literals);
  Streamed out;
  if (!stream) {
    ADD_FAILURE() << stream.error().message;
    return out;
  }
  auto take = [&](StreamOutput o) {
    out.text += o.text;
    out.findings.insert(out.findings.end(), o.findings.begin(), o.findings.end());
    out.blocked = out.blocked || o.blocked;
  };
  for (auto chunk : chunks) take(stream->write(chunk));
  take(stream->finish());
  return out;
}

}  // namespace

TEST(DlpStream, EverySplitPointGivesTheOneShotResult) {
  auto scanner = *Scanner::create(redacting_private_keys());
  auto literals = *LiteralSet::compile({"Tr0ub4dor&3:x/y"});
  const ScanOptions options{&literals, JsonMode::off};
  const ScanResult whole = scanner.scan(kStream, options);
  const std::string expected_text = scanner.redact(kStream, whole);
  ASSERT_EQ(whole.findings.size(), 13u);  // one of each secret above
  const std::string_view data = kStream;
  for (std::size_t split = 0; split <= data.size(); ++split) {
    Streamed s = stream_in_chunks(scanner, &literals, {data.substr(0, split), data.substr(split)});
    ASSERT_EQ(s.findings, whole.findings) << "split at " << split;
    ASSERT_EQ(s.text, expected_text) << "split at " << split;
  }
}

TEST(DlpStream, ByteByByteAndRandomChunks) {
  auto scanner = *Scanner::create(redacting_private_keys());
  const ScanResult whole = scanner.scan(kStream, {nullptr, JsonMode::off});
  const std::string expected_text = scanner.redact(kStream, whole);
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < kStream.size(); ++i) bytes.push_back(std::string_view(kStream).substr(i, 1));
  Streamed s = stream_in_chunks(scanner, nullptr, bytes);
  EXPECT_EQ(s.findings, whole.findings);
  EXPECT_EQ(s.text, expected_text);
  std::mt19937 rng(5);
  for (int round = 0; round < 100; ++round) {
    std::vector<std::string_view> chunks;
    for (std::size_t at = 0; at < kStream.size();) {
      std::size_t size = std::min<std::size_t>(kStream.size() - at, rng() % 64);
      chunks.push_back(std::string_view(kStream).substr(at, size));
      at += size;
    }
    Streamed r = stream_in_chunks(scanner, nullptr, chunks);
    ASSERT_EQ(r.findings, whole.findings) << "round " << round;
    ASSERT_EQ(r.text, expected_text) << "round " << round;
  }
}

TEST(DlpStream, HoldsBackOnlyWhatAMatchMayStillNeed) {
  auto scanner = *Scanner::create(Policy::defaults());
  auto stream = scanner.open_stream();
  ASSERT_TRUE(stream.ok());
  std::string line = "2024-05-28T02:16:07Z GET /api/users/48213 200 from 81.2.69.142 by jane@example.org\n";
  std::string whole;
  std::string out;
  std::size_t most_buffered = 0;
  for (int i = 0; i < 50000; ++i) {  // about 4 MB
    whole += line;
    out += stream->write(line).text;
    most_buffered = std::max(most_buffered, stream->buffered_bytes());
  }
  out += stream->finish().text;
  EXPECT_LT(most_buffered, 4096u);  // the longest anchored match (~600 bytes) plus look-behind
  EXPECT_EQ(out, scanner.redact(whole, scanner.scan(whole, {nullptr, JsonMode::off})));
}

TEST(DlpStream, APrivateKeyBlocksTheRestOfTheStream) {
  auto scanner = *Scanner::create(Policy::defaults());  // private keys block by default
  auto stream = scanner.open_stream();
  ASSERT_TRUE(stream.ok());
  std::string before(5000, 'a');
  std::string text = stream->write(before + "\n").text;
  auto out = stream->write("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n");
  text += out.text;
  out = stream->write("-----END RSA PRIVATE KEY-----\nafter\n");
  text += out.text;
  auto last = stream->finish();
  text += last.text;
  EXPECT_TRUE(last.blocked);
  EXPECT_EQ(text.find("PRIVATE KEY"), std::string::npos) << "no byte of the key may leave";
  EXPECT_EQ(text.find("after"), std::string::npos);
}

TEST(DlpStream, AdversarialRepetitionDoesNotGrowTheBuffer) {
  // Overlapping candidates hold output back until the overlap ends. A stream built to chain
  // them ("a@b.cda@b.cda@b.cd...": every address overlaps the next) is cut at 32 KiB, and no
  // part of a finding leaves unredacted.
  auto scanner = *Scanner::create(Policy::defaults());
  for (std::string_view piece : {"password=Zx9", "a@b.cd", "4111 ", "1.2.3.", "ghp_", "::ff:"}) {
    auto stream = scanner.open_stream().value();
    std::size_t most_buffered = 0;
    for (int i = 0; i < 50000; ++i) {
      (void)stream.write(piece);
      most_buffered = std::max(most_buffered, stream.buffered_bytes());
    }
    (void)stream.finish();
    EXPECT_LT(most_buffered, 40u * 1024) << piece;
  }
  // The chain's text comes out redacted all the same, and secrets inside it too, whatever the
  // chunking around the forced cuts.
  std::string chain;
  for (int i = 0; i < 8000; ++i) chain += "a@b.cd";
  const std::string data = chain + " AKIAUP6PPB2TDBM72FQO " + chain + " ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d";
  std::mt19937 rng(9);
  for (int round = 0; round < 5; ++round) {
    auto stream = scanner.open_stream().value();
    std::string out;
    for (std::size_t at = 0; at < data.size();) {
      std::size_t size = std::min<std::size_t>(data.size() - at, 1 + rng() % 3000);
      out += stream.write(std::string_view(data).substr(at, size)).text;
      at += size;
    }
    out += stream.finish().text;
    EXPECT_EQ(out.find("@b.cd"), std::string::npos) << out.substr(0, 200);
    EXPECT_EQ(out.find("AKIA"), std::string::npos);
    EXPECT_EQ(out.find("ghp_"), std::string::npos);
  }
}
