// The content stages through the daemon: model-written code is validated before it runs,
// and DLP redacts (or blocks) what goes into a tool and what comes out of it.
#include <gtest/gtest.h>

#include <fstream>

#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

TEST(ValidateCode, RejectedCodeNeverRuns) {
  Workspace ws;
  RunningDaemon d(ws);
  for (const char* code : {"import os\nos.system('id')", "__import__('subprocess').run(['id'])",
                           "().__class__.__mro__[1].__subclasses__()", "exec('1+1')"}) {
    auto r = invoke(d.port, "run-python", {{"code", code}});
    EXPECT_EQ(r.status, 422) << code << r.body;
    auto j = r.json();
    EXPECT_EQ(j["status"], "denied");
    EXPECT_EQ(j["error"]["kind"], "code_rejected") << code;
    EXPECT_TRUE(j["verdict"].is_null()) << "the code must not have run";
    EXPECT_TRUE(j["audit"].is_object());
  }
  auto ok = invoke(d.port, "run-python", {{"code", "import statistics\ndef run(a):\n    return {'m': statistics.mean([1, 2, 3])}"}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.json()["output"]["result"]["m"], 2);
  auto missing = invoke(d.port, "run-python", {{"source", "print(1)"}});
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.json()["error"]["pointer"], "/arguments/code");
}

// An IDN network rule: egress takes it (as punycode), so the validator must too, or the daemon
// does not start. The code may name the host in either spelling, on the rule's port only.
TEST(ValidateCode, AToolWithAnIdnNetworkRuleStarts) {
  Workspace ws("", R"(  - name: run-idn
    runtime: {type: python-code}
    network: {allow: ["bücher.example:443"]}
    validation: {allowImports: [urllib.request]}
)");
  auto created = Daemon::create(ws.config(), DaemonOptions{});
  ASSERT_TRUE(created.ok()) << created.error().message;
  auto& daemon = **created;
  ASSERT_TRUE(daemon.start().ok());
  struct Stop {
    Daemon& d;
    ~Stop() { d.shutdown(); }
  } stop{daemon};
  auto code = [](const std::string& url) {
    return "import urllib.request\ndef run(a):\n    if a.get('fetch'):\n"
           "        urllib.request.urlopen('" + url + "')\n    return {'ok': True}";
  };
  for (const char* url : {"https://bücher.example/x", "https://xn--bcher-kva.example/x"}) {
    auto r = invoke(daemon.port(), "run-idn", {{"code", code(url)}});
    EXPECT_EQ(r.status, 200) << url << r.body;
  }
  auto other_port = invoke(daemon.port(), "run-idn", {{"code", code("https://bücher.example:8443/")}});
  EXPECT_EQ(other_port.status, 422) << other_port.body;
}

TEST(Dlp, OutputsAndInputsAreRedactedAndTheRedactionsListed) {
  Workspace ws;
  RunningDaemon d(ws);
  auto r = invoke(d.port, "leaky", {{"contact", "call bob@example.org"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = r.json();
  const std::string out = j["output"].dump();
  EXPECT_EQ(out.find("jane.doe@example.com"), std::string::npos) << out;
  EXPECT_EQ(out.find("AKIAZ7Q3PLDX4RS6TB2V"), std::string::npos) << out;
  EXPECT_EQ(out.find("bob@example.org"), std::string::npos) << "the tool got the input redacted: " << out;
  EXPECT_NE(out.find("[REDACTED:EMAIL]"), std::string::npos) << out;
  std::set<std::pair<std::string, std::string>> redactions;
  for (const auto& x : j["redactions"])
    redactions.insert({x["detector"].get<std::string>(), x["where"].get<std::string>()});
  EXPECT_TRUE(redactions.count({"email", "input"}));
  EXPECT_TRUE(redactions.count({"email", "output"}));
  EXPECT_TRUE(redactions.count({"aws_access_key_id", "output"}));
}

TEST(Dlp, ABlockingPolicyWithholdsTheResult) {
  Workspace ws("", "");
  {
    std::ofstream(ws.dir() + "/dlp.yaml") << "apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n"
                                              "  detectors:\n    aws_access_key_id: {action: block}\n";
    std::ofstream(ws.config_path(), std::ios::app) << "dlp: {policy: dlp.yaml}\n";
  }
  RunningDaemon d(ws);
  auto r = invoke(d.port, "leaky", nlohmann::json::object());
  EXPECT_EQ(r.status, 422) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["error"]["kind"], "dlp_blocked");
  EXPECT_TRUE(j["output"].is_null());
  EXPECT_EQ(r.body.find("AKIAZ7Q3PLDX4RS6TB2V"), std::string::npos) << "the blocked value must not appear";
  auto in = invoke(d.port, "echo", {{"k", "AKIAZ7Q3PLDX4RS6TB2V"}});
  EXPECT_EQ(in.status, 422);
  EXPECT_TRUE(in.json()["verdict"].is_null()) << "a blocked input never reaches the tool";
}

}  // namespace
}  // namespace airlock::server::test
