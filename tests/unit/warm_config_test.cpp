// tools[].warm and server.maxWarmTemplates: what is read, and that every mistake is refused
// with an error naming it (fail closed: a tool that cannot have a template is not run cold
// silently).
#include <gtest/gtest.h>

#include "policy/config.hpp"

namespace airlock::policy {
namespace {

std::string config_with(const std::string& tools, const std::string& server = "") {
  return "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n" + server + "tools:\n" + tools;
}

const std::string kPythonTool = std::string("  - name: quick\n    runtime: {type: python, file: ") +
                                AIRLOCK_EXAMPLES_DIR "/tools/csv_summary.py}\n";

Result<Config> parse(const std::string& yaml) { return parse_config(yaml, "test.yaml", "/tmp"); }

TEST(WarmConfig, AbsentMeansCold) {
  auto c = parse(config_with(kPythonTool));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(c->tools.at(0).warm);
  EXPECT_EQ(c->server.max_warm_templates, 8u);
}

TEST(WarmConfig, EmptyTakesTheDefaultsAndFieldsAreRead) {
  auto defaults = parse(config_with(kPythonTool + "    warm: {}\n"));
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  ASSERT_TRUE(defaults->tools.at(0).warm);
  EXPECT_EQ(*defaults->tools.at(0).warm, WarmPolicy{});
  auto set = parse(config_with(kPythonTool +
                                   "    warm: {recycleCalls: 50, recycleAfter: 30s}\n",
                               "server: {maxWarmTemplates: 2}\n"));
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->tools.at(0).warm->recycle_calls, 50u);
  EXPECT_EQ(set->tools.at(0).warm->recycle_after, std::chrono::seconds(30));
  EXPECT_EQ(set->server.max_warm_templates, 2u);
}

// A python-code tool's template imports the runner only; its calls run their code warm.
TEST(WarmConfig, APythonCodeToolMayBeWarm) {
  auto c = parse(config_with("  - name: interp\n    runtime: {type: python-code}\n    warm: {recycleCalls: 10}\n"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->tools.at(0).warm);
  EXPECT_EQ(c->tools.at(0).warm->recycle_calls, 10u);
}

// A networked tool's calls fork warm too: each call's egress proxy is bound at its hand-over
// (docs/warm-start.md, "A networked tool").
TEST(WarmConfig, AToolWithNetworkRulesMayBeWarm) {
  auto c = parse(config_with(kPythonTool + "    network: {allow: [\"api.example:443\"]}\n    warm: {}\n"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->tools.at(0).warm);
  EXPECT_EQ(c->tools.at(0).network.allow.size(), 1u);
}

TEST(WarmConfig, MistakesAreNamed) {
  struct Case {
    std::string yaml, expected;
  };
  const std::string python = kPythonTool;
  const Case cases[] = {
      {config_with(python + "    warm: {recycleCalls: 0}\n"), "tool quick.warm.recycleCalls: at least 1"},
      {config_with(python + "    warm: {recycleAfter: 100ms}\n"),
       "tool quick.warm.recycleAfter: between 1s and 24h"},
      {config_with(python + "    warm: {pool: 4}\n"), "pool"},
      {config_with(python + "    warm: 3\n"), "tool quick.warm"},
      {config_with("  - name: shell\n    runtime: {type: command, command: [/bin/cat]}\n"
                   "    warm: {}\n"),
       "tool shell.warm: only a runtime.python or runtime.python-code tool has a warm template"},
      {config_with(python + "    warm: {}\n  - name: quick2\n    runtime: {type: python, file: " +
                       AIRLOCK_EXAMPLES_DIR "/tools/csv_summary.py}\n    warm: {}\n",
                   "server: {maxWarmTemplates: 1}\n"),
       "tools: 2 tools have warm: but server.maxWarmTemplates is 1"},
      {config_with(python, "server: {maxWarmTemplates: 65}\n"), "server.maxWarmTemplates"},
  };
  for (const auto& c : cases) {
    auto parsed = parse(c.yaml);
    ASSERT_FALSE(parsed.ok()) << c.yaml;
    EXPECT_NE(parsed.error().message.find(c.expected), std::string::npos)
        << "expected: " << c.expected << "\ngot: " << parsed.error().message;
  }
}

}  // namespace
}  // namespace airlock::policy
