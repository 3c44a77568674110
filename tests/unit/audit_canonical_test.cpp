// The canonical form records are hashed in, and the member scanner the verifier uses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "audit/canonical_json.hpp"
#include "audit/jcs.hpp"
#include "audit/hash.hpp"

using namespace airlock::audit;
using nlohmann::json;

TEST(CanonicalJson, SortsKeysAndDropsWhitespace) {
  auto value = json::parse(R"({ "b": [1, 2, {"z": null, "a": true}], "a": "x", "B": false })");
  EXPECT_EQ(*canonical_json(value), R"({"B":false,"a":"x","b":[1,2,{"a":true,"z":null}]})");
}

TEST(CanonicalJson, KeysSortByUtf8Bytes) {
  json value = {{"\xc3\xa9", 1}, {"z", 2}, {"\xe2\x82\xac", 3}, {"Z", 4}};
  // 'Z' (5a) < 'z' (7a) < 'é' (c3 a9) < '€' (e2 82 ac)
  EXPECT_EQ(*canonical_json(value), "{\"Z\":4,\"z\":2,\"\xc3\xa9\":1,\"\xe2\x82\xac\":3}");
}

TEST(CanonicalJson, IntegersOnly) {
  EXPECT_EQ(*canonical_json(json::parse("[0,-1,18446744073709551615,-9223372036854775808]")),
            "[0,-1,18446744073709551615,-9223372036854775808]");
  auto with_float = canonical_json(json::parse(R"({"a":1.5})"));
  ASSERT_FALSE(with_float);
  EXPECT_EQ(with_float.error().code, "invalid_record");
  EXPECT_FALSE(canonical_json(json::parse("[1e3]")));
  EXPECT_FALSE(canonical_json(json::binary({1, 2})));
}

TEST(CanonicalJson, EscapesExactlyTheMinimum) {
  std::string text = "q\" b\\ \b\f\n\r\t \x01\x1f \x7f / \xe2\x80\xa8 \xf0\x9f\x94\x92";
  EXPECT_EQ(*canonical_json(json(text)),
            "\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0001\\u001f \x7f / \xe2\x80\xa8 \xf0\x9f\x94\x92\"");
  EXPECT_EQ(*canonical_json(json(std::string("nul\0byte", 8))), "\"nul\\u0000byte\"");
}

TEST(CanonicalJson, RejectsInvalidUtf8) {
  for (std::string bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "a\x80"}) {
    EXPECT_FALSE(canonical_json(json(bad))) << to_hex(as_bytes(bad));
    json as_key = {{bad, 1}};
    EXPECT_FALSE(canonical_json(as_key));
  }
}

TEST(CanonicalJson, ValidUtf8ReplacesOnlyBadBytes) {
  EXPECT_EQ(to_valid_utf8("ok \xe2\x82\xac"), "ok \xe2\x82\xac");
  EXPECT_EQ(to_valid_utf8("a\xff" "b"), "a\xef\xbf\xbd" "b");
  EXPECT_TRUE(canonical_json(json(to_valid_utf8("\xc0\xaf\xed\xa0\x80"))));
}

TEST(CanonicalJson, RoundTripsThroughAParser) {
  json value = {{"s", "line\nnext \"q\" \xe2\x82\xac"}, {"n", -42}, {"a", json::array({json::object()})}};
  std::string text = *canonical_json(value);
  EXPECT_EQ(json::parse(text), value);
  EXPECT_EQ(*canonical_json(json::parse(text)), text);
}

TEST(CanonicalObject, MergesMembersInKeyOrder) {
  EXPECT_EQ(canonical_object({{"time", "5"}, {"a", "\"x\""}, {"index", "0"}}),
            R"({"a":"x","index":0,"time":5})");
  EXPECT_EQ(canonical_object({}), "{}");
}

TEST(FindTopLevelMember, FindsOnlyTopLevelKeys) {
  std::string record = R"({"a":{"index":99,"s":"\"index\":7"},"b":["}",{"x":"]"}],"index":3,"prev":"00"})";
  EXPECT_EQ(find_top_level_member(record, "index"), "3");
  EXPECT_EQ(find_top_level_member(record, "prev"), "\"00\"");
  EXPECT_EQ(find_top_level_member(record, "a"), R"({"index":99,"s":"\"index\":7"})");
  EXPECT_EQ(find_top_level_member(record, "s"), std::nullopt);
  EXPECT_EQ(find_top_level_member(record, "missing"), std::nullopt);
}

TEST(FindTopLevelMember, SurvivesMalformedInput) {
  for (std::string bad : {"", "{", "{\"index\"", "{\"index\":", "{\"a\":\"unterminated",
                          "{\"a\":[1,2", "[\"index\",1]", "{\"a\":1 \"index\":2}", "{\"a\\"}) {
    EXPECT_EQ(find_top_level_member(bad, "index"), std::nullopt) << bad;
  }
}

// RFC 8785 (JCS), for approval arguments: the numbers of its Appendix B and a few more, as
// ECMAScript writes them.
TEST(Jcs, NumbersAsEcmaScriptWritesThem) {
  const std::vector<std::pair<double, const char*>> cases = {
      {0.0, "0"},
      {-0.0, "0"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {-1.7976931348623157e308, "-1.7976931348623157e+308"},
      {9007199254740992.0, "9007199254740992"},
      {295147905179352830000.0, "295147905179352830000"},
      {1e21, "1e+21"},
      {1e20, "100000000000000000000"},
      {333333333.3333333, "333333333.3333333"},
      {42.5, "42.5"},
      {0.000001, "0.000001"},
      {1e-7, "1e-7"},
      {123e-20, "1.23e-18"},
      {-4.5e-3, "-0.0045"},
      {1e23, "1e+23"},
  };
  for (const auto& [value, text] : cases) EXPECT_EQ(jcs_number(value), text) << text;
}

// Members sorted by UTF-16 code units (RFC 8785 3.2.3's example: U+1F600 sorts before U+FB33,
// though its UTF-8 bytes sort after), strings with the minimal escapes, integers past 2^53
// with all their digits, and what the audit form refuses (a fraction) held.
TEST(Jcs, MembersInUtf16OrderAndEveryValueHeld) {
  auto value = nlohmann::json::parse(
      R"({"\u20ac":"Euro","\r":"CR","\ufb33":"Hebrew","1":"One","\ud83d\ude00":"Smiley","\u0080":"Ctl","\u00f6":"o"})");
  auto text = jcs(value);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "{\"\\r\":\"CR\",\"1\":\"One\",\"\u0080\":\"Ctl\",\"\u00f6\":\"o\",\"\u20ac\":\"Euro\","
                   "\"\U0001F600\":\"Smiley\",\"\uFB33\":\"Hebrew\"}");
  auto numbers = jcs(nlohmann::json::parse(R"([42.5, 1E-7, 9007199254740993, -9007199254740993, 4.50, 2e0])"));
  ASSERT_TRUE(numbers.ok());
  EXPECT_EQ(*numbers, "[42.5,1e-7,9007199254740993,-9007199254740993,4.5,2]");
  EXPECT_FALSE(canonical_json(nlohmann::json::parse("42.5")).ok()) << "the audit form is unchanged";
  EXPECT_FALSE(jcs(nlohmann::json(std::string("\xff"))).ok());
}
