// Unit tests for egress matching: IP spellings, special-purpose ranges, names, rules and
// decisions. The proxy itself is tested end to end in tests/egress.
#include <gtest/gtest.h>

#include "egress/address.hpp"
#include "egress/host_name.hpp"
#include "egress/policy.hpp"

namespace airlock::egress {
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

sandbox::NetworkPolicy rules(std::vector<std::string> allow) {
  sandbox::NetworkPolicy n;
  for (const auto& a : allow) n.allow.push_back(*parse_allow_rule(a));
  return n;
}

TEST(Rules, ParseHostPortForms) {
  auto r = parse_allow_rule("api.example.com");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->port, 443);
  EXPECT_FALSE(parse_allow_rule("api.example.com:*")->port.has_value());
  EXPECT_EQ(parse_allow_rule("[::1]:8080")->port, 8080);
  EXPECT_EQ(parse_allow_rule("10.0.0.0/8:5432")->host, "10.0.0.0/8");
  EXPECT_EQ(parse_allow_rule("fd00::/8")->host, "fd00::/8");
  for (const char* bad : {"*", "*:80", "a.*.com", "host:0", "host:70000", "host:x",
                          "10.0.0.0/33", "0x7f.1", "bad_name.com", "[::1"})
    EXPECT_FALSE(parse_allow_rule(bad).ok()) << bad;
}

TEST(Decide, ExactWildcardPortAndIpRules) {
  auto p = *EgressPolicy::compile(rules({"api.example.com", "*.pypi.org:443", "10.1.0.0/16:*",
                                          "192.0.2.7:8080"}));
  EXPECT_TRUE(p.decide("api.example.com", 443).allowed);
  EXPECT_TRUE(p.decide("API.EXAMPLE.COM.", 443).allowed);
  EXPECT_FALSE(p.decide("api.example.com", 80).allowed);          // other port
  EXPECT_FALSE(p.decide("sub.api.example.com", 443).allowed);     // exact: no subdomains
  EXPECT_FALSE(p.decide("example.com", 443).allowed);
  EXPECT_TRUE(p.decide("files.pypi.org", 443).allowed);
  EXPECT_TRUE(p.decide("a.b.pypi.org", 443).allowed);
  EXPECT_FALSE(p.decide("pypi.org", 443).allowed);                 // wildcard: subdomains only
  EXPECT_FALSE(p.decide("evilpypi.org", 443).allowed);
  EXPECT_TRUE(p.decide("10.1.2.3", 5432).allowed);                 // CIDR, any port
  EXPECT_TRUE(p.decide("0x0a.0x01.0x02.0x03", 5432).allowed);      // any spelling of an allowed IP
  EXPECT_FALSE(p.decide("10.2.0.1", 5432).allowed);
  EXPECT_TRUE(p.decide("192.0.2.7", 8080).allowed);
  EXPECT_FALSE(p.decide("192.0.2.7", 8081).allowed);
  auto d = p.decide("10.1.2.3", 5432);
  EXPECT_TRUE(d.explicit_address);
  ASSERT_TRUE(d.address);
  EXPECT_EQ(d.address->to_string(), "10.1.2.3");
}

TEST(Decide, IpLiteralsNeverMatchNameRules) {
  auto n = rules({"web.test:8080"});
  n.resolve["web.test"] = "127.0.0.1";
  auto p = *EgressPolicy::compile(n);
  EXPECT_TRUE(p.decide("web.test", 8080).allowed);
  for (const char* spelling : {"127.0.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.1",
                               "[::ffff:127.0.0.1]", "::ffff:127.0.0.1"})
    EXPECT_FALSE(p.decide(spelling, 8080).allowed) << spelling;
}

TEST(Decide, PinnedNamesSkipResolutionAndTheGuard) {
  auto n = rules({"db.internal:5432"});
  n.resolve["DB.Internal"] = "10.0.0.5";
  auto p = *EgressPolicy::compile(n);
  auto d = p.decide("db.internal", 5432);
  ASSERT_TRUE(d.allowed);
  ASSERT_TRUE(d.address);
  EXPECT_EQ(d.address->to_string(), "10.0.0.5");
  EXPECT_TRUE(d.explicit_address);
}

TEST(Admissible, PrivateAnswersAreRefusedUnlessAnIpRuleNamesThem) {
  auto p = *EgressPolicy::compile(rules({"svc.example.com", "10.9.0.0/16:443"}));
  auto d = p.decide("svc.example.com", 443);
  ASSERT_TRUE(d.allowed);
  EXPECT_FALSE(d.address);  // needs resolving
  std::string why;
  auto ok = p.admissible(d, {*parse_ip_strict("169.254.169.254")}, 443, &why);
  EXPECT_TRUE(ok.empty());
  EXPECT_NE(why.find("link-local"), std::string::npos) << why;
  ok = p.admissible(d, {*parse_ip_strict("127.0.0.1"), *parse_ip_strict("93.184.216.34")}, 443, &why);
  ASSERT_EQ(ok.size(), 1u);  // the loopback answer is dropped, the public one kept
  EXPECT_EQ(ok[0].to_string(), "93.184.216.34");
  ok = p.admissible(d, {*parse_ip_strict("10.9.1.1")}, 443, &why);
  EXPECT_EQ(ok.size(), 1u);  // named by the CIDR rule
}

TEST(Decide, ForbiddenEndpointsBeatEveryRule) {
  auto p = *EgressPolicy::compile(rules({"127.0.0.1:*"}));
  p.forbid({*parse_ip_strict("127.0.0.1"), 8750});
  EXPECT_TRUE(p.decide("127.0.0.1", 8080).allowed);
  auto d = p.decide("127.0.0.1", 8750);
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.reason.find("airlock's own"), std::string::npos);
}

TEST(Forwards, ParseAndDecide) {
  auto f = parse_forward("6379=127.0.0.1:16379");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->listen_port, 6379);
  EXPECT_EQ(f->port, 16379);
  for (const char* bad : {"6379", "0=a:1", "6379=host", "6379=host:0", "x=host:1"})
    EXPECT_FALSE(parse_forward(bad).ok()) << bad;
  sandbox::NetworkPolicy n;
  n.forwards.push_back(*f);
  auto p = *EgressPolicy::compile(n);
  EXPECT_TRUE(p.decide_forward(*f).allowed);
  EXPECT_FALSE(p.decide("127.0.0.1", 16379).allowed);  // a forward is not a proxy rule
}

}  // namespace
}  // namespace airlock::egress
