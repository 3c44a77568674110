// Tool schemas: patterns matched with RE2 wherever they sit in a schema, patternProperties with
// additionalProperties, the date/time formats, and every schema error found at load with the
// file:line:column of its YAML node.
#include <gtest/gtest.h>

#include "policy/config.hpp"
#include "policy/json_schema.hpp"

namespace airlock::policy {
namespace {

using nlohmann::json;

std::shared_ptr<const JsonSchema> compile(const json& schema) {
  auto c = JsonSchema::compile(schema);
  std::string why;
  for (const auto& p : c.problems) why += p.pointer + ": " + p.message + "\n";
  EXPECT_TRUE(c.schema) << why;
  return c.schema;
}

bool accepts(const std::shared_ptr<const JsonSchema>& s, const json& value) {
  return s && !s->check(value).has_value();
}

TEST(JsonSchemaPatterns, PatternAtTheTopLevelOfAProperty) {
  auto s = compile(json::parse(R"({"type":"object","properties":{"s":{"pattern":"^[a-z]+$"}}})"));
  EXPECT_TRUE(accepts(s, {{"s", "abc"}}));
  EXPECT_FALSE(accepts(s, {{"s", "aBc"}}));
  EXPECT_TRUE(accepts(s, {{"s", 5}}));  // pattern applies to strings only
  auto problem = s->check({{"s", "A"}});
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->first, "/s");
  EXPECT_NE(problem->second.find("^[a-z]+$"), std::string::npos) << problem->second;
}

TEST(JsonSchemaPatterns, PatternIsASearchNotAFullMatch) {
  auto s = compile({{"pattern", "b+"}});
  EXPECT_TRUE(accepts(s, "abbc"));
  EXPECT_FALSE(accepts(s, "ac"));
}

TEST(JsonSchemaPatterns, PatternInsideAnyOfItemsAndRef) {
  auto s = compile(json::parse(R"({
    "definitions": {"id": {"type": "string", "pattern": "^id-[0-9]+$"}},
    "type": "object",
    "properties": {
      "either": {"anyOf": [{"pattern": "^x+$"}, {"pattern": "^y+$"}]},
      "list": {"type": "array", "items": {"pattern": "^[0-9]+$"}},
      "tuple": {"type": "array", "items": [{"pattern": "^a$"}],
                "additionalItems": {"pattern": "^b$"}},
      "ref": {"$ref": "#/definitions/id"}
    }})"));
  EXPECT_TRUE(accepts(s, {{"either", "xx"}, {"list", {"1", "22"}}, {"tuple", {"a", "b", "b"}},
                          {"ref", "id-7"}}));
  EXPECT_FALSE(accepts(s, {{"either", "xy"}}));
  EXPECT_FALSE(accepts(s, {{"list", {"1", "x"}}}));
  EXPECT_FALSE(accepts(s, {{"tuple", {"b"}}}));
  EXPECT_FALSE(accepts(s, {{"tuple", {"a", "a"}}}));
  EXPECT_FALSE(accepts(s, {{"ref", "id-x"}}));
}

TEST(JsonSchemaPatterns, PatternUnderNotIfThenAndPropertyNames) {
  auto s = compile(json::parse(R"({
    "type": "object",
    "propertyNames": {"pattern": "^[a-z]+$"},
    "properties": {
      "n": {"not": {"pattern": "^bad"}},
      "c": {"if": {"pattern": "^http:"}, "then": {"pattern": "^http://localhost"}}
    }})"));
  EXPECT_TRUE(accepts(s, {{"n", "good"}, {"c", "http://localhost/x"}}));
  EXPECT_TRUE(accepts(s, {{"c", "ftp://x"}}));
  EXPECT_FALSE(accepts(s, {{"n", "bad thing"}}));
  EXPECT_FALSE(accepts(s, {{"c", "http://example.com"}}));
  EXPECT_FALSE(accepts(s, {{"UPPER", 1}}));
}

TEST(JsonSchemaPatterns, PatternPropertiesWithAdditionalPropertiesFalse) {
  auto s = compile(json::parse(R"({
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "patternProperties": {"^x-": {"type": "integer"}, "^x-s": {"minimum": 10}},
    "additionalProperties": false})"));
  EXPECT_TRUE(accepts(s, {{"name", "a"}, {"x-one", 1}, {"x-seven", 11}}));
  EXPECT_FALSE(accepts(s, {{"x-one", "not an integer"}}));
  EXPECT_FALSE(accepts(s, {{"x-seven", 3}}));  // both patterns apply
  EXPECT_FALSE(accepts(s, {{"other", 1}}));    // neither a property nor a pattern
  auto problem = s->check({{"name", "a"}, {"other", 1}});
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->first, "/other");
}

TEST(JsonSchemaPatterns, PatternPropertiesWithAdditionalPropertiesSchema) {
  auto s = compile(json::parse(R"({
    "patternProperties": {"^n_": {"type": "number"}},
    "additionalProperties": {"type": "string", "pattern": "^ok$"}})"));
  EXPECT_TRUE(accepts(s, {{"n_a", 1}, {"b", "ok"}}));
  EXPECT_FALSE(accepts(s, {{"b", "no"}}));
  EXPECT_FALSE(accepts(s, {{"n_a", "1"}}));
}

TEST(JsonSchemaPatterns, PatternPropertiesInsideRefAndNested) {
  auto s = compile(json::parse(R"({
    "definitions": {"headers": {"type": "object",
                                "patternProperties": {"^[A-Za-z-]+$": {"type": "string"}},
                                "additionalProperties": false}},
    "type": "object",
    "properties": {"req": {"type": "object",
                           "properties": {"headers": {"$ref": "#/definitions/headers"}}}}
  })"));
  EXPECT_TRUE(accepts(s, {{"req", {{"headers", {{"Accept", "x"}}}}}}));
  EXPECT_FALSE(accepts(s, {{"req", {{"headers", {{"Accept", 5}}}}}}));
  EXPECT_FALSE(accepts(s, {{"req", {{"headers", {{"bad key!", "x"}}}}}}));
}

// A pattern that backtracking engines take exponential time on, and std::regex recurses on
// once per character: RE2 answers, and correctly.
TEST(JsonSchemaPatterns, LongStringsAgainstBacktrackingPatterns) {
  auto s = compile(json::parse(R"({"properties": {"a": {"pattern": "^(a+)+$"},
                                                  "t": {"pattern": "^[A-Za-z ]*$"}}})"));
  std::string as(100000, 'a');
  EXPECT_TRUE(accepts(s, {{"a", as}}));
  EXPECT_FALSE(accepts(s, {{"a", as + "!"}}));
  EXPECT_TRUE(accepts(s, {{"t", std::string(100000, 'x')}}));
  EXPECT_FALSE(accepts(s, {{"t", std::string(100000, 'x') + "1"}}));
}

TEST(JsonSchemaFormats, DateTimeFormatsOnLongStrings) {
  auto s = compile(json::parse(R"({"properties": {"d": {"format": "date"}, "t": {"format": "time"},
                                                  "dt": {"format": "date-time"}}})"));
  EXPECT_TRUE(accepts(s, {{"d", "2024-02-29"}, {"t", "16:52:45Z"},
                          {"dt", "2022-07-18T16:52:45+02:00"}}));
  EXPECT_FALSE(accepts(s, {{"d", "2024-02-30"}}));
  EXPECT_FALSE(accepts(s, {{"d", "2024-13-01"}}));
  EXPECT_FALSE(accepts(s, {{"t", "25:00:00Z"}}));
  EXPECT_TRUE(accepts(s, {{"d", 5}}));  // formats apply to strings only
  std::string digits(100000, '1');
  EXPECT_TRUE(accepts(s, {{"d", digits + "-01-01"}}));
  EXPECT_FALSE(accepts(s, {{"d", digits}}));
  EXPECT_FALSE(accepts(s, {{"dt", digits + "-01-01T00:00:00." + digits}}));
  EXPECT_TRUE(accepts(s, {{"dt", "2000-01-01T00:00:00." + digits + "Z"}}));
}

// valijson compares every pair of items; this is linear, and 1 equals 1.0 as JSON Schema says.
TEST(JsonSchemaUniqueItems, LinearAndByJsonEquality) {
  auto s = compile(json::parse(R"({"properties": {"u": {"uniqueItems": true}}})"));
  EXPECT_TRUE(
      accepts(s, {{"u", {1, "1", {{"a", 1}}, {{"a", 2}}, json::array({1}), true, nullptr}}}));
  EXPECT_FALSE(accepts(s, {{"u", {1, 1.0}}}));
  EXPECT_FALSE(accepts(s, {{"u", {{{"a", 1}, {"b", 2}}, {{"b", 2}, {"a", 1}}}}}));
  json many = json::array();
  for (int i = 0; i < 200000; ++i) many.push_back(i);
  EXPECT_TRUE(accepts(s, {{"u", many}}));
  json same = json::array();
  for (int i = 0; i < 200000; ++i) same.push_back("x");
  auto problem = s->check({{"u", same}});
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->second.find("#0 and #1"), std::string::npos) << problem->second;
}

// minLength and maxLength count characters (code points), every one: valijson stopped at the
// first NUL byte, so "\u0000" followed by any amount passed maxLength.
TEST(JsonSchemaLengths, EveryCharacterCountsANulByteToo) {
  auto s = compile(json::parse(R"({"type":"object","properties":{"s":{"minLength":2,"maxLength":5}},
                                   "items":{"maxLength":1}})"));
  EXPECT_TRUE(accepts(s, {{"s", "ab"}}));
  EXPECT_TRUE(accepts(s, {{"s", "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x94\x91" "ab"}}));  // 5 characters, 11 bytes
  EXPECT_FALSE(accepts(s, {{"s", "\xF0\x9F\x94\x91"}}));                      // 1 character, 4 bytes
  EXPECT_FALSE(accepts(s, {{"s", "abcdef"}}));
  // The attack: a NUL first, then far more than the limit.
  auto problem = s->check({{"s", std::string(1, '\0') + std::string(100000, 'x')}});
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->first, "/s");
  EXPECT_EQ(problem->second, "String should be no more than 5 characters in length.");
  EXPECT_TRUE(accepts(s, {{"s", std::string(3, '\0')}}));  // three characters
  problem = s->check({{"s", std::string(1, '\0')}});
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->second, "String should be no fewer than 2 characters in length.");
  EXPECT_TRUE(accepts(s, {{"s", 12345678}}));  // lengths apply to strings only
}

TEST(JsonSchemaCompile, EveryProblemWithItsPointer) {
  auto c = JsonSchema::compile(json::parse(R"({
    "type": "object",
    "properties": {"a": {"type": "objekt"}, "b": {"minLength": -1},
                   "c": {"$ref": "#/definitions/none"}},
    "required": "url"})"));
  ASSERT_FALSE(c.schema);
  std::set<std::string> pointers;
  for (const auto& p : c.problems) pointers.insert(p.pointer);
  EXPECT_TRUE(pointers.count("/properties/a/type")) << c.problems.front().message;
  EXPECT_TRUE(pointers.count("/properties/b/minLength"));
  EXPECT_TRUE(pointers.count("/required"));
}

TEST(JsonSchemaCompile, RefsMustResolveInTheDocument) {
  auto dangling = JsonSchema::compile({{"$ref", "#/definitions/none"}});
  ASSERT_FALSE(dangling.schema);
  EXPECT_EQ(dangling.problems.at(0).pointer, "/$ref");
  auto remote = JsonSchema::compile({{"$ref", "http://example.com/schema.json"}});
  ASSERT_FALSE(remote.schema);
  EXPECT_NE(remote.problems.at(0).message.find("only references inside"), std::string::npos);
  EXPECT_TRUE(
      compile({{"definitions", {{"a", {{"type", "string"}}}}}, {"$ref", "#/definitions/a"}}));
}

TEST(JsonSchemaCompile, PatternsRe2CannotMatchAreRefused) {
  for (const char* pattern : {"^(?=a)a$", "^(a)\\1$", "(unclosed", "a(?<=b)"}) {
    auto c = JsonSchema::compile({{"properties", {{"s", {{"pattern", pattern}}}}}});
    ASSERT_FALSE(c.schema) << pattern;
    EXPECT_EQ(c.problems.at(0).pointer, "/properties/s/pattern");
  }
  auto keys = JsonSchema::compile({{"patternProperties", {{"(?!x)", json::object()}}}});
  ASSERT_FALSE(keys.schema);
  EXPECT_EQ(keys.problems.at(0).pointer, "/patternProperties/(?!x)");
}

TEST(JsonSchemaCompile, EnumConstAndDefaultAreNotSchemas) {
  // A "pattern" inside enum/const/default/examples is data, not a keyword.
  EXPECT_TRUE(compile(json::parse(R"j({"enum": [{"pattern": "(?=x)"}],
                                       "const": {"pattern": "(?=x)"},
                                       "default": {"pattern": "(?=x)"},
                                       "examples": [{"pattern": "(?=x)"}]})j")));
}

const char* kConfigHead = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
tools:
  - name: t
    runtime: {type: command, command: [/bin/cat]}
)";

std::string config_error(const std::string& tool_tail) {
  auto c = parse_config(kConfigHead + tool_tail, "test.yaml", "/tmp");
  return c ? std::string("(loaded)") : c.error().message;
}

TEST(ConfigSchemas, EachBadSchemaIsNamedWithFileLineColumn) {
  struct Case {
    const char* yaml;
    const char* where;
  };
  const Case cases[] = {
      {"    inputSchema:\n      properties: 5\n", "test.yaml:7:19: "},
      {"    inputSchema:\n      type: objekt\n", "test.yaml:7:13: "},
      {"    inputSchema:\n      required: url\n", "test.yaml:7:17: "},
      {"    inputSchema:\n      $ref: '#/definitions/x'\n", "test.yaml:7:13: "},
      {"    inputSchema:\n      properties:\n        n: {minLength: -1}\n", "test.yaml:8:24: "},
      {"    inputSchema:\n      properties:\n        n: {pattern: '^(?=a)'}\n", "test.yaml:8:22: "},
      {"    outputSchema:\n      properties:\n        n: {pattern: '(a)\\1'}\n",
       "test.yaml:8:22: "},
  };
  for (const auto& c : cases) {
    std::string error = config_error(c.yaml);
    EXPECT_EQ(error.rfind(c.where, 0), 0u) << c.yaml << "-> " << error;
  }
}

TEST(ConfigSchemas, AllProblemsOfASchemaAreListed) {
  std::string error = config_error(
      "    inputSchema:\n      type: objekt\n      properties:\n        n: {minLength: -1}\n");
  EXPECT_NE(error.find("test.yaml:7:13: "), std::string::npos) << error;
  EXPECT_NE(error.find("test.yaml:9:24: "), std::string::npos) << error;
}

TEST(ConfigSchemas, CompiledAtLoad) {
  auto c = parse_config(std::string(kConfigHead) +
                            "    inputSchema: {properties: {s: {pattern: '^[a-z]*$'}}}\n"
                            "    outputSchema: {type: object}\n",
                        "test.yaml", "/tmp");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->tools[0].input_check);
  ASSERT_TRUE(c->tools[0].output_check);
  EXPECT_FALSE(c->tools[0].input_check->check({{"s", "A"}}) == std::nullopt);
}

TEST(ConfigSchemas, MaxJsonDepth) {
  const std::string head = "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n";
  auto c = parse_config(head + "server: {maxJsonDepth: 10}\n", "test.yaml", "/tmp");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server.max_json_depth, 10u);
  auto zero = parse_config(head + "server: {maxJsonDepth: 0}\n", "test.yaml", "/tmp");
  EXPECT_FALSE(zero);
}

}  // namespace
}  // namespace airlock::policy
