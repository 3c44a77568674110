// Which backend each risk tier gets at the daemon's start (server/tiers/tier_backends.hpp): a
// backend the config names that cannot work here stops the start; a default one that cannot
// leaves its tier unavailable, and a call of that tier is refused saying why.
#include <gtest/gtest.h>

#include <string>

#include "server/tiers/tier_backends.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

// The test config with `high` given a runsc that does not exist.
std::string with_broken_high(const Workspace& ws, bool named) {
  std::string yaml = ws.config_text();
  const std::string low = "  low: {timeout: 10s, memory: 128Mi, pids: 16, output: 64Ki}\n";
  const auto at = yaml.find(low);
  EXPECT_NE(at, std::string::npos);
  yaml.insert(at + low.size(), std::string("  high:\n") + (named ? "    backend: gvisor\n" : "") +
                                   "    gvisor: {runsc: /nonexistent/runsc}\n");
  return yaml;
}

TEST(TierBackends, LowAndMediumAreLocalByDefault) {
  Workspace ws;
  auto backends = TierBackends::create(ws.config(), BackendServices{});
  ASSERT_TRUE(backends.ok()) << backends.error().message;
  EXPECT_FALSE((*backends)->tiers().count(policy::Risk::low));
  EXPECT_FALSE((*backends)->tiers().count(policy::Risk::medium));
  EXPECT_EQ((*backends)->local().name(), "local");
}

TEST(TierBackends, ANamedBackendThatCannotWorkStopsTheStart) {
  Workspace ws;
  ws.write_config(with_broken_high(ws, /*named=*/true));
  BackendServices services;
  services.data_dir = ws.dir() + "/data";
  auto backends = TierBackends::create(ws.config(), services);
  ASSERT_FALSE(backends.ok());
  EXPECT_NE(backends.error().message.find("tiers.high.backend: gvisor: "), std::string::npos)
      << backends.error().message;
  EXPECT_NE(backends.error().message.find("/nonexistent/runsc"), std::string::npos)
      << backends.error().message;
  auto daemon = Daemon::create(ws.config(), DaemonOptions{});
  EXPECT_FALSE(daemon.ok()) << "the daemon does not start without the backend it was told to use";
}

TEST(TierBackends, ADefaultThatCannotWorkLeavesItsTierUnavailableAndSaysWhy) {
  Workspace ws;
  ws.write_config(with_broken_high(ws, /*named=*/false));
  RunningDaemon d(ws);
  auto r = invoke(d.port, "dangerous", {{"n", 3}});
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.json()["error"]["kind"], "tier_unavailable") << r.body;
  const std::string message = r.json()["error"]["message"];
  EXPECT_NE(message.find("the gvisor backend cannot run here"), std::string::npos) << message;
  EXPECT_NE(message.find("/nonexistent/runsc"), std::string::npos) << message;
  // Other tiers are not affected.
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 1}}).status, 200);
}

}  // namespace
}  // namespace airlock::server::test
