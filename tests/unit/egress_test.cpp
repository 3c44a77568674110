// Unit tests for egress decisions: rules, ports, pins, the SSRF guard, forwards. Addresses,
// names and rule matching themselves are tested in netrules_test.cpp; the proxy end to end in
// tests/egress.
#include <gtest/gtest.h>

#include "egress/policy.hpp"

namespace airlock::egress {
namespace {

EgressRules rules(std::vector<std::string> allow) {
  EgressRules n;
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

TEST(Rules, IdnAndUnderscoreNamesAsTheValidatorSeesThem) {
  auto p = *EgressPolicy::compile(rules({"bücher.example"}));
  EXPECT_TRUE(p.decide("bücher.example", 443).allowed);
  EXPECT_TRUE(p.decide("xn--bcher-kva.example", 443).allowed);
  auto bad = parse_allow_rule("my_host.example.com");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "rule 'my_host.example.com': " +
                                     netrules::compile_host_rule("my_host.example.com", 443)
                                         .error()
                                         .message);
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
  EgressRules n;
  n.forwards.push_back(*f);
  auto p = *EgressPolicy::compile(n);
  EXPECT_TRUE(p.decide_forward(*f).allowed);
  EXPECT_FALSE(p.decide("127.0.0.1", 16379).allowed);  // a forward is not a proxy rule
}

TEST(Inject, MatchedAfterTheRulesNormalizationAndOnlyThere) {
  auto n = rules({"*.slack.example:443", "api.slack.example:8443"});
  n.inject.push_back({"API.Slack.Example.", 443, "Authorization", "Bearer s3cret"});
  auto p = *EgressPolicy::compile(n);
  EXPECT_TRUE(p.injects());
  auto d = p.decide("api.SLACK.example.", 443);
  ASSERT_TRUE(d.allowed);
  auto in = p.injections_for(d, 443);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0]->host, "api.slack.example");
  EXPECT_EQ(in[0]->value, "Bearer s3cret");
  EXPECT_TRUE(p.injections_for(p.decide("api.slack.example", 8443), 8443).empty());  // port
  EXPECT_TRUE(p.injections_for(p.decide("x.api.slack.example", 443), 443).empty());  // name
  EXPECT_TRUE(p.injections_for(p.decide("api.slack.example", 444), 444).empty());    // denied
  EXPECT_EQ(p.describe_rules().find("s3cret"), std::string::npos);
}

TEST(Inject, SeveralHeadersForOneHostButEachOnce) {
  auto n = rules({"api.slack.example:443"});
  n.inject.push_back({"api.slack.example", 443, "Authorization", "Bearer s3cret"});
  n.inject.push_back({"api.slack.example", 443, "X-Api-Key", "k3y"});
  auto p = *EgressPolicy::compile(n);
  EXPECT_EQ(p.injections_for(p.decide("api.slack.example", 443), 443).size(), 2u);
  n.inject.push_back({"API.slack.example", 443, "authorization", "Bearer s3cret"});
  auto twice = EgressPolicy::compile(n);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("injected twice"), std::string::npos);
  EXPECT_EQ(twice.error().message.find("s3cret"), std::string::npos);
}

// A value with a line break would write headers of its own; every message names the host and
// header but never the value.
TEST(Inject, BadInjectionsAreRefusedWithoutNamingTheValue) {
  const std::vector<HeaderInjection> bad = {
      {"api.slack.example", 443, "Authorization", "Bearer s3cret\r\nX-Evil: 1"},
      {"api.slack.example", 443, "Authorization", "Bearer s3cret\n"},
      {"api.slack.example", 443, "Authorization", std::string("Bearer s3cret\0x", 15)},
      {"api.slack.example", 443, "Bad Header", "Bearer s3cret"},
      {"api.slack.example", 443, "", "Bearer s3cret"},
      {"api.slack.example", 0, "Authorization", "Bearer s3cret"},
      {"127.0.0.1", 443, "Authorization", "Bearer s3cret"},
      {"bad_name.example", 443, "Authorization", "Bearer s3cret"},
  };
  for (const auto& in : bad) {
    auto n = rules({"api.slack.example:443"});
    n.inject.push_back(in);
    auto p = EgressPolicy::compile(n);
    ASSERT_FALSE(p.ok()) << in.host << " " << in.header;
    EXPECT_EQ(p.error().message.find("s3cret"), std::string::npos) << p.error().message;
    EXPECT_NE(p.error().message.find("inject for " + in.host), std::string::npos)
        << p.error().message;
  }
}

}  // namespace
}  // namespace airlock::egress
