// The identity, roles and bindings sections (issue #15), principals' jwt and tools'
// requiresUser: what parses, and each mistake named at its file:line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "policy/config.hpp"

namespace airlock::policy {
namespace {

namespace fs = std::filesystem;

const char* kRbac = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
identity:
  allowDelegatedSubjects: true
  tokenLifetime: 10m
  issuers:
    - name: corp
      issuer: https://idp.corp.example
      audiences: [airlock]
      jwksFile: corp-jwks.json
    - name: cluster
      issuer: https://kubernetes.default.svc
      audiences: [airlock, other]
      jwksUrl: https://kubernetes.default.svc/openid/v1/jwks
roles:
  - name: analyst
    rules:
      - {effect: allow, actions: [invoke], tools: ["csv-*", "weather"], maxRisk: medium}
      - {effect: deny,  actions: [invoke], tools: ["csv-export"]}
  - name: approver
    rules:
      - {effect: allow, actions: [approve, read_audit], tools: ["*"]}
bindings:
  - role: analyst
    users: [{issuer: corp, claim: groups, value: analysts}]
  - role: approver
    users: [{issuer: corp, claim: email, value: boss@corp.example}, {issuer: cluster, claim: sub, value: ops}]
principals:
  - name: research-agent
    jwt: {issuer: cluster, subject: "system:serviceaccount:agents:research"}
    tools: ["*"]
  - name: keyed-agent
    apiKeySha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
tools:
  - name: weather
    requiresUser: true
    runtime: {type: command, command: [/bin/cat]}
)";

class IdentityConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("airlock-identity-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "corp-jwks.json") << R"({"keys": []})";
  }
  void TearDown() override { fs::remove_all(dir); }

  Result<Config> parse(const std::string& yaml) const {
    return parse_config(yaml, "test.yaml", dir.string());
  }
  fs::path dir;
};

std::string with(const std::string& from, const std::string& to) {
  std::string s = kRbac;
  const auto at = s.find(from);
  if (at == std::string::npos) ADD_FAILURE() << "no '" << from << "' in the config";
  else s.replace(at, from.size(), to);
  return s;
}

// "test.yaml:N", N the line of the first occurrence of `text` in `yaml`.
std::string line_of(const std::string& yaml, const std::string& text) {
  const auto at = yaml.find(text);
  return "test.yaml:" + std::to_string(std::count(yaml.begin(), yaml.begin() + at, '\n') + 1);
}

TEST_F(IdentityConfigTest, EveryKeyParses) {
  auto c = parse(kRbac);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->identity.allow_delegated_subjects);
  EXPECT_EQ(c->identity.token_lifetime, std::chrono::minutes(10));
  ASSERT_EQ(c->identity.issuers.size(), 2u);
  const auto& corp = c->identity.issuers[0];
  EXPECT_EQ(corp.issuer, "https://idp.corp.example");
  EXPECT_EQ(corp.audiences, std::vector<std::string>{"airlock"});
  EXPECT_EQ(corp.jwks_file, (dir / "corp-jwks.json").string());  // resolved against the config's dir
  EXPECT_TRUE(corp.jwks_url.empty());
  EXPECT_EQ(c->identity.find_issuer("cluster")->jwks_url,
            "https://kubernetes.default.svc/openid/v1/jwks");
  ASSERT_EQ(c->roles.size(), 2u);
  const auto& rule = c->roles[0].rules[0];
  EXPECT_EQ(rule.effect, Effect::allow);
  EXPECT_EQ(rule.actions, std::vector<Action>{Action::invoke});
  EXPECT_EQ(rule.tools, (std::vector<std::string>{"csv-*", "weather"}));
  EXPECT_EQ(rule.max_risk, Risk::medium);
  EXPECT_EQ(c->roles[0].rules[1].effect, Effect::deny);
  EXPECT_FALSE(c->roles[0].rules[1].max_risk);
  EXPECT_EQ(c->find_role("approver")->rules[0].actions,
            (std::vector<Action>{Action::approve, Action::read_audit}));
  ASSERT_EQ(c->bindings.size(), 2u);
  EXPECT_EQ(c->bindings[1].users[1].issuer, "cluster");
  EXPECT_EQ(c->bindings[1].users[1].claim, "sub");
  EXPECT_EQ(c->bindings[1].users[1].value, "ops");
  const auto* agent = c->find_principal("research-agent");
  ASSERT_TRUE(agent && agent->jwt);
  EXPECT_EQ(agent->jwt->subject, "system:serviceaccount:agents:research");
  EXPECT_TRUE(agent->api_key_sha256.empty());
  EXPECT_FALSE(c->find_principal("keyed-agent")->jwt);
  EXPECT_TRUE(c->tools[0].requires_user);
}

TEST_F(IdentityConfigTest, Defaults) {
  auto c = parse(with("  allowDelegatedSubjects: true\n  tokenLifetime: 10m\n", ""));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(c->identity.allow_delegated_subjects);
  EXPECT_EQ(c->identity.token_lifetime, std::chrono::minutes(15));
  auto minimal = parse(with("    requiresUser: true\n", ""));
  ASSERT_TRUE(minimal.ok()) << minimal.error().message;
  EXPECT_FALSE(minimal->tools[0].requires_user);
}

struct Mistake {
  std::string from, to;  // the change to kRbac
  std::string at;        // the text at the line of the error, in the changed config
  std::string says;
};

void PrintTo(const Mistake& m, std::ostream* os) { *os << "'" << m.from << "' -> '" << m.to << "'"; }

class IdentityMistakes : public IdentityConfigTest,
                         public ::testing::WithParamInterface<Mistake> {};

TEST_P(IdentityMistakes, ReportedAtTheirLine) {
  const auto& m = GetParam();
  const std::string yaml = with(m.from, m.to);
  auto c = parse(yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.rfind(line_of(yaml, m.at) + ":", 0), 0u) << c.error().message;
  EXPECT_NE(c.error().message.find(m.says), std::string::npos) << c.error().message;
  EXPECT_EQ(c.error().message.find('\n'), std::string::npos) << "one error only:\n"
                                                              << c.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Keys, IdentityMistakes,
    ::testing::Values(
        Mistake{"actions: [approve, read_audit]", "actions: [approve, reed_audit]", "reed_audit",
                "unknown action 'reed_audit' (expected one of: invoke, approve, read_invocations, "
                "read_all_invocations, read_audit, admin, create_session, manage_sessions)"},
        Mistake{"effect: deny", "effect: block", "effect: block", "expected allow or deny"},
        Mistake{"maxRisk: medium", "maxRisk: huge", "maxRisk: huge",
                "expected low, medium, high or critical"},
        Mistake{"tools: [\"csv-export\"]}", "tools: [\"csv-export\"], maxRisk: low}",
                "maxRisk: low", "only an allow rule has one"},
        Mistake{"  - role: analyst", "  - role: analyts", "role: analyts",
                "bindings[0].role: no role named 'analyts'"},
        Mistake{"{issuer: corp, claim: groups", "{issuer: crop, claim: groups", "issuer: crop",
                "no issuer named 'crop' in identity.issuers (configured: corp, cluster)"},
        Mistake{"jwt: {issuer: cluster", "jwt: {issuer: clustr", "issuer: clustr",
                "principals[0].jwt.issuer: no issuer named 'clustr'"},
        Mistake{"      jwksFile: corp-jwks.json",
                "      jwksFile: corp-jwks.json\n      jwksUrl: https://idp.corp.example/jwks",
                "    - name: corp", "expected exactly one of jwksFile"},
        Mistake{"      jwksFile: corp-jwks.json\n", "", "    - name: corp",
                "expected exactly one of jwksFile"},
        Mistake{"jwksFile: corp-jwks.json", "jwksFile: missing.json", "missing.json",
                "missing.json is not a file"},
        Mistake{"jwksUrl: https://kubernetes", "jwksUrl: ftp://kubernetes", "ftp://",
                "expected an http:// or https:// URL"},
        Mistake{"    jwt: {issuer: cluster, subject: \"system:serviceaccount:agents:research\"}\n",
                "", "  - name: research-agent",
                "principals[0]: missing apiKeySha256 (the SHA-256 of the API key, hex) or jwt"},
        Mistake{"tokenLifetime: 10m", "tokenLifetime: 16m", "16m", "at most 15m"},
        Mistake{"tokenLifetime: 10m", "tokenLifetime: 1h", "1h", "at most 15m"},
        Mistake{"allowDelegatedSubjects: true", "allowDelegatedSubjects: yes-please",
                "yes-please", "expected true or false"},
        Mistake{"roles:\n",
                "    - {name: corp, issuer: https://x.example, audiences: [a], jwksUrl: "
                "https://x.example/k}\nroles:\n",
                "    - {name: corp", "identity.issuers: 'corp' is defined twice"},
        Mistake{"bindings:\n", "  - name: analyst\n    rules: []\nbindings:\n",
                "  - name: analyst\n    rules: []", "roles: 'analyst' is defined twice"},
        Mistake{"    requiresUser: true", "    requiresUser: sometimes", "sometimes",
                "requiresUser: expected true or false"},
        Mistake{"  tokenLifetime: 10m", "  tokenLifetime: 10m\n  lifetime: 5m", "lifetime: 5m",
                "identity: unknown field 'lifetime'"}));

TEST_F(IdentityConfigTest, EveryMistakeListedInFileOrder) {
  std::string yaml = with("actions: [approve, read_audit]", "actions: [aprove]");
  yaml.replace(yaml.find("  - role: analyst"), 17, "  - role: nobody");
  yaml.replace(yaml.find("tokenLifetime: 10m"), 18, "tokenLifetime: 20m");
  auto c = parse(yaml);
  ASSERT_FALSE(c.ok());
  const std::string& m = c.error().message;
  const auto first = m.find(line_of(yaml, "20m") + ":");
  const auto second = m.find(line_of(yaml, "aprove") + ":");
  const auto third = m.find(line_of(yaml, "role: nobody") + ":");
  EXPECT_NE(first, std::string::npos) << m;
  EXPECT_NE(second, std::string::npos) << m;
  EXPECT_NE(third, std::string::npos) << m;
  EXPECT_TRUE(first < second && second < third) << m;
}

TEST_F(IdentityConfigTest, AWrongIssuerIsStillKnownToBindings) {
  // The issuer's jwksFile is wrong: that is the one error, not also every binding naming corp.
  const std::string yaml = with("jwksFile: corp-jwks.json", "jwksFile: missing.json");
  auto c = parse(yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.find("no issuer named"), std::string::npos) << c.error().message;
}

TEST_F(IdentityConfigTest, TwoPrincipalsWithOneJwtSubject) {
  const std::string yaml = with(
      "    apiKeySha256: 2c26",
      "    jwt: {issuer: cluster, subject: \"system:serviceaccount:agents:research\"}\n"
      "    apiKeySha256: 2c26");
  auto c = parse(yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.rfind(line_of(yaml, "  - name: keyed-agent") + ":", 0), 0u)
      << c.error().message;
  EXPECT_NE(c.error().message.find("two principals have the jwt subject"), std::string::npos);
}

}  // namespace
}  // namespace airlock::policy
