// The content stages through the daemon: model-written code is validated before it runs,
// and DLP redacts (or blocks) what goes into a tool and what comes out of it.
#include <gtest/gtest.h>

#include <fstream>

#include "audit/log_reader.hpp"
#include "pipeline/invocation.hpp"
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

// The last audit record, parsed.
nlohmann::json last_audit_record(const Workspace& ws) {
  auto reader = audit::LogReader::open(ws.audit_path());
  if (!reader) return nullptr;
  auto size = reader->size();
  if (!size || *size == 0) return nullptr;
  auto record = reader->record(*size - 1);
  return record ? nlohmann::json::parse(*record, nullptr, false) : nlohmann::json();
}

TEST(ValidateCode, ARejectionListsEveryFindingWithItsLineInTheAnswerAndTheAuditRecord) {
  Workspace ws;
  RunningDaemon d(ws);
  auto r = invoke(d.port, "run-python", {{"code", "import os\nx = 1\nexec('1')\neval('2')\n"}});
  ASSERT_EQ(r.status, 422) << r.body;
  auto error = r.json()["error"];
  EXPECT_EQ(error["kind"], "code_rejected");
  ASSERT_TRUE(error["findings"].is_array()) << r.body;
  ASSERT_EQ(error["findings"].size(), 3u) << r.body;
  EXPECT_EQ(error["findings_total"], 3);
  const int lines[] = {1, 3, 4};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& f = error["findings"][i];
    EXPECT_EQ(f["line"], lines[i]) << f;
    EXPECT_GE(f["col"].get<int>(), 1) << f;
    EXPECT_FALSE(f["rule"].get<std::string>().empty()) << f;
    EXPECT_FALSE(f["message"].get<std::string>().empty()) << f;
  }
  EXPECT_EQ(error["findings"][0]["rule"], "import-not-allowed");
  EXPECT_EQ(error["message"].get<std::string>().find("and 2 more"), std::string::npos);

  auto record = last_audit_record(ws);
  ASSERT_TRUE(record.is_object()) << record;
  ASSERT_EQ(record["findings"].size(), 3u) << record;
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(record["findings"][i]["line"], lines[i]) << record;
}

TEST(ValidateCode, AHostileBlobGetsABoundedAnswer) {
  Workspace ws;
  RunningDaemon d(ws);
  // One finding whose message would name a 20 000-character module, then 299 more.
  std::string code = "import " + std::string(20'000, 'm') + "\n";
  for (int i = 0; i < 299; ++i) code += "exec('1')\n";
  auto r = invoke(d.port, "run-python", {{"code", code}});
  ASSERT_EQ(r.status, 422) << r.body.substr(0, 300);
  auto error = r.json()["error"];
  ASSERT_EQ(error["findings"].size(), pipeline::kMaxReportedFindings);
  EXPECT_EQ(error["findings_total"], 300);
  EXPECT_LT(error["findings"][0]["message"].get<std::string>().size(), 1000u);
  EXPECT_LT(r.body.size(), 40'000u);
  EXPECT_EQ(last_audit_record(ws)["findings"].size(), pipeline::kMaxReportedFindings);
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

TEST(Dlp, AirlocksOwnNotesAreNotRedactedButTheToolsLogIs) {
  Workspace ws("", R"(  - name: egress-denied
    runtime: {type: python, file: tools/egress_denied.py}
    network: {allow: ["allowed.example:80"]}
)");
  RunningDaemon d(ws);
  auto r = invoke(d.port, "egress-denied", nlohmann::json::object());
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = r.json();
  ASSERT_EQ(j["status"], "ok") << r.body;
  ASSERT_FALSE(j["egress"].empty()) << r.body;
  EXPECT_FALSE(j["egress"][0]["allowed"]) << r.body;
  auto stored = http(d.port, "GET", "/v1/invocations/" + j["id"].get<std::string>());
  ASSERT_EQ(stored.status, 200) << stored.body;
  const std::string log = stored.json()["log"];
  // The tool's own line: redacted.
  EXPECT_EQ(log.find("81.2.69.142"), std::string::npos) << log;
  EXPECT_NE(log.find("client [REDACTED:IP_ADDRESS] connected"), std::string::npos) << log;
  // Airlock's note on the denial: intact, naming the address.
  EXPECT_NE(log.find("airlock: egress to 10.1.2.3:80 was denied: "), std::string::npos) << log;
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
  // Only the detector that blocked is named: the email in the same result would only have
  // been redacted.
  const std::string message = j["error"]["message"];
  EXPECT_NE(message.find("(aws_access_key_id)"), std::string::npos) << message;
  EXPECT_EQ(message.find("email"), std::string::npos) << message;
  EXPECT_TRUE(j["output"].is_null());
  EXPECT_EQ(r.body.find("AKIAZ7Q3PLDX4RS6TB2V"), std::string::npos) << "the blocked value must not appear";
  auto in = invoke(d.port, "echo", {{"k", "AKIAZ7Q3PLDX4RS6TB2V"}});
  EXPECT_EQ(in.status, 422);
  EXPECT_TRUE(in.json()["verdict"].is_null()) << "a blocked input never reaches the tool";
}

}  // namespace
}  // namespace airlock::server::test
