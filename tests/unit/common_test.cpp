#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>

#include "common/base64.hpp"
#include "common/http_url.hpp"
#include "common/json_limits.hpp"
#include "common/json_text.hpp"
#include "common/utf8.hpp"
#include "common/no_sigpipe.hpp"
#include "common/percent_encoding.hpp"
#include "common/split.hpp"
#include "common/units.hpp"
#include "common/utc_time.hpp"

using namespace airlock;
using namespace std::chrono_literals;

TEST(Base64, RoundTripsAndRefusesWhatIsNotPaddedBase64) {
  for (std::string bytes : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                            std::string("\0\xff\x80 binary", 10)}) {
    auto back = base64_decode(base64_encode(bytes));
    ASSERT_TRUE(back) << bytes;
    EXPECT_EQ(*back, bytes);
  }
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(*base64_decode("Zm8="), "fo");  // the padding is not a byte
  for (const char* bad : {"Zm8", "Zm8=\n", "Z=8=", "Zm!=", "=Zm8", "Zm 8"}) EXPECT_FALSE(base64_decode(bad)) << bad;
}

TEST(ParseDuration, AcceptsUnitsAndCompounds) {
  EXPECT_EQ(*parse_duration("30s"), 30s);
  EXPECT_EQ(*parse_duration("250ms"), 250ms);
  EXPECT_EQ(*parse_duration("1m30s"), 90s);
  EXPECT_EQ(*parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(*parse_duration("2"), 2s);
  EXPECT_EQ(*parse_duration("1h"), 3600s);
  EXPECT_EQ(*parse_duration("7d"), std::chrono::hours(24 * 7));  // a snapshot's retention
}

TEST(ParseDuration, RejectsGarbage) {
  for (const char* bad : {"", "s", "10x", "1s2", "-1s", "1e9999h", "10 s"})
    EXPECT_FALSE(parse_duration(bad).ok()) << bad;
}

TEST(ParseSize, AcceptsBinaryAndDecimalUnits) {
  EXPECT_EQ(*parse_size("512M"), 512ULL << 20);
  EXPECT_EQ(*parse_size("64MiB"), 64ULL << 20);
  EXPECT_EQ(*parse_size("1G"), 1ULL << 30);
  EXPECT_EQ(*parse_size("1GB"), 1000000000ULL);
  EXPECT_EQ(*parse_size("4096"), 4096ULL);
  EXPECT_EQ(*parse_size("10k"), 10240ULL);
  EXPECT_EQ(*parse_size("256Mi"), 256ULL << 20);
  EXPECT_EQ(*parse_size("2Gi"), 2ULL << 30);
}

TEST(ParseSize, RejectsGarbageAndOverflow) {
  for (const char* bad : {"", "M", "12X", "1M2", "-5M", "99999999999999999T"})
    EXPECT_FALSE(parse_size(bad).ok()) << bad;
}

TEST(FormatUnits, RoundTrips) {
  EXPECT_EQ(format_size(512ULL << 20), "512M");
  EXPECT_EQ(format_size(1000), "1000");
  EXPECT_EQ(format_duration(30s), "30s");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
}

TEST(WriteWithoutSigpipe, AClosedPipeIsEpipeNotADeadProcess) {
  // SIGPIPE keeps its default action (terminate) in this test binary.
  ASSERT_EQ(::signal(SIGPIPE, SIG_DFL), SIG_DFL);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  errno = 0;
  EXPECT_EQ(write_without_sigpipe(fds[1], "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE)) << "the SIGPIPE was left pending";
  sigset_t mask;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  EXPECT_FALSE(sigismember(&mask, SIGPIPE)) << "SIGPIPE was left blocked";
  ::close(fds[1]);
}

TEST(WriteAll, CarriesMoreThanAPipeHoldsAndStopsAtAGoneReader) {
  ASSERT_EQ(::signal(SIGPIPE, SIG_DFL), SIG_DFL);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // Four times the pipe's 64 KiB: every write but the last is short or blocks until read.
  std::string sent(256 * 1024, '\0');
  for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>('a' + i % 26);
  std::string received;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) received.append(buf, static_cast<std::size_t>(n));
  });
  EXPECT_TRUE(write_all(fds[1], sent));
  ::close(fds[1]);
  reader.join();
  EXPECT_EQ(received, sent);

  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  errno = 0;
  EXPECT_FALSE(write_all(fds[1], "left unread"));
  EXPECT_EQ(errno, EPIPE);
  ::close(fds[1]);
}

// The one URL parser: the host every user of a URL sees, and what it refuses.
TEST(HttpUrl, ReadsTheHostTheWayEveryUserOfTheUrlWill) {
  auto tricky = parse_http_url("http://127.0.0.1?.attacker.invalid/hook");
  ASSERT_TRUE(tricky.ok()) << tricky.error().message;
  EXPECT_EQ(tricky->host, "127.0.0.1");
  EXPECT_TRUE(tricky->is_loopback());
  EXPECT_EQ(tricky->target, "/?.attacker.invalid/hook");
  auto v6 = parse_http_url("https://[::1]:8443/a/b?c=d");
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->ipv6 && v6->is_loopback() && v6->tls);
  EXPECT_EQ(v6->authority(), "[::1]:8443");
  EXPECT_EQ(v6->target, "/a/b?c=d");
  auto plain = parse_http_url("HTTPS://Hooks.Example");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->host, "hooks.example");
  EXPECT_EQ(plain->port, "443");
  EXPECT_EQ(plain->target, "/");
  EXPECT_FALSE(plain->is_loopback());
  // Boost 1.81 alone read this as host 127.0.0.1 and path ".attacker.invalid/".
  auto lookalike = parse_http_url("http://127.0.0.1.attacker.invalid/");
  EXPECT_TRUE(!lookalike.ok() || (lookalike->host == "127.0.0.1.attacker.invalid" && !lookalike->is_loopback()));
  EXPECT_FALSE(parse_http_url("http://localhost.attacker.invalid/")->is_loopback());
  for (const char* bad : {"ftp://a.example/", "http://", "http:///x", "http://user@127.0.0.1/",
                          "http://127.0.0.1@evil.example/", "https://a.example/#frag", "http://a.example:0/",
                          "http://a.example:65536/", "http://a.example:80x/", "http://a%2eexample/",
                          "http://a_b.example/", "http://[::1/", "http://a.example/\r\nX: 1", "a.example",
                          "http://[v1.x]/", "http://127.0.0.1x/", "http://127.0.0.1.attacker.invalid:8/"}) {
    auto parsed = parse_http_url(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.error().code, "invalid_url") << bad;
    }
  }
}

// A member named twice in any object, at any depth, of any type, is refused by the strict
// form; the same name in two objects is not a repetition; the lenient form keeps the last.
// A query's '+' is a space (a form's encoding); elsewhere it is itself. Malformed escapes are
// refused, never passed on.
TEST(PercentDecode, PlusIsASpaceOnlyInAQueryAndBadEscapesAreRefused) {
  EXPECT_EQ(percent_decode("ls+-l", true), "ls -l");
  EXPECT_EQ(percent_decode("a+b%2Bc", true), "a b+c");
  EXPECT_EQ(percent_decode("PS1%3D%27%24+%27", true), "PS1='$ '");
  EXPECT_EQ(percent_decode("a+b", false), "a+b");
  EXPECT_EQ(percent_decode("%41%62", false), "Ab");
  EXPECT_FALSE(percent_decode("%4", true));
  EXPECT_FALSE(percent_decode("%zz", true));
  EXPECT_FALSE(percent_decode("100%", false));
}

TEST(ParseJsonUniqueMembers, RefusesAMemberNamedTwice) {
  for (const char* twice : {R"({"alg":"none","alg":"EdDSA"})", R"({"a":{"b":1,"c":2,"b":3}})",
                            R"([{"x":[]},{"y":{},"y":null}])", R"({"s":{},"s":{}})", R"({"a":1,"a":2})"}) {
    auto parsed = parse_json_unique_members(twice, 64);
    ASSERT_FALSE(parsed.ok()) << twice;
    EXPECT_EQ(parsed.error().code, "repeated_member") << twice;
    EXPECT_TRUE(parse_json_bounded(twice, 64).ok()) << twice;
  }
  EXPECT_EQ(parse_json_bounded(R"({"alg":"none","alg":"EdDSA"})", 64)->at("alg"), "EdDSA");
  auto distinct = parse_json_unique_members(R"({"a":{"a":1},"b":[{"a":2},{"a":3}]})", 64);
  ASSERT_TRUE(distinct.ok());
  EXPECT_EQ(*distinct, nlohmann::json::parse(R"({"a":{"a":1},"b":[{"a":2},{"a":3}]})"));
  EXPECT_EQ(parse_json_unique_members("{", 64).error().code, "invalid_json");
}

// Nesting is bounded while parsing: 100,000 levels are refused without building them.
TEST(ParseJsonBounded, RefusesNestingPastTheLimit) {
  EXPECT_TRUE(parse_json_bounded(R"({"a":[[1]]})", 3).ok());
  auto deep = parse_json_bounded(R"({"a":[[1]]})", 2);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().code, "too_deep");
  EXPECT_NE(deep.error().message.find("limit of 2 levels"), std::string::npos);
  std::string hostile = std::string(100000, '[') + std::string(100000, ']');
  auto very_deep = parse_json_bounded(hostile, kDefaultMaxJsonDepth);
  ASSERT_FALSE(very_deep.ok());
  EXPECT_EQ(very_deep.error().code, "too_deep");
  EXPECT_NE(very_deep.error().message.find("limit of 64 levels"), std::string::npos);
  auto unterminated = parse_json_bounded(std::string(100000, '{'), kDefaultMaxJsonDepth);
  EXPECT_FALSE(unterminated.ok());
  EXPECT_EQ(parse_json_bounded("{", 64).error().code, "invalid_json");
  EXPECT_EQ(parse_json_bounded("[1, 2", 64).error().code, "invalid_json");
  EXPECT_EQ(*parse_json_bounded("[[\"x\"]]", 2), nlohmann::json::parse("[[\"x\"]]"));
}

TEST(Rfc3339, MillisecondsAndSecondsInUtc) {
  EXPECT_EQ(airlock::rfc3339_ms(std::int64_t{0}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(airlock::rfc3339_ms(std::int64_t{1764637445007}), "2025-12-02T01:04:05.007Z");
  // Before 1970 the millisecond part stays 0-999 (floor, not truncation toward zero).
  EXPECT_EQ(airlock::rfc3339_ms(std::int64_t{-1}), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(airlock::rfc3339_seconds(1764637445), "2025-12-02T01:04:05Z");
  const auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1764637445123));
  EXPECT_EQ(airlock::rfc3339_ms(t), "2025-12-02T01:04:05.123Z");
}

// parse_json_bounded reads with RapidJSON and builds nlohmann values: it must accept what
// nlohmann accepts, refuse what it refuses, and build the same value (types included: an
// unsigned, a signed and a double 0 are three things to a schema's "integer").
// One difference, on purpose: nlohmann stops reading at a NUL byte outside a string and accepts
// "{}\0 x"; any NUL byte is refused here (stricter: such a body is not JSON).
void expect_same_as_nlohmann(const std::string& text) {
  SCOPED_TRACE(::testing::PrintToString(text));
  auto parsed = parse_json_bounded(text, kDefaultMaxJsonDepth);
  if (text.find('\0') != std::string::npos) {
    EXPECT_FALSE(parsed.ok());
    return;
  }
  nlohmann::json reference = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_EQ(parsed.ok(), !reference.is_discarded()) << (parsed.ok() ? "accepted" : "refused");
  if (!parsed.ok()) return;
  EXPECT_EQ(parsed->dump(), reference.dump());
  std::function<void(const nlohmann::json&, const nlohmann::json&)> same_types =
      [&](const nlohmann::json& a, const nlohmann::json& b) {
        ASSERT_EQ(a.type(), b.type()) << a.dump();
        if (a.is_structured())
          for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) same_types(*ia, *ib);
      };
  same_types(*parsed, reference);
}

TEST(ParseJsonBounded, AcceptsAndRefusesWhatNlohmannDoes) {
  const std::vector<std::string> cases = {
      "{}", "[]", "0", "-0", "1", "-1", "1.0", "-0.0", "1e2", "1E+2", "1e-2", "0.1", "123456789012345678",
      "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
      "1e308", "1e309", "-1e400", "1e-400", "-1e-400", "4.9e-324", "184467440737095516156",
      "2.2250738585072011e-308", "0.30000000000000004",
      "01", "-", "1.", ".5", "1e", "+1", "NaN", "Infinity", "-Infinity", "true", "false", "null",
      "tru", "nul", "\"\"", "\"a\"", "\"\\u0041\"", "\"\\ud83d\\ude00\"", "\"\\ud83d\"", "\"\\ude00\"",
      "\"\\ud83dx\"", "\"\\ud83d\\u0041\"", "\"\\x\"", "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"", "\"\\u00e9\"",
      "\"\xc3\xa9\"", "\"\xc3\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
      "\"\xf0\x9f\x98\x80\"", "\"\xff\"", "\"\x7f\"", "\"\x1f\"", "\"\t\"", "\"a\nb\"",
      std::string("\"a\0b\"", 5), std::string("{}\0", 3), std::string("{} \0 x", 6),
      "\xEF\xBB\xBF{}", "\xEF\xBB{}", " \t\r\n{} \n", "{} {}", "{},", "[1,]", "[,1]", "{\"a\":1,}",
      "{\"a\" 1}", "{a:1}", "{'a':1}", "{\"a\":1,\"a\":[2]}", "{\"b\":1,\"a\":{\"c\":null}}",
      "[1,2,[3,[4,{\"x\":\"y\"}]]]", "[\"\xc3\xa9\", \"\\u00e9\"]", "{\"\xff\":1}", "{\"\\ude00\":1}",
      "", " ", "[", "]", "\"", "\"abc", "/* c */ {}", "[1] // c", "\f{}", "\v{}", "\xc2\xa0{}",
  };
  for (const auto& text : cases) expect_same_as_nlohmann(text);
}

// Random damage to a document that has every kind of token: each variant gets the same verdict
// and the same value both ways.
TEST(ParseJsonBounded, AgreesWithNlohmannOnDamagedDocuments) {
  const std::string seed =
      "{\"s\":\"plain \\\"quoted\\\" \\u00e9\\ud83d\\ude00 \xc3\xa9\",\"n\":[0,-0,1.5e3,-12,"
      "18446744073709551616,0.1],\"o\":{\"t\":true,\"f\":false,\"z\":null},\"e\":[],\"k\":{}}";
  const std::string alphabet =
      std::string("{}[]\",:\\u0123456789.eE+-tfnrl \xc3\xa9\xed\xa0\x80\xff\x01") + '\0';
  std::mt19937 rng(20);
  for (int round = 0; round < 20000; ++round) {
    std::string text = seed;
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
      std::size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text.erase(at, 1); break;
        case 1: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        default: text[at] = alphabet[rng() % alphabet.size()];
      }
      if (text.empty()) text = "x";
    }
    expect_same_as_nlohmann(text);
    if (HasFailure()) return;
  }
}

TEST(IsValidUtf8, RefusesWhatNlohmannRefuses) {
  EXPECT_TRUE(is_valid_utf8("plain ascii, longer than eight bytes"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf"));
  for (const char* bad : {"\xc0\xaf", "\xc3", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                          "\xf8\x88\x80\x80\x80", "\x80", "abcdefgh\xff", "\xe2\x82"}) {
    EXPECT_FALSE(is_valid_utf8(bad)) << ::testing::PrintToString(std::string(bad));
    EXPECT_TRUE(nlohmann::json::parse("\"" + std::string(bad) + "\"", nullptr, false).is_discarded());
  }
}

// dump_compact writes what nlohmann's dump(-1, ' ', false, replace) writes, byte for byte.
TEST(DumpCompact, WritesNlohmannsBytes) {
  auto nlohmann_dump = [](const nlohmann::json& v) {
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::string every_byte;
  for (int c = 1; c < 0x80; ++c) every_byte.push_back(static_cast<char>(c));
  std::vector<nlohmann::json> values = {
      nullptr, true, false, 0, -1, 42u, std::numeric_limits<std::int64_t>::min(),
      std::numeric_limits<std::uint64_t>::max(), 0.1, -0.0, 1e100, 1.5, std::nan(""),
      "", every_byte, "caf\xc3\xa9 \xf0\x9f\x98\x80", "bad \xff utf-8 \xc3", "\xed\xa0\x80",
      std::string("nul\0inside", 10), nlohmann::json::array(), nlohmann::json::object(),
      nlohmann::json::binary({1, 2, 3}),
      {{"b", {1, "x\n", {{"c\"", nullptr}}}}, {"a", 2.5}, {"\t", {"\x01"}}}};
  // An escape at every offset of an 8-byte block, and at the ends.
  for (std::size_t at = 0; at < 20; ++at) {
    std::string s(20, 'a');
    s[at] = '\n';
    values.push_back(s);
    s[at] = '"';
    values.push_back(s);
    s[at] = '\x80';  // invalid: a lone continuation byte
    values.push_back(s);
  }
  // Escapes at every offset of strings across several 16-byte blocks, alone and in runs (the
  // writer stores 16 bytes at a time and moves past the plain ones).
  for (std::size_t length = 1; length <= 48; ++length)
    for (std::size_t at = 0; at < length; ++at)
      for (char c : {'\n', '"', '\\', '\x01', '\x1f', '\x7f'}) {
        std::string s(length, 'b');
        s[at] = c;
        values.push_back(s);
        for (std::size_t k = at; k < length; k += 3) s[k] = c;
        values.push_back(s);
      }
  for (const auto& v : values) {
    EXPECT_EQ(dump_compact(v), nlohmann_dump(v)) << nlohmann_dump(v);
    if (!v.is_string() || !is_valid_utf8(v.get_ref<const std::string&>())) continue;
    const std::string& s = v.get_ref<const std::string&>();  // its escapes' extra bytes
    EXPECT_EQ(json_escape_extra(s), nlohmann_dump(v).size() - 2 - s.size()) << nlohmann_dump(v);
  }
}

TEST(SplitNonempty, LeavesOutEmptyPieces) {
  using V = std::vector<std::string>;
  EXPECT_EQ(airlock::split_nonempty("/v1//tools/x/", '/'), (V{"v1", "tools", "x"}));
  EXPECT_EQ(airlock::split_nonempty("  echo  csv-read ", ' '), (V{"echo", "csv-read"}));
  EXPECT_EQ(airlock::split_nonempty("", ' '), V{});
  EXPECT_EQ(airlock::split_nonempty("////", '/'), V{});
  EXPECT_EQ(airlock::split_nonempty("one", ','), V{"one"});
}
