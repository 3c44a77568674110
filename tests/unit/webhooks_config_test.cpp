// webhooks: what is read (the secret from its variable or file at load), and that each
// mistake is a configuration error naming the key and why (docs/webhooks.md).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "policy/config.hpp"

namespace airlock::policy {
namespace {

constexpr const char* kSecret = "whsec-0123456789abcdef0123";

std::string config_with(const std::string& webhooks) {
  return R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
tools:
  - name: wipe
    risk: high
    runtime: {type: command, command: [/bin/cat]}
webhooks:
)" + webhooks;
}

Result<Config> parse(const std::string& yaml, const std::string& base = "/tmp") {
  return parse_config(yaml, "test.yaml", base);
}

class WebhooksConfig : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("AIRLOCK_TEST_WEBHOOK_SECRET", kSecret, 1); }
  void TearDown() override { ::unsetenv("AIRLOCK_TEST_WEBHOOK_SECRET"); }
};

TEST_F(WebhooksConfig, ReadsEveryFieldAndTheSecretFromItsVariable) {
  auto c = parse(config_with(R"(  slack-bridge:
    url: https://hooks.corp.example/airlock
    secret: {env: AIRLOCK_TEST_WEBHOOK_SECRET}
    events: [approval.requested, invocation.completed]
    tools: ["wipe", "db-*"]
    timeout: 5s
    retry: {initial: 200ms, max: 10s, giveUpAfter: 1h, attempts: 7}
  everything:
    url: http://127.0.0.1:9000/hook
    secret: {env: AIRLOCK_TEST_WEBHOOK_SECRET}
    events: [invocation.completed]
)"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->webhooks.size(), 2u);
  const auto& w = c->webhooks[0];
  EXPECT_EQ(w.name, "slack-bridge");
  EXPECT_EQ(w.url, "https://hooks.corp.example/airlock");
  EXPECT_EQ(w.secret, kSecret);
  EXPECT_EQ(w.secret_source, "env AIRLOCK_TEST_WEBHOOK_SECRET");
  EXPECT_TRUE(w.wants("approval.requested"));
  EXPECT_TRUE(w.covers("db-orders"));
  EXPECT_FALSE(w.covers("echo"));
  EXPECT_EQ(w.timeout, std::chrono::seconds(5));
  EXPECT_EQ(w.retry.initial, std::chrono::milliseconds(200));
  EXPECT_EQ(w.retry.max, std::chrono::seconds(10));
  EXPECT_EQ(w.retry.give_up_after, std::chrono::hours(1));
  EXPECT_EQ(w.retry.attempts, 7u);
  const auto& all = c->webhooks[1];
  EXPECT_TRUE(all.covers("anything")) << "no tools: every tool";
  EXPECT_FALSE(all.wants("approval.requested"));
  EXPECT_EQ(all.retry.initial, std::chrono::seconds(1));
  EXPECT_EQ(all.retry.max, std::chrono::minutes(5));
  EXPECT_EQ(all.retry.give_up_after, std::chrono::hours(24));
}

TEST_F(WebhooksConfig, ReadsTheSecretFromAFileRelativeToTheConfig) {
  const auto dir = std::filesystem::temp_directory_path() / ("airlock-webhooks-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "hook.secret") << kSecret << "\n";
  auto c = parse(config_with(R"(  a:
    url: https://hooks.corp.example/a
    secret: {file: hook.secret}
    events: [invocation.completed]
)"),
                 dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->webhooks.at(0).secret, kSecret) << "without its line end";
}

TEST_F(WebhooksConfig, EachMistakeIsNamed) {
  struct Case {
    std::string webhook, expected;
  };
  const std::string secret = "    secret: {env: AIRLOCK_TEST_WEBHOOK_SECRET}\n";
  const std::string events = "    events: [invocation.completed]\n";
  const std::vector<Case> cases = {
      {"    url: http://hooks.corp.example/a\n" + secret + events,
       "webhooks.a.url: plain http:// only to a loopback address"},
      {"    url: http://10.0.0.7:8080/a\n" + secret + events, "use https:// for 10.0.0.7"},
      {"    url: ftp://hooks.corp.example/a\n" + secret + events, "webhooks.a.url: expected an https:// URL"},
      {"    url: https://user:pw@hooks.corp.example/a\n" + secret + events, "no user information"},
      {"    url: https://hooks.corp.example/a\n" + secret + "    events: [tool.started]\n",
       "webhooks.a.events: unknown event 'tool.started'"},
      {"    url: https://hooks.corp.example/a\n" + secret + "    events: []\n", "at least one event"},
      {"    url: https://hooks.corp.example/a\n    secret: {env: AIRLOCK_TEST_NOT_SET_ANYWHERE}\n" + events,
       "webhooks.a.secret.env: the variable AIRLOCK_TEST_NOT_SET_ANYWHERE is not set"},
      {"    url: https://hooks.corp.example/a\n    secret: {file: /nonexistent/hook.secret}\n" + events,
       "webhooks.a.secret.file: cannot read /nonexistent/hook.secret"},
      {"    url: https://hooks.corp.example/a\n    secret: hunter2\n" + events, "webhooks.a.secret: expected a mapping"},
      {"    url: https://hooks.corp.example/a\n    secret: {env: A, file: b}\n" + events, "exactly one of env"},
      {"    url: https://hooks.corp.example/a\n" + events, "webhooks.a: missing secret"},
      {secret + events, "webhooks.a: missing url"},
      {"    url: https://hooks.corp.example/a\n" + secret + events + "    retries: 3\n",
       "webhooks.a: unknown field 'retries'"},
      {"    url: https://hooks.corp.example/a\n" + secret + events + "    retry: {initial: 10s, max: 1s}\n",
       "webhooks.a.retry: max is shorter than initial"},
      {"    url: https://hooks.corp.example/a\n" + secret + events + "    timeout: 5m\n",
       "webhooks.a.timeout: at most 60s"},
      {"    url: https://hooks.corp.example/a\n" + secret + events + "    tools: []\n", "webhooks.a.tools: an empty list"},
      {"    url: https://hooks.corp.example/a\n" + secret + events + "    retry: {initial: 10ms}\n",
       "webhooks.a.retry.initial: at least 100ms"},
  };
  for (const auto& c : cases) {
    auto parsed = parse(config_with("  a:\n" + c.webhook));
    ASSERT_FALSE(parsed.ok()) << c.webhook;
    EXPECT_NE(parsed.error().message.find(c.expected), std::string::npos) << parsed.error().message;
    EXPECT_NE(parsed.error().message.find("test.yaml:"), std::string::npos);
  }
}

TEST_F(WebhooksConfig, AShortSecretAndABadNameAreRefused) {
  ::setenv("AIRLOCK_TEST_WEBHOOK_SECRET", "Qz7tiny", 1);
  auto parsed = parse(config_with(
      "  a:\n    url: https://h.example/a\n    secret: {env: AIRLOCK_TEST_WEBHOOK_SECRET}\n    events: [invocation.completed]\n"));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message.find("shorter than 16 bytes"), std::string::npos) << parsed.error().message;
  EXPECT_EQ(parsed.error().message.find("Qz7tiny"), std::string::npos) << "never the value";
  auto named = parse(config_with("  Slack Bridge: {url: https://h.example/a}\n"));
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.error().message.find("'Slack Bridge' is not a valid name"), std::string::npos) << named.error().message;
}

}  // namespace
}  // namespace airlock::policy
