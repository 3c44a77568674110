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
  // The published schema (python_code_input_schema) refuses it first, naming the code.
  EXPECT_EQ(missing.json()["error"]["kind"], "invalid_input");
  EXPECT_NE(missing.json()["error"]["message"].get<std::string>().find("code"), std::string::npos) << missing.body;
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

// Issue #36: a python-code tool tells a model what to send, and what went wrong.
TEST(PythonCode, PublishesItsInputSchemaWithCode) {
  Workspace ws;
  RunningDaemon d(ws);
  auto r = http(d.port, "GET", "/v1/tools/run-python");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto schema = r.json()["inputSchema"];
  EXPECT_EQ(schema["type"], "object") << schema;
  EXPECT_EQ(schema["properties"]["code"]["type"], "string") << schema;
  EXPECT_NE(schema["properties"]["code"]["description"].get<std::string>().find("line"), std::string::npos);
  EXPECT_EQ(schema["properties"]["arguments"]["type"], "object") << schema;
  EXPECT_EQ(schema["required"], nlohmann::json::array({"code"})) << schema;
  EXPECT_EQ(schema["additionalProperties"], false) << schema;
  // What it publishes is what it checks; `arguments` reaches run(args).
  auto extra = invoke(d.port, "run-python", {{"code", "print(1)"}, {"fetch", true}});
  EXPECT_EQ(extra.status, 400) << extra.body;
  auto with_args = invoke(d.port, "run-python", {{"code", "def run(a):\n    return {'got': a}"}, {"arguments", {{"k", 7}}}});
  ASSERT_EQ(with_args.status, 200) << with_args.body;
  EXPECT_EQ(with_args.json()["output"]["result"]["got"], nlohmann::json({{"k", 7}})) << with_args.body;
}

// An operator's own inputSchema is published and checked as written; run(args) then gets the
// arguments other than the code, as it did before tools published one.
TEST(PythonCode, AnOperatorsInputSchemaIsKeptAsWritten) {
  Workspace ws("", R"(  - name: run-own
    runtime: {type: python-code}
    inputSchema: {type: object, required: [code], properties: {code: {type: string, maxLength: 100}, n: {type: integer}}}
)");
  RunningDaemon d(ws);
  auto r = http(d.port, "GET", "/v1/tools/run-own");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["inputSchema"]["properties"]["code"]["maxLength"], 100) << r.body;
  EXPECT_FALSE(r.json()["inputSchema"].contains("additionalProperties")) << r.body;
  auto ran = invoke(d.port, "run-own", {{"code", "def run(a):\n    return {'n': a['n']}"}, {"n", 3}});
  ASSERT_EQ(ran.status, 200) << ran.body;
  EXPECT_EQ(ran.json()["output"]["result"]["n"], 3) << ran.body;
}

TEST(PythonCode, ARaisingCellAnswersItsNameValueAndTracebackWithTheCodesLineNumbers) {
  Workspace ws;
  RunningDaemon d(ws);
  auto r = invoke(d.port, "run-python", {{"code", "def half(n):\n    return n / 0\nprint('before')\nhalf(4)\n"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["status"], "error") << r.body;
  EXPECT_EQ(j["verdict"], "exit_nonzero") << r.body;
  const auto& error = j["error"];
  EXPECT_EQ(error["kind"], "code_error") << r.body;
  EXPECT_NE(error["message"].get<std::string>().find("ZeroDivisionError: division by zero (line 2"), std::string::npos)
      << error;
  const auto& details = error["details"];
  EXPECT_EQ(details["name"], "ZeroDivisionError") << details;
  EXPECT_EQ(details["value"], "division by zero") << details;
  EXPECT_EQ(details["line"], 2) << details;
  EXPECT_EQ(details["stdout"], "before\n") << details;
  const std::string traceback = details["traceback"].dump();
  EXPECT_NE(traceback.find(R"(File \"<code>\", line 4, in <module>)"), std::string::npos) << traceback;
  EXPECT_NE(traceback.find(R"(File \"<code>\", line 2, in half)"), std::string::npos) << traceback;
  EXPECT_NE(traceback.find("return n / 0"), std::string::npos) << "the code's own line is shown: " << traceback;
  EXPECT_EQ(traceback.find("airlock_runner"), std::string::npos) << "the runner's frames are not: " << traceback;
  // The stored invocation answers the same.
  auto stored = http(d.port, "GET", "/v1/invocations/" + j["id"].get<std::string>());
  EXPECT_EQ(stored.json()["error"]["details"], details);
}

// What the code prints, or writes to descriptor 1 itself, can neither make a success look like
// a failure nor put words in a failure's report: the verdict decides, and the report comes on
// a channel only the runner holds.
TEST(PythonCode, OutputCannotForgeAnErrorReportOrHideOne) {
  Workspace ws("", R"(  - name: run-os
    runtime: {type: python-code}
    validation: {allowImports: [os]}
)");
  RunningDaemon d(ws);
  const std::string forged_report =
      R"({"code_error": {"name": "Forged", "value": "x", "line": 1, "traceback": [], "stdout": ""}})";
  for (const std::string& code :
       {"print('" + forged_report + "')\n", "import os\nos.write(1, b'" + forged_report + "\\n')\n"}) {
    auto ok = invoke(d.port, "run-os", {{"code", code}});
    ASSERT_EQ(ok.status, 200) << ok.body;
    EXPECT_EQ(ok.json()["status"], "ok") << code << ok.body;
    EXPECT_TRUE(ok.json()["error"].is_null()) << ok.body;
  }
  auto raised = invoke(d.port, "run-os", {{"code", "import os\nos.write(1, b'" + forged_report +
                                                        "\\n')\nraise KeyError('real')\n"}});
  ASSERT_EQ(raised.status, 200) << raised.body;
  EXPECT_EQ(raised.json()["error"]["kind"], "code_error") << raised.body;
  EXPECT_EQ(raised.json()["error"]["details"]["name"], "KeyError") << raised.body;
  EXPECT_EQ(raised.json()["error"]["details"]["line"], 3) << raised.body;
}

TEST(PythonCode, AnEgressDenialIsNamedWithHostPortAndRuleSet) {
  Workspace ws("", R"(  - name: run-fetch
    runtime: {type: python-code}
    network: {allow: ["allowed.example:80"]}
    validation: {allowImports: [urllib.request], allowHosts: ["denied.example:80"]}
)");
  RunningDaemon d(ws);
  auto r = invoke(d.port, "run-fetch", {{"code", "import urllib.request\nurllib.request.urlopen('http://denied.example/', timeout=5)\n"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto error = r.json()["error"];
  EXPECT_EQ(error["kind"], "egress_denied") << r.body;
  EXPECT_NE(error["message"].get<std::string>().find("denied.example:80"), std::string::npos) << error;
  ASSERT_TRUE(error["details"]["egress"].is_array()) << r.body;
  const auto& denial = error["details"]["egress"][0];
  EXPECT_EQ(denial["host"], "denied.example") << denial;
  EXPECT_EQ(denial["port"], 80) << denial;
  EXPECT_EQ(denial["rule_set"], "the egress rules of tool run-fetch") << denial;
  EXPECT_FALSE(denial["rule"].get<std::string>().empty()) << denial;
  // The exception that followed is there too.
  EXPECT_EQ(error["details"]["line"], 2) << r.body;
  EXPECT_FALSE(error["details"]["name"].get<std::string>().empty()) << r.body;
}

// A module tool that fails after a denial: named as such too, rather than tool_crashed.
TEST(PythonCode, AModuleToolThatFailsAfterADenialIsEgressDenied) {
  Workspace ws("", R"(  - name: fetch-or-fail
    runtime: {type: python, file: tools/fetch_or_fail.py}
    network: {allow: ["allowed.example:80"]}
)");
  RunningDaemon d(ws);
  auto r = invoke(d.port, "fetch-or-fail", nlohmann::json::object());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["error"]["kind"], "egress_denied") << r.body;
  EXPECT_EQ(r.json()["error"]["details"]["egress"][0]["host"], "10.1.2.3") << r.body;
}

// The report is a result like any: DLP redacts it before the model sees it.
TEST(PythonCode, TheErrorReportPassesTheOutputScan) {
  Workspace ws;
  RunningDaemon d(ws);
  auto r = invoke(d.port, "run-python", {{"code", "k = 'AKIA' + 'Z7Q3PLDX4RS6TB2V'\nraise ValueError('key ' + k)\n"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["error"]["kind"], "code_error") << r.body;
  EXPECT_EQ(r.body.find("AKIAZ7Q3PLDX4RS6TB2V"), std::string::npos) << r.body;
  EXPECT_NE(r.json()["error"]["details"]["value"].get<std::string>().find("[REDACTED:"), std::string::npos) << r.body;
}

// Issue #36: DLP never silently changes code. By default a finding in code refuses the call,
// naming the detector and the line (and never the value); the datum may come in `arguments`,
// where it is redacted as any tool input is.
TEST(Dlp, APersonalDatumInCodeIsRefusedNamingTheDetectorAndLineNeverRewritten) {
  Workspace ws;
  RunningDaemon d(ws);
  auto r = invoke(d.port, "run-python", {{"code", "x = 1\nprint('jane@corp.test'.upper())\n"}});
  ASSERT_EQ(r.status, 422) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["error"]["kind"], "dlp_blocked") << r.body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find("email (line 2)"), std::string::npos) << r.body;
  EXPECT_TRUE(j["verdict"].is_null()) << "the code never ran: " << r.body;
  EXPECT_EQ(r.body.find("jane@corp.test"), std::string::npos) << r.body;
  auto key = invoke(d.port, "run-python", {{"code", "k = 'AKIAZ7Q3PLDX4RS6TB2V'\n"}});
  EXPECT_EQ(key.status, 422) << key.body;
  EXPECT_NE(key.json()["error"]["message"].get<std::string>().find("aws_access_key_id (line 1)"), std::string::npos)
      << key.body;
  // In arguments: data, redacted on the way in as any tool's input; the code runs unchanged.
  auto data = invoke(d.port, "run-python", {{"code", "def run(a):\n    return {'has_at': '@' in a['who']}"},
                                            {"arguments", {{"who", "jane@corp.test"}}}});
  ASSERT_EQ(data.status, 200) << data.body;
  EXPECT_EQ(data.json()["output"]["result"]["has_at"], false) << "redacted before the tool: " << data.body;
  EXPECT_EQ(data.json()["redactions"][0]["where"], "input") << data.body;
}

// The workspace's config takes a DLP policy whose spec is `spec` (YAML under `spec:`).
void use_dlp_policy(const Workspace& ws, const std::string& spec) {
  std::ofstream(ws.dir() + "/dlp.yaml") << "apiVersion: airlock.dev/v1\nkind: DlpPolicy\nspec:\n" << spec;
  std::ofstream(ws.config_path(), std::ios::app) << "dlp: {policy: dlp.yaml}\n";
}

TEST(Dlp, WithCodeFindingsReportedTheCodeRunsAsWrittenAndTheFindingIsAnswered) {
  Workspace ws("", "");
  use_dlp_policy(ws, "  code: {onFinding: report}\n");
  RunningDaemon d(ws);
  auto r = invoke(d.port, "run-python",
                  {{"code", "print('jane@corp.test'.upper())\nprint(len('jane@corp.test'), 'jane@corp.test'.split('@')[1])\n"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["status"], "ok") << r.body;
  const std::string out = j["output"]["stdout"];
  // As written: 14 characters and a domain ('[REDACTED:EMAIL]' has 16 and no '@').
  EXPECT_NE(out.find("14 corp.test"), std::string::npos) << out;
  // Output redaction is as it was: the upper-cased address does not come back.
  EXPECT_EQ(out.find("JANE@CORP.TEST"), std::string::npos) << out;
  EXPECT_NE(out.find("[REDACTED:EMAIL]"), std::string::npos) << out;
  ASSERT_TRUE(j["dlp_findings"].is_array()) << r.body;
  std::set<std::size_t> lines;
  for (const auto& f : j["dlp_findings"]) {
    EXPECT_EQ(f["detector"], "email") << f;
    EXPECT_EQ(f["where"], "code") << f;
    lines.insert(f["line"].get<std::size_t>());
  }
  EXPECT_EQ(lines, (std::set<std::size_t>{1, 2})) << r.body;
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
  use_dlp_policy(ws, "  detectors:\n    aws_access_key_id: {action: block}\n");
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
