// storage.heartbeatInterval and storage.failoverAfter (policy/config_storage.cpp): defaults,
// durations read, and a failoverAfter that is not more than the heartbeat refused, naming both.
#include <gtest/gtest.h>

#include "policy/config.hpp"

namespace airlock::policy {
namespace {

Result<Config> parse_storage(const std::string& storage) {
  return parse_config("apiVersion: airlock.dev/v1\nkind: AirlockConfig\nstorage:\n" + storage +
                          "tools:\n  - name: echo\n    runtime: {type: command, command: [/bin/cat]}\n",
                      "test.yaml", "/etc/airlock");
}

TEST(ReplicaConfig, DefaultsAreFiveAndThirtySeconds) {
  auto c = parse_storage("  dataDir: /var/lib/airlock\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->storage.heartbeat_interval, std::chrono::seconds(5));
  EXPECT_EQ(c->storage.failover_after, std::chrono::seconds(30));
}

TEST(ReplicaConfig, DurationsAreRead) {
  auto c = parse_storage("  heartbeatInterval: 500ms\n  failoverAfter: 2s\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->storage.heartbeat_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(c->storage.failover_after, std::chrono::seconds(2));
}

TEST(ReplicaConfig, FailoverNotAfterTheHeartbeatIsRefused) {
  for (const char* storage : {"  heartbeatInterval: 10s\n  failoverAfter: 10s\n",
                              "  heartbeatInterval: 40s\n",  // over the default failoverAfter
                              "  failoverAfter: 1s\n"}) {
    auto c = parse_storage(storage);
    ASSERT_FALSE(c) << storage;
    EXPECT_NE(c.error().message.find("storage.failoverAfter"), std::string::npos) << c.error().message;
    EXPECT_NE(c.error().message.find("storage.heartbeatInterval"), std::string::npos) << c.error().message;
    EXPECT_NE(c.error().message.find("test.yaml:"), std::string::npos) << c.error().message;
  }
  for (const char* bad : {"  heartbeatInterval: 0s\n", "  failoverAfter: soon\n"}) {
    auto c = parse_storage(bad);
    EXPECT_FALSE(c) << bad;
  }
}

}  // namespace
}  // namespace airlock::policy
