#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "common/json_limits.hpp"
#include "common/no_sigpipe.hpp"
#include "common/split.hpp"
#include "common/units.hpp"
#include "common/utc_time.hpp"

using namespace airlock;
using namespace std::chrono_literals;

TEST(ParseDuration, AcceptsUnitsAndCompounds) {
  EXPECT_EQ(*parse_duration("30s"), 30s);
  EXPECT_EQ(*parse_duration("250ms"), 250ms);
  EXPECT_EQ(*parse_duration("1m30s"), 90s);
  EXPECT_EQ(*parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(*parse_duration("2"), 2s);
  EXPECT_EQ(*parse_duration("1h"), 3600s);
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

TEST(SplitNonempty, LeavesOutEmptyPieces) {
  using V = std::vector<std::string>;
  EXPECT_EQ(airlock::split_nonempty("/v1//tools/x/", '/'), (V{"v1", "tools", "x"}));
  EXPECT_EQ(airlock::split_nonempty("  echo  csv-read ", ' '), (V{"echo", "csv-read"}));
  EXPECT_EQ(airlock::split_nonempty("", ' '), V{});
  EXPECT_EQ(airlock::split_nonempty("////", '/'), V{});
  EXPECT_EQ(airlock::split_nonempty("one", ','), V{"one"});
}
