// The validator's pieces that need no interpreter: hand-made trees (unknown nodes, malformed
// replies), host matching, the policy file, the raw-byte checks, the report formats, and the
// rule catalogue against docs/validate.md.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "netrules/rules.hpp"
#include "validate/engine.hpp"
#include "validate/host_allowlist.hpp"
#include "validate/policy.hpp"
#include "validate/report_format.hpp"
#include "validate/rules/rules.hpp"
#include "validate/source_checks.hpp"

namespace airlock::validate {
namespace {

Json reply_with(Json body) {
  return Json{{"ok", true},
              {"python", {3, 11}},
              {"tree", {{"_type", "Module"}, {"body", std::move(body)}}},
              {"identifiers", Json::array()}};
}

bool has_rule(const std::vector<Finding>& findings, const std::string& rule) {
  for (const auto& f : findings)
    if (f.rule == rule) return true;
  return false;
}

// The indexed rule table answers as the linear scan with name_matches() it replaced: the first
// matching row, for every kind of pattern.
TEST(NamePatternTable, FindsTheFirstRowAScanWouldFind) {
  const rules::NamePatternTable table = {
      {"os.system", "1"}, {"os.*", "2"},        {"subprocess", "3"}, {"pickle.load*", "4"},
      {"os.sys", "5"},    {"a.b.*", "6"},       {"x*", "7"},         {"a.b", "8"},
      {"os", "9"},        {"os.path.join", "10"},
  };
  const char* names[] = {"os", "os.system", "os.systemx", "os.path.join", "os.sys.modules",
                         "subprocess.run", "subprocessx", "subprocess", "pickle.loads",
                         "pickle.dump", "pickle.load", "a.b", "a.bc", "a.b.c.d", "a", "x", "xy",
                         "", ".", "a..b", "b.os", "osx.system"};
  int found = 0;
  for (std::string_view name : names) {
    const rules::NamePattern* scanned = nullptr;
    for (const auto& row : table.rows())
      if (name_matches(row.pattern, name)) {
        scanned = &row;
        break;
      }
    EXPECT_EQ(table.find(name), scanned) << name;
    found += scanned != nullptr;
  }
  EXPECT_GE(found, 12);  // the names exercise matches, not only misses
}

// The parse worker's binary tree (native/ast_walker.c) as bytes made here.
std::string varint(std::uint64_t v) {
  std::string out;
  do {
    unsigned char b = v & 0x7f;
    v >>= 7;
    out += static_cast<char>(v ? b | 0x80 : b);
  } while (v);
  return out;
}
std::string str(std::string_view s) { return varint(s.size()) + std::string(s); }
const std::string kNoneTag(1, '\0');  // ("\x00" would be an empty C string)

// Module(body=[Expr(value=Call(func=Name(id='eval'), args=[Constant('1')], keywords=[]))])
std::string eval_call_tree() {
  std::string types = varint(5) + str("Module") + varint(2) + str("body") + str("type_ignores") +
                      str("Expr") + varint(1) + str("value") + str("Call") + varint(3) +
                      str("func") + str("args") + str("keywords") + str("Name") + varint(2) +
                      str("id") + str("ctx") + str("Constant") + varint(2) + str("value") +
                      str("kind");
  std::string name = "\x01" + varint(3) + varint(2) + varint(1) + "\x03" + str("eval") + kNoneTag;
  std::string constant = "\x01" + varint(4) + varint(2) + varint(6) + "\x03" + str("1") + kNoneTag;
  std::string call = "\x01" + varint(2) + varint(2) + varint(1) + name + "\x02" + varint(1) +
                     constant + "\x02" + varint(0);
  std::string expr = "\x01" + varint(1) + varint(2) + varint(1) + call;
  std::string module = "\x01" + varint(0) + varint(0) + varint(0) + "\x02" + varint(1) + expr +
                       "\x02" + varint(0);
  return "ALT1" + types + module;
}

TEST(BinaryTree, ADecodedTreeIsCheckedLikeAnyOther) {
  std::string bytes = eval_call_tree();
  std::string error;
  auto tree = SyntaxTree::from_binary(bytes, error);
  ASSERT_TRUE(tree) << error;
  Node call = tree->root().children("body")[0].child("value");
  ASSERT_TRUE(call.is("Call"));
  EXPECT_EQ(call.line(), 1);
  EXPECT_EQ(call.col(), 1);
  EXPECT_EQ(call.child("func").text("id"), "eval");
  EXPECT_EQ(call.children("args")[0].constant_text(), "1");
  Json reply = {{"ok", true}, {"python", {3, 11}}, {"identifiers", Json::array()}};
  Program program(reply, bytes, Policy());
  EXPECT_TRUE(has_rule(program.analyze({}), "dynamic-code"));
}

TEST(BinaryTree, EveryTruncationIsAnErrorNotACrash) {
  std::string bytes = eval_call_tree();
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::string error;
    EXPECT_FALSE(SyntaxTree::from_binary(std::string_view(bytes).substr(0, n), error)) << n;
    EXPECT_NE(error.find("malformed binary tree"), std::string::npos) << n;
  }
}

TEST(BinaryTree, MalformedTreesAreRejectedWithTheReason) {
  auto reason = [](const std::string& bytes) {
    std::string error;
    auto tree = SyntaxTree::from_binary(bytes, error);
    return tree ? std::string("decoded") : error;
  };
  std::string good = eval_call_tree();
  EXPECT_NE(reason("ALT2" + good.substr(4)).find("magic"), std::string::npos);
  EXPECT_NE(reason(good + kNoneTag).find("bytes after the tree"), std::string::npos);
  // a node whose type index is past the table
  EXPECT_NE(reason("ALT1" + varint(0) + "\x01" + varint(0) + varint(0) + varint(0)).find("type index"),
            std::string::npos);
  // a count far larger than the bytes left (no huge allocation first)
  EXPECT_NE(reason("ALT1" + varint(1) + str("Module") + varint(1) + str("body") + "\x01" +
                   varint(0) + varint(0) + varint(0) + "\x02" + varint(1ULL << 60))
                .find("count"),
            std::string::npos);
  // lists nested beyond any tree the worker sends
  std::string deep = "ALT1" + varint(0);
  for (int i = 0; i < 2000; ++i) deep += "\x02" + varint(1);
  EXPECT_NE(reason(deep).find("nested deeper"), std::string::npos);
  // a Constant's kind/text pair anywhere else; an unknown tag; a top level that is no node
  EXPECT_NE(reason("ALT1" + varint(0) + "\x07" + str("int") + str("1")).find("constant"),
            std::string::npos);
  EXPECT_NE(reason("ALT1" + varint(0) + "\x09").find("unknown value tag"), std::string::npos);
  EXPECT_NE(reason("ALT1" + varint(0) + "\x03" + str("x")).find("not a node"), std::string::npos);
  // the engine turns a bad tree into a rejection
  Json reply = {{"ok", true}, {"python", {3, 11}}};
  std::string bad = good.substr(0, good.size() - 1);
  auto findings = Program(reply, bad, Policy()).analyze({});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "parse-failed");
  EXPECT_EQ(make_report(findings).verdict, Verdict::reject);
}

TEST(Engine, UnknownNodeTypeIsRejected) {
  Json body = Json::array({{{"_type", "TemplateStr"}, {"lineno", 1}, {"col_offset", 0}}});
  auto findings = analyze(reply_with(body), Policy(), {});
  ASSERT_TRUE(has_rule(findings, "unknown-node"));
  EXPECT_EQ(make_report(findings).verdict, Verdict::reject);
}

TEST(Engine, NodeTypesAreCheckedAgainstTheTargetVersion) {
  // `match` exists from 3.10: a 3.9 interpreter cannot have produced it.
  Json body = Json::array({{{"_type", "Match"}, {"lineno", 1}, {"col_offset", 0}}});
  Json reply = reply_with(body);
  EXPECT_FALSE(has_rule(analyze(reply, Policy(), {}), "unknown-node"));
  reply["python"] = {3, 9};
  EXPECT_TRUE(has_rule(analyze(reply, Policy(), {}), "unknown-node"));
}

TEST(Engine, UnknownNodeDeepInsideIsFound) {
  Json inner = {{"_type", "FutureThing"}, {"lineno", 2}, {"col_offset", 4}};
  Json call = {{"_type", "Call"}, {"lineno", 2}, {"col_offset", 0},
               {"func", {{"_type", "Name"}, {"id", "print"}, {"ctx", "Load"}, {"lineno", 2}, {"col_offset", 0}}},
               {"args", Json::array({inner})}};
  Json body = Json::array({{{"_type", "Expr"}, {"lineno", 2}, {"col_offset", 0}, {"value", call}}});
  auto findings = analyze(reply_with(body), Policy(), {});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "unknown-node");
  EXPECT_EQ(findings[0].line, 2);
  EXPECT_EQ(findings[0].col, 5);
}

TEST(Engine, FailedOrMalformedRepliesAreRejections) {
  auto rejects = [](const Json& reply, const std::string& rule) {
    auto findings = analyze(reply, Policy(), {});
    EXPECT_TRUE(has_rule(findings, rule)) << reply.dump();
    EXPECT_EQ(make_report(findings).verdict, Verdict::reject);
  };
  rejects(Json{{"ok", false}, {"error", "syntax_error"}, {"message", "bad"}, {"line", 1}, {"col", 2}},
          "syntax-error");
  rejects(Json{{"ok", false}, {"error", "too_deep"}, {"message", "x"}}, "syntax-too-deep");
  rejects(Json{{"ok", false}, {"error", "internal"}, {"message", "x"}}, "parse-failed");
  rejects(Json("not an object"), "parse-failed");
  rejects(Json{{"ok", true}, {"python", {2, 7}}, {"tree", {{"_type", "Module"}}}}, "parse-failed");
  rejects(Json{{"ok", true}, {"python", {3, 11}}}, "parse-failed");
}

TEST(Engine, EmptyModuleIsAccepted) {
  EXPECT_EQ(make_report(analyze(reply_with(Json::array()), Policy(), {})).verdict, Verdict::accept);
}

TEST(HostAllowlist, MatchesLikeTheEgressLayer) {
  auto list = HostAllowlist::parse({"api.example.com", "*.example.org", "203.0.113.7",
                                    "10.0.0.0/8", "2001:db8::/32", "Trailing.Example.NET."});
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_TRUE(list->allows("api.example.com"));
  EXPECT_TRUE(list->allows("API.Example.com."));
  EXPECT_FALSE(list->allows("example.com"));
  EXPECT_FALSE(list->allows("evilapi.example.com"));
  EXPECT_TRUE(list->allows("eu.example.org"));
  EXPECT_TRUE(list->allows("a.b.example.org"));
  EXPECT_FALSE(list->allows("example.org"));
  EXPECT_FALSE(list->allows("example.org.evil.net"));
  EXPECT_TRUE(list->allows("203.0.113.7"));
  EXPECT_FALSE(list->allows("203.0.113.8"));
  EXPECT_TRUE(list->allows("10.200.0.1"));
  EXPECT_TRUE(list->allows("012.1"));          // inet_aton: octal 10.0.0.1
  EXPECT_TRUE(list->allows("167772161"));      // 10.0.0.1 as one number
  EXPECT_FALSE(list->allows("2130706433"));    // 127.0.0.1
  EXPECT_FALSE(list->allows("0x7f.1"));        // 127.0.0.1
  EXPECT_TRUE(list->allows("2001:db8::1"));
  EXPECT_TRUE(list->allows("[2001:db8::1]"));
  EXPECT_FALSE(list->allows("2001:db9::1"));
  EXPECT_TRUE(list->allows("trailing.example.net"));
  EXPECT_FALSE(list->allows(""));
  EXPECT_FALSE(list->allows("api.example.com@evil"));
  EXPECT_FALSE(list->allows("api.example.com evil"));
}

TEST(HostAllowlist, NameEntriesNeverMatchAddressesAndViceVersa) {
  auto names = HostAllowlist::parse({"localhost"});
  ASSERT_TRUE(names.ok());
  EXPECT_FALSE(names->allows("127.0.0.1"));
  auto addresses = HostAllowlist::parse({"127.0.0.1"});
  ASSERT_TRUE(addresses.ok());
  EXPECT_FALSE(addresses->allows("localhost"));
}

TEST(HostAllowlist, IdnEntriesAreAcceptedAndMatchBothSpellings) {
  auto list = HostAllowlist::parse({"bücher.example"});
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_TRUE(list->allows("bücher.example"));
  EXPECT_TRUE(list->allows("xn--bcher-kva.example"));
  EXPECT_FALSE(list->allows("bucher.example"));
}

TEST(HostAllowlist, UnderscoreNamesAreRejectedAsEgressRejectsThem) {
  auto list = HostAllowlist::parse({"my_host.example.com"});
  ASSERT_FALSE(list.ok());
  // The egress layer's message for the same rule (it prefixes "rule '...': ").
  auto egress = netrules::compile_host_rule("my_host.example.com", 443);
  ASSERT_FALSE(egress.ok());
  EXPECT_EQ(list.error().message, "host entry \"my_host.example.com\": " + egress.error().message);
}

TEST(HostAllowlist, PortsWhereTheEntryOrTheCodeNamesOne) {
  auto list = HostAllowlist::parse({"api.example.com:443", "any.example.com", "[2001:db8::1]:8080"});
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_TRUE(list->allows("api.example.com", 443));
  EXPECT_FALSE(list->allows("api.example.com", 8443));
  EXPECT_TRUE(list->allows("api.example.com"));  // the code does not say
  EXPECT_TRUE(list->allows("any.example.com", 8443));
  EXPECT_TRUE(list->allows("2001:db8::1", 8080));
  EXPECT_FALSE(list->allows("2001:db8::1", 80));
  HostAllowlist added;
  ASSERT_TRUE(added.add("2001:db8::/32", 443).ok());
  EXPECT_EQ(added.entries(), std::vector<std::string>{"[2001:db8::/32]:443"});
  EXPECT_TRUE(HostAllowlist::parse(added.entries()).ok());
  EXPECT_FALSE(added.add("my_host.example.com", 443).ok());
}

TEST(HostAllowlist, RejectsMalformedEntries) {
  for (const char* bad : {"", "*", "*.", "a..b", "10.0.0.0/33", "::/129", "exa mple.com",
                          "http://x.com", "x.com/path", "1.2.3.4/x", "*.*.com"})
    EXPECT_FALSE(HostAllowlist::parse({bad}).ok()) << bad;
}

TEST(Policy, ImportAllowlistSemantics) {
  Policy policy;
  policy.allowed_imports.insert("xml.*");
  policy.allowed_imports.insert("os.path");
  EXPECT_TRUE(import_allowed(policy, "json"));
  EXPECT_FALSE(import_allowed(policy, "collections.abc"));
  EXPECT_TRUE(import_allowed(policy, "xml.etree.ElementTree"));
  EXPECT_FALSE(import_allowed(policy, "xml"));
  EXPECT_TRUE(import_allowed(policy, "os.path"));
  EXPECT_FALSE(import_allowed(policy, "os"));
  policy.allowed_imports.insert("*");
  EXPECT_TRUE(import_allowed(policy, "email.mime.text"));
  for (const char* name_only : {"os", "sys", "subprocess", "socket", "ctypes", "importlib",
                                "pickle", "marshal", "builtins", "pty", "multiprocessing",
                                "threading", "shutil", "pathlib", "io", "code", "gc", "inspect",
                                "_io", "_posixsubprocess", "importlib.util", "json._private"})
    EXPECT_FALSE(import_allowed(policy, name_only)) << name_only;
  policy.allowed_imports.insert("subprocess");
  EXPECT_TRUE(import_allowed(policy, "subprocess"));
}

TEST(Policy, DefaultSetIsTheIssuesList) {
  auto defaults = Policy::default_allowed_imports();
  EXPECT_EQ(defaults.size(), 30u);
  for (const char* m : {"json", "re", "math", "datetime", "collections", "itertools", "functools",
                        "statistics", "decimal", "fractions", "random", "string", "textwrap",
                        "typing", "dataclasses", "enum", "uuid", "hashlib", "base64", "csv",
                        "time", "html", "unicodedata", "difflib", "heapq", "bisect", "copy",
                        "pprint", "operator", "zoneinfo"})
    EXPECT_EQ(defaults.count(m), 1u) << m;
}

TEST(PolicyFile, ReadsEveryKey) {
  auto policy = parse_policy_text(R"(apiVersion: airlock.dev/v1
kind: ValidationPolicy
metadata: {name: fetcher}
spec:
  imports: [urllib.request, "xml.*"]
  defaultImports: false
  writeRoots: [/work/out]
  readRoots: [/data]
  workdir: /work
  allowDynamicPaths: true
  allowedHosts: [api.example.com, "*.example.org", 10.0.0.0/8]
  nonLiteralDestination: warn
  interpreter: /usr/bin/python3.11
  maxSourceBytes: 1000
)", "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  EXPECT_EQ(policy->allowed_imports, (std::set<std::string>{"urllib.request", "xml.*"}));
  EXPECT_EQ(policy->write_roots, std::vector<std::string>{"/work/out"});
  EXPECT_EQ(policy->read_roots, std::vector<std::string>{"/data"});
  EXPECT_TRUE(policy->allow_dynamic_paths);
  EXPECT_TRUE(policy->allowed_hosts.allows("a.example.org"));
  EXPECT_EQ(policy->non_literal_destination, NonLiteralDestination::warn);
  EXPECT_EQ(policy->interpreter, "/usr/bin/python3.11");
  EXPECT_EQ(policy->max_source_bytes, 1000u);
}

TEST(PolicyFile, JsonIsAccepted) {
  auto policy = parse_policy_text(
      R"({"apiVersion": "airlock.dev/v1", "kind": "ValidationPolicy", "spec": {"imports": ["os"]}})",
      "p.json");
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  EXPECT_TRUE(import_allowed(*policy, "os"));
  EXPECT_TRUE(import_allowed(*policy, "json"));
}

TEST(PolicyFile, ErrorsNameFileLineAndWhatWasExpected) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    auto policy = parse_policy_text(text, "tool.yaml");
    ASSERT_FALSE(policy.ok()) << text;
    EXPECT_NE(policy.error().message.find(needle), std::string::npos) << policy.error().message;
  };
  std::string head = "apiVersion: airlock.dev/v1\nkind: ValidationPolicy\nspec:\n";
  expect_error(head + "  imprts: [json]\n", "tool.yaml:4: spec: unknown key \"imprts\"");
  expect_error(head + "  allowDynamicPaths: maybe\n", "tool.yaml:4: allowDynamicPaths: expected true or false");
  expect_error(head + "  writeRoots: [relative]\n", "tool.yaml:4: writeRoots");
  expect_error(head + "  allowedHosts: [\"http://x\"]\n", "tool.yaml:4: host entry");
  expect_error(head + "  nonLiteralDestination: sometimes\n", "expected warn or reject");
  expect_error("kind: Other\napiVersion: airlock.dev/v1\n", "kind: expected ValidationPolicy");
  expect_error("apiVersion: airlock.dev/v1\nkind: ValidationPolicy\nspec: [\n", "tool.yaml:");
}

TEST(SourceBytes, FindsEachTrickWithItsPosition) {
  Policy policy;
  auto nul = check_source_bytes(std::string("a = 1\nb\0", 8), policy);
  ASSERT_EQ(nul.size(), 1u);
  EXPECT_EQ(nul[0].rule, "source-nul-byte");
  EXPECT_EQ(nul[0].line, 2);
  EXPECT_EQ(check_source_bytes("x = '\xE2\x80\x8F'\n", policy)[0].rule, "source-bidi-control");
  EXPECT_EQ(check_source_bytes("x = '\xC0\xAF'\n", policy)[0].rule, "source-not-utf8");  // overlong
  EXPECT_EQ(check_source_bytes("x = '\xED\xA0\x80'\n", policy)[0].rule, "source-not-utf8");  // surrogate
  EXPECT_EQ(check_source_bytes("# coding: latin-1\n", policy)[0].rule, "source-coding-cookie");
  EXPECT_TRUE(check_source_bytes("# -*- coding: utf-8 -*-\nx = 'é'\n", policy).empty());
  EXPECT_TRUE(check_source_bytes("x = 1\n# coding: latin-1\n", policy).empty());  // line 2 after code
  EXPECT_TRUE(check_source_bytes("\xEF\xBB\xBFx = 1\n", policy).empty());      // BOM
  policy.max_source_bytes = 4;
  EXPECT_EQ(check_source_bytes("x = 12\n", policy)[0].rule, "source-too-large");
}

Report sample_report() {
  Report report;
  report.verdict = Verdict::reject;
  report.findings = {{"dynamic-code", "eval: evaluates a string as code", 3, 5, Severity::error},
                     {"network-dynamic-destination", "not a literal", 7, 1, Severity::warning}};
  return report;
}

TEST(ReportFormat, JsonHasTheDocumentedShape) {
  auto json = to_json(sample_report());
  EXPECT_EQ(json["verdict"], "reject");
  ASSERT_EQ(json["findings"].size(), 2u);
  for (const char* key : {"rule", "message", "line", "col", "severity"})
    EXPECT_TRUE(json["findings"][0].contains(key)) << key;
  EXPECT_EQ(json["findings"][1]["severity"], "warning");
}

TEST(ReportFormat, SarifHasTheRequiredStructure) {
  auto sarif = to_sarif(sample_report(), "tool.py");
  EXPECT_EQ(sarif["version"], "2.1.0");
  EXPECT_TRUE(sarif["$schema"].get<std::string>().find("sarif-2.1.0") != std::string::npos);
  ASSERT_EQ(sarif["runs"].size(), 1u);
  const auto& driver = sarif["runs"][0]["tool"]["driver"];
  EXPECT_EQ(driver["name"], "airlock-validate");
  EXPECT_EQ(driver["rules"].size(), rules::catalog().size());
  const auto& result = sarif["runs"][0]["results"][0];
  EXPECT_EQ(result["ruleId"], "dynamic-code");
  EXPECT_EQ(result["level"], "error");
  EXPECT_EQ(result["message"]["text"], "eval: evaluates a string as code");
  const auto& region = result["locations"][0]["physicalLocation"]["region"];
  EXPECT_EQ(region["startLine"], 3);
  EXPECT_EQ(region["startColumn"], 5);
  EXPECT_EQ(driver["rules"][result["ruleIndex"].get<std::size_t>()]["id"], "dynamic-code");
  EXPECT_EQ(sarif["runs"][0]["results"][1]["level"], "warning");
}

TEST(RuleCatalog, DocsDescribeEveryRuleWithAnExample) {
  std::ifstream in(std::string(AIRLOCK_DOCS_DIR) + "/validate.md");
  ASSERT_TRUE(in) << "docs/validate.md";
  std::stringstream text;
  text << in.rdbuf();
  std::string docs = text.str();
  for (const auto& rule : rules::catalog())
    EXPECT_NE(docs.find("### `" + std::string(rule.id) + "`"), std::string::npos)
        << rule.id << " has no section in docs/validate.md";
}

}  // namespace
}  // namespace airlock::validate
