// Unit tests for the host rules egress and the validator share: IP spellings, special-purpose
// ranges, host-name normalisation, host:port splitting, rule compilation and matching.
#include <gtest/gtest.h>

#include "netrules/address.hpp"
#include "netrules/host_name.hpp"
#include "netrules/host_port.hpp"
#include "netrules/rules.hpp"

namespace airlock::netrules {
namespace {

std::string ip(std::string_view text) {
  auto a = parse_ip_literal(text);
  return a ? a->to_string() : "not an IP";
}

TEST(IpLiterals, EverySpellingOfLoopbackIsLoopback) {
  for (const char* spelling : {"127.0.0.1", "2130706433", "0x7f.1", "0x7F000001", "0177.0.0.1",
                               "127.1", "127.0.1", "0x7f.0.0.1", "::ffff:127.0.0.1", "::ffff:7f00:1"})
    EXPECT_EQ(ip(spelling), "127.0.0.1") << spelling;
  EXPECT_EQ(ip("::1"), "::1");
  EXPECT_EQ(ip("169.254.169.254"), "169.254.169.254");
  EXPECT_EQ(ip("0251.0376.0251.0376"), "169.254.169.254");
}

TEST(IpLiterals, NamesAndJunkAreNotIps) {
  for (const char* text : {"example.com", "127.0.0.1.example.com", "1.2.3.4 ", " 1.2.3.4",
                           "fe80::1%eth0", "", "0x", "1.2.3.4.5", "256.1.1.1", "12a.0.0.1"})
    EXPECT_EQ(ip(text), "not an IP") << "'" << text << "'";
}

TEST(IpLiterals, StrictFormsOnlyForRules) {
  EXPECT_TRUE(parse_ip_strict("10.0.0.1"));
  EXPECT_FALSE(parse_ip_strict("0x7f.1"));
  EXPECT_FALSE(parse_ip_strict("2130706433"));
}

TEST(SpecialPurpose, ClassifiesWhatTheSsrfGuardRefuses) {
  auto why = [](const char* text) { return special_purpose(*parse_ip_strict(text)).value_or("public"); };
  EXPECT_EQ(why("127.0.0.1"), "loopback");
  EXPECT_EQ(why("10.1.2.3"), "private");
  EXPECT_EQ(why("172.16.0.1"), "private");
  EXPECT_EQ(why("172.32.0.1"), "public");
  EXPECT_EQ(why("192.168.1.1"), "private");
  EXPECT_EQ(why("169.254.169.254"), "link-local");
  EXPECT_EQ(why("100.64.0.1"), "CGNAT");
  EXPECT_EQ(why("100.128.0.1"), "public");
  EXPECT_EQ(why("224.0.0.1"), "multicast");
  EXPECT_EQ(why("0.0.0.0"), "unspecified");
  EXPECT_EQ(why("255.255.255.255"), "reserved");
  EXPECT_EQ(why("8.8.8.8"), "public");
  EXPECT_EQ(why("::"), "unspecified");
  EXPECT_EQ(why("::1"), "loopback");
  EXPECT_EQ(why("fd00::1"), "private");
  EXPECT_EQ(why("fe80::1"), "link-local");
  EXPECT_EQ(why("ff02::1"), "multicast");
  EXPECT_EQ(why("64:ff9b::a9fe:a9fe"), "link-local (via NAT64)");
  EXPECT_EQ(why("64:ff9b::808:808"), "public");
  EXPECT_EQ(why("2002:7f00:1::"), "loopback (via 6to4)");
  EXPECT_EQ(why("2606:4700::1111"), "public");
}

TEST(HostNames, NormalizeCaseDotAndIdna) {
  EXPECT_EQ(*normalize_host_name("API.Example.COM."), "api.example.com");
  EXPECT_EQ(*normalize_host_name("bücher.example"), "xn--bcher-kva.example");
  EXPECT_EQ(*normalize_host_name("xn--bcher-kva.example"), "xn--bcher-kva.example");
  for (const char* bad : {"", ".", "a..b", "-a.com", "a-.com", "under_score.com", "a b.com",
                          "evil.com/x", "user@evil.com", "a%2eb"})
    EXPECT_FALSE(normalize_host_name(bad).ok()) << bad;
}

TEST(HostPort, SplitsEveryForm) {
  auto split = [](std::string_view text) {
    auto hp = split_host_port(text);
    if (!hp) return std::string("error");
    return hp->host + (hp->bracketed ? " []" : "") + (hp->port ? " port " + *hp->port : "");
  };
  EXPECT_EQ(split("api.example.com"), "api.example.com");
  EXPECT_EQ(split("api.example.com:8443"), "api.example.com port 8443");
  EXPECT_EQ(split("api.example.com:"), "api.example.com port ");
  EXPECT_EQ(split("[::1]"), "::1 []");
  EXPECT_EQ(split("[::1]:8080"), "::1 [] port 8080");
  EXPECT_EQ(split("2001:db8::1"), "2001:db8::1");  // bare IPv6: no port
  EXPECT_EQ(split("fd00::/8"), "fd00::/8");
  EXPECT_EQ(split("[::1"), "error");
  EXPECT_EQ(split("[::1]8080"), "error");
  EXPECT_EQ(split_host_port("[::1").error().message, "'[::1': missing ']'");
}

TEST(HostPort, PortsAreDecimal1To65535) {
  EXPECT_EQ(parse_port("443"), 443);
  EXPECT_EQ(parse_port("65535"), 65535);
  for (const char* bad : {"", "0", "65536", "-1", "+1", "0x50", "80 ", "*"})
    EXPECT_FALSE(parse_port(bad)) << bad;
}

Destination to(std::string_view host) { return *classify_destination(host); }

bool allows(std::string_view rule_host, std::optional<std::uint16_t> rule_port,
            std::string_view host, std::optional<std::uint16_t> port) {
  auto rule = compile_host_rule(rule_host, rule_port);
  EXPECT_TRUE(rule.ok()) << rule_host;
  auto d = classify_destination(host);
  return rule && d && matches(*rule, *d, port);
}

TEST(HostRules, NamesWildcardsAddressesAndPorts) {
  EXPECT_TRUE(allows("api.example.com", 443, "API.Example.COM.", 443));
  EXPECT_FALSE(allows("api.example.com", 443, "api.example.com", 8443));
  EXPECT_TRUE(allows("api.example.com", 443, "api.example.com", std::nullopt));  // port unknown
  EXPECT_TRUE(allows("api.example.com", std::nullopt, "api.example.com", 8443));  // any port
  EXPECT_FALSE(allows("api.example.com", 443, "sub.api.example.com", 443));
  EXPECT_TRUE(allows("*.example.org", 443, "a.b.example.org", 443));
  EXPECT_FALSE(allows("*.example.org", 443, "example.org", 443));
  EXPECT_FALSE(allows("*.example.org", 443, "evilexample.org", 443));
  EXPECT_TRUE(allows("10.0.0.0/8", 443, "012.1", 443));  // 10.0.0.1 in octal
  EXPECT_FALSE(allows("10.0.0.0/8", 443, "2130706433", 443));
  EXPECT_TRUE(allows("2001:db8::/32", 443, "[2001:db8::1]", 443));
  EXPECT_TRUE(allows("127.0.0.1", 80, "::ffff:127.0.0.1", 80));
  EXPECT_FALSE(allows("localhost", 80, "127.0.0.1", 80));  // names never match addresses
  EXPECT_FALSE(allows("127.0.0.1", 80, "localhost", 80));  // and addresses never names
}

TEST(HostRules, IdnRulesAreCompiledToPunycodeAndMatchBothSpellings) {
  auto rule = compile_host_rule("bücher.example", 443);
  ASSERT_TRUE(rule.ok()) << rule.error().message;
  EXPECT_EQ(rule->name, "xn--bcher-kva.example");
  EXPECT_EQ(rule->text, "bücher.example:443");
  EXPECT_TRUE(matches(*rule, to("bücher.example"), 443));
  EXPECT_TRUE(matches(*rule, to("XN--BCHER-KVA.example"), 443));
  auto wildcard = compile_host_rule("*.bücher.example", 443);
  EXPECT_TRUE(matches(*wildcard, to("www.bücher.example"), 443));
}

TEST(HostRules, UnderscoresAreNotHostNames) {
  auto rule = compile_host_rule("my_host.example.com", 443);
  ASSERT_FALSE(rule.ok());
  EXPECT_EQ(rule.error().message, normalize_host_name("my_host.example.com").error().message);
  EXPECT_FALSE(classify_destination("my_host.example.com").ok());
}

TEST(HostRules, MalformedHostsAreErrors) {
  for (const char* bad : {"", "*", "*.", "a..b", "10.0.0.0/33", "::/129", "exa mple.com",
                          "x.com/path", "1.2.3.4/x", "*.*.com", "a.*.com", "0x7f.1", "127.1"})
    EXPECT_FALSE(compile_host_rule(bad, 443).ok()) << bad;
}

TEST(RuleText, PortsDefaultAsTheCallerSays) {
  EXPECT_EQ(parse_rule_text("api.example.com", 443)->port, 443);
  EXPECT_FALSE(parse_rule_text("api.example.com", std::nullopt)->port);
  EXPECT_FALSE(parse_rule_text("api.example.com:*", 443)->port);
  EXPECT_EQ(parse_rule_text("[::1]:8080", 443)->host, "::1");
  EXPECT_EQ(parse_rule_text("10.0.0.0/8:5432", 443)->port, 5432);
  EXPECT_EQ(parse_rule_text("host:x", 443).error().message, "'host:x': port must be 1-65535 or *");
}

}  // namespace
}  // namespace airlock::netrules
