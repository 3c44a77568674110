// quotas: the configuration and its mistakes, and the book that admits or refuses calls:
// each quota refuses exactly past its limit, says which quota and when to retry, and a
// refused call uses up nothing. A fake clock: no test waits.
#include <gtest/gtest.h>

#include "pipeline/quotas/quota_book.hpp"
#include "policy/config.hpp"

namespace airlock {
namespace {

using namespace std::chrono_literals;
using QuotaBook = pipeline::MemoryQuotaBook;
using pipeline::QuotaHold;
using pipeline::QuotaRefusal;

std::string config_with(const std::string& quotas, const std::string& server = "") {
  return "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n" + server +
         "principals:\n  - {name: research-agent, apiKeySha256: " + std::string(64, 'a') +
         "}\n  - {name: other, apiKeySha256: " + std::string(64, 'b') + "}\n" + quotas;
}

Result<policy::Config> parse(const std::string& yaml) { return policy::parse_config(yaml, "test.yaml", "/tmp"); }

TEST(QuotasConfig, TheIssuesExampleIsReadAndAPrincipalOverridesTheDefaultKeyByKey) {
  auto c = parse(config_with(R"(quotas:
  default: {concurrent: 4, rate: 20/s, burst: 40, cpuSeconds: 120/m}
  principals:
    research-agent: {concurrent: 16, rate: 100/s, weight: 3}
  users: {concurrent: 2, rate: 5/s}
)"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto& q = c->quotas;
  EXPECT_EQ(q.defaults.concurrent, 4u);
  EXPECT_DOUBLE_EQ(q.defaults.rate->per_second(), 20);
  EXPECT_DOUBLE_EQ(*q.defaults.burst, 40);
  EXPECT_DOUBLE_EQ(q.defaults.cpu_seconds->amount, 120);
  EXPECT_EQ(q.defaults.cpu_seconds->per, 60s);
  auto research = q.for_principal("research-agent");
  EXPECT_EQ(research.concurrent, 16u);
  EXPECT_DOUBLE_EQ(research.rate->per_second(), 100);
  EXPECT_FALSE(research.burst);                     // its own rate: one second of it
  EXPECT_EQ(research.cpu_seconds, q.defaults.cpu_seconds);  // not set: the default's
  EXPECT_EQ(research.weight, 3u);
  EXPECT_EQ(q.for_principal("other"), q.defaults);
  EXPECT_EQ(q.users.concurrent, 2u);
  EXPECT_EQ(q.fallback_concurrent, 8u + 64u);  // the server's defaults
}

TEST(QuotasConfig, EveryMistakeIsRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"quotas: {default: {concurrent: 0}}", "quotas.default.concurrent: at least 1"},
      {"quotas: {default: {rate: 20}}", "quotas.default.rate: expected AMOUNT/WINDOW"},
      {"quotas: {default: {rate: -1/s}}", "is not a positive number"},
      {"quotas: {default: {rate: 5/fortnight}}", "quotas.default.rate: the window"},
      {"quotas: {default: {rate: 5/48h}}", "between 1ms and 24h"},
      {"quotas: {default: {burst: 10}}", "quotas.default.burst: needs a rate"},
      {"quotas: {default: {cpuSeconds: lots/m}}", "quotas.default.cpuSeconds"},
      {"quotas: {default: {concurency: 4}}", "concurency"},
      {"quotas: {users: {weight: 2}}", "weight"},
      {"quotas: {principals: {nobody: {concurrent: 1}}}", "quotas.principals.nobody: no principal of that name"},
      {"quotas: {principals: {other: {weight: 0}}}", "quotas.principals.other.weight"},
      {"quotas: {everyone: {}}", "everyone"},
  };
  for (const auto& [yaml, words] : cases) {
    auto c = parse(config_with(yaml + "\n"));
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(c.error().message.find(words), std::string::npos) << yaml << " -> " << c.error().message;
  }
}

// A clock the test moves.
struct FakeClock {
  std::chrono::steady_clock::time_point now = std::chrono::steady_clock::time_point(1000h);
  QuotaBook::Clock fn() {
    return [this] { return now; };
  }
};

policy::QuotasConfig quotas(const std::string& yaml, const std::string& server = "") {
  auto c = parse(config_with(yaml, server));
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? c->quotas : policy::QuotasConfig{};
}

const QuotaRefusal* refusal(const pipeline::QuotaAdmission& r) {
  return std::get_if<QuotaRefusal>(&r);
}

TEST(QuotaBook, ConcurrentCountsHoldsAndAnEndedCallGivesItsPlaceBack) {
  FakeClock clock;
  auto book = QuotaBook::create(clock.fn());
  auto q = quotas("quotas: {default: {concurrent: 2}}\n");
  auto a = book->admit(q, "other", "");
  auto b = book->admit(q, "other", "");
  ASSERT_FALSE(refusal(a) || refusal(b));
  auto c = book->admit(q, "other", "");
  ASSERT_TRUE(refusal(c));
  EXPECT_EQ(refusal(c)->quota, "concurrent");
  EXPECT_NE(refusal(c)->message.find("principal other"), std::string::npos);
  EXPECT_FALSE(refusal(book->admit(q, "research-agent", "")));  // its own count
  a = QuotaRefusal{};                                            // the first call ends
  EXPECT_EQ(book->in_flight("other"), 1u);
  EXPECT_FALSE(refusal(book->admit(q, "other", "")));
}

TEST(QuotaBook, TheRateIsATokenBucketAndRetryAfterComesFromIt) {
  FakeClock clock;
  auto book = QuotaBook::create(clock.fn());
  auto q = quotas("quotas: {default: {rate: 1/4s, burst: 3}}\n");
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(refusal(book->admit(q, "other", ""))) << i;
  auto refused = book->admit(q, "other", "");
  ASSERT_TRUE(refusal(refused));
  EXPECT_EQ(refusal(refused)->quota, "rate");
  EXPECT_EQ(refusal(refused)->retry_after, 4s);  // one token at 0.25/s
  clock.now += 2s;                               // half a token
  refused = book->admit(q, "other", "");
  ASSERT_TRUE(refusal(refused));  // a refusal takes nothing: still half a token
  EXPECT_EQ(refusal(refused)->retry_after, 2s);
  clock.now += 2s;
  EXPECT_FALSE(refusal(book->admit(q, "other", "")));
  EXPECT_TRUE(refusal(book->admit(q, "other", "")));
}

TEST(QuotaBook, CpuSecondsRefuseUntilTheWindowMoves) {
  FakeClock clock;
  auto book = QuotaBook::create(clock.fn());
  auto q = quotas("quotas: {principals: {research-agent: {cpuSeconds: 10/m}}}\n");
  EXPECT_FALSE(refusal(book->admit(q, "research-agent", "")));
  book->charge_cpu(q, "research-agent", "", 6);
  clock.now += 20s;
  EXPECT_FALSE(refusal(book->admit(q, "research-agent", "")));  // 6 of 10
  book->charge_cpu(q, "research-agent", "", 5);                  // 11 of 10
  auto refused = book->admit(q, "research-agent", "");
  ASSERT_TRUE(refusal(refused));
  EXPECT_EQ(refusal(refused)->quota, "cpuSeconds");
  EXPECT_EQ(refusal(refused)->retry_after, 40s);  // when the first 6 leave the window
  EXPECT_FALSE(refusal(book->admit(q, "other", "")));  // no cpuSeconds for it
  clock.now += 40s;
  EXPECT_FALSE(refusal(book->admit(q, "research-agent", "")));  // 5 of 10
}

TEST(QuotaBook, AUserIsCountedAcrossAgentsAndARefusalNamesThem) {
  FakeClock clock;
  auto book = QuotaBook::create(clock.fn());
  auto q = quotas("quotas: {users: {concurrent: 2}}\n");
  const std::string alice = pipeline::quota_user_key("corp", "alice");
  auto a = book->admit(q, "research-agent", alice);
  auto b = book->admit(q, "other", alice);
  ASSERT_FALSE(refusal(a) || refusal(b));
  auto c = book->admit(q, "other", alice);
  ASSERT_TRUE(refusal(c));
  EXPECT_NE(refusal(c)->message.find("user alice (corp)"), std::string::npos) << refusal(c)->message;
  EXPECT_EQ(book->in_flight("other"), 1u);  // the refused call holds nothing
  EXPECT_FALSE(refusal(book->admit(q, "other", pipeline::quota_user_key("corp", "bob"))));
}

TEST(QuotaBook, WithoutAConcurrentQuotaTheServersCapacityBoundsAPrincipal) {
  FakeClock clock;
  auto book = QuotaBook::create(clock.fn());
  auto q = quotas("", "server: {maxConcurrentInvocations: 1, queueLength: 1}\n");
  auto a = book->admit(q, "other", "");
  auto b = book->admit(q, "other", "");
  auto c = book->admit(q, "other", "");
  ASSERT_FALSE(refusal(a) || refusal(b));
  ASSERT_TRUE(refusal(c));
  EXPECT_NE(refusal(c)->message.find("maxConcurrentInvocations + server.queueLength"), std::string::npos);
}

}  // namespace
}  // namespace airlock
