// The configuration loader: what it accepts, and that every mistake is named with file:line.
#include <gtest/gtest.h>

#include "policy/config.hpp"

namespace airlock::policy {
namespace {

const char* kMinimal = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
principals:
  - name: agent
    apiKeySha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
    tools: ["echo-*"]
tools:
  - name: echo-json
    runtime: {type: command, command: [/bin/cat]}
    risk: medium
    limits: {timeout: 2s, memory: 64Mi}
    inputSchema: {type: object, properties: {n: {type: integer, maximum: 5}}}
)";

Result<Config> parse(const std::string& yaml) { return parse_config(yaml, "test.yaml", "/tmp"); }

TEST(Config, MinimalConfigAndDefaults) {
  auto c = parse(kMinimal);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server.listen_host, "127.0.0.1");
  EXPECT_EQ(c->server.listen_port, 8750);
  EXPECT_EQ(c->storage.data_dir, "./airlock-data");
  ASSERT_EQ(c->tools.size(), 1u);
  const auto& t = c->tools[0];
  EXPECT_EQ(t.risk, Risk::medium);
  EXPECT_EQ(t.where, "test.yaml:8");
  auto limits = c->limits_for(t);
  EXPECT_EQ(limits.wall_time, std::chrono::seconds(2));           // the tool's override
  EXPECT_EQ(limits.memory_bytes, 64ULL << 20);
  EXPECT_EQ(limits.pids, default_tiers()[Risk::medium].pids);      // the tier's
  EXPECT_EQ(t.input_schema["properties"]["n"]["maximum"], 5);     // numbers stay numbers
}

struct BadConfig {
  std::string yaml;
  std::string where;  // "test.yaml:LINE"
  std::string says;
};

class ConfigErrors : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigErrors, NameFileLineAndWhatWasExpected) {
  auto c = parse(GetParam().yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.rfind(GetParam().where + ":", 0), 0u) << c.error().message;
  EXPECT_NE(c.error().message.find(GetParam().says), std::string::npos) << c.error().message;
}

std::string with(const std::string& from, const std::string& to) {
  std::string s = kMinimal;
  s.replace(s.find(from), from.size(), to);
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, ConfigErrors,
    ::testing::Values(
        BadConfig{"kind: Pod\n", "test.yaml:1", "apiVersion: expected airlock.dev/v1"},
        BadConfig{with("kind: AirlockConfig", "kind: Deployment"), "test.yaml:2", "kind: expected AirlockConfig"},
        BadConfig{with("principals:", "servre: {}\nprincipals:"), "test.yaml:3", "unknown field 'servre'"},
        BadConfig{with("apiKeySha256: 2c26", "apiKeySha256: secret-key-2c26"), "test.yaml:5",
                  "expected 64 hex digits"},
        BadConfig{with("risk: medium", "risk: extreme"), "test.yaml:10", "expected low, medium, high or critical"},
        BadConfig{with("timeout: 2s", "timeout: soon"), "test.yaml:11", "timeout"},
        BadConfig{with("memory: 64Mi", "memory: lots"), "test.yaml:11", "limits.memory: size 'lots': expected a number"},
        BadConfig{with("type: command, command: [/bin/cat]", "type: docker"), "test.yaml:9",
                  "expected python, command or python-code"},
        BadConfig{with("    risk: medium", "    risk: medium\n    network: {allow: ['bad host!']}"),
                  "test.yaml:11", "network.allow"},
        BadConfig{with("    risk: medium", "    risk: medium\n    colour: blue"), "test.yaml:11",
                  "unknown field 'colour'"},
        BadConfig{with("    risk: medium", "    risk: medium\n    env: {1BAD: x}"), "test.yaml:11",
                  "not a valid variable name"},
        BadConfig{std::string(kMinimal) + "  - name: echo-json\n    runtime: {type: command, command: [/bin/true]}\n",
                  "test.yaml:13", "defined twice"},
        BadConfig{"apiVersion: airlock.dev/v1\nkind: AirlockConfig\ntools: [\n", "test.yaml:4", ""},
        BadConfig{with("name: echo-json", "name: Echo JSON"), "test.yaml:8", "lower-case"}));

TEST(Globs, MatchToolNames) {
  EXPECT_TRUE(glob_match("echo-*", "echo-json"));
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("echo-*", "echo"));
  EXPECT_FALSE(glob_match("echo", "echo-json"));
  EXPECT_TRUE(glob_match("*-json", "echo-json"));
  EXPECT_FALSE(glob_match("", "x"));
}

}  // namespace
}  // namespace airlock::policy
