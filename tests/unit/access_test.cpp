// The access decision (access::decide): agents, users, roles, deny over allow, maxRisk,
// requiresUser, and the agent-only answers that must stay what the daemon said before.
#include "access/decide.hpp"

#include <gtest/gtest.h>

namespace airlock::access {
namespace {

using policy::Action;

const char* kConfig = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
identity:
  issuers:
    - {name: corp, issuer: https://idp.corp.example, audiences: [airlock], jwksUrl: https://idp.corp.example/jwks}
    - {name: other, issuer: https://other.example, audiences: [airlock], jwksUrl: https://other.example/jwks}
roles:
  - name: analyst
    rules:
      - {effect: allow, actions: [invoke], tools: ["csv-*", "weather"], maxRisk: medium}
      - {effect: deny,  actions: [invoke], tools: ["csv-export"]}
  - name: approver
    rules:
      - {effect: allow, actions: [approve, read_audit], tools: ["*"]}
  - name: operator
    rules:
      - {effect: allow, actions: [invoke], tools: ["csv-export", "shell"]}
bindings:
  - role: analyst
    users: [{issuer: corp, claim: groups, value: analysts}]
  - role: approver
    users: [{issuer: corp, claim: email, value: boss@corp.example}]
  - role: operator
    users: [{issuer: corp, claim: sub, value: olga}]
principals:
  - name: research-agent
    apiKeySha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
    tools: ["csv-*", "weather", "signed"]
  - name: narrow-agent
    jwt: {issuer: corp, subject: "system:serviceaccount:agents:narrow"}
    tools: ["weather"]
  - name: no-tools
    jwt: {issuer: corp, subject: "system:serviceaccount:agents:none"}
tools:
  - {name: csv-summary, risk: low, runtime: {type: command, command: [/bin/cat]}}
  - {name: csv-export, risk: medium, runtime: {type: command, command: [/bin/cat]}}
  - {name: csv-big, risk: high, runtime: {type: command, command: [/bin/cat]}}
  - {name: weather, risk: low, runtime: {type: command, command: [/bin/cat]}}
  - {name: shell, risk: high, runtime: {type: command, command: [/bin/cat]}}
  - {name: signed, risk: low, requiresUser: true, runtime: {type: command, command: [/bin/cat]}}
)";

class Access : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = policy::parse_config(kConfig, "access.yaml", "/tmp");
    ASSERT_TRUE(c.ok()) << c.error().message;
    config = std::move(*c);
  }
  Decision invoke(const char* agent, const Subject* user, const char* tool) const {
    Actor actor{agent ? agent : ""};
    return decide(config, agent ? &actor : nullptr, user, Action::invoke, tool);
  }
  policy::Config config;
};

Subject analyst() {
  return {"corp", "alice", {{"sub", "alice"}, {"groups", {"staff", "analysts"}}}};
}

TEST_F(Access, AgentAllowedButUserNot) {
  Subject bob{"corp", "bob", {{"sub", "bob"}, {"groups", {"staff"}}}};
  auto d = invoke("research-agent", &bob, "weather");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.kind, "forbidden");
  EXPECT_EQ(d.rule, "no rule allows");
  EXPECT_EQ(d.reason, "user 'bob' (issuer corp) may not invoke tool 'weather': no role is bound to them");
}

TEST_F(Access, UserAllowedButAgentNot) {
  auto user = analyst();
  auto d = invoke("narrow-agent", &user, "csv-summary");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule, "principal narrow-agent tools");
  EXPECT_EQ(d.reason, "principal 'narrow-agent' may not call tool 'csv-summary' (its tools: weather)");
}

TEST_F(Access, BothAllowedNamesBothRules) {
  auto user = analyst();
  auto d = invoke("research-agent", &user, "csv-summary");
  EXPECT_TRUE(d.allowed) << d.reason;
  EXPECT_EQ(d.kind, "allowed");
  EXPECT_EQ(d.rule,
            "principal research-agent tools and role analyst rule 1 (allow invoke csv-*, weather; "
            "maxRisk medium)");
  EXPECT_EQ(d.http_status(), 200);
}

TEST_F(Access, DenyOverridesAllow) {
  // analyst rule 1 allows csv-* (csv-export is medium, within maxRisk); rule 2 denies it.
  auto user = analyst();
  auto d = invoke("research-agent", &user, "csv-export");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule, "role analyst rule 2 (deny invoke csv-export)");
  EXPECT_EQ(d.reason, "user 'alice' (issuer corp) may not invoke tool 'csv-export': denied by "
                      "role analyst rule 2 (deny invoke csv-export)");
  EXPECT_EQ(d.http_status(), 403);
}

TEST_F(Access, DenyOfOneRoleOverridesAllowOfAnother) {
  Subject both{"corp", "olga", {{"groups", {"analysts"}}}};  // operator allows csv-export
  auto d = invoke(nullptr, &both, "csv-export");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule, "role analyst rule 2 (deny invoke csv-export)");
  Subject operator_only{"corp", "olga", nlohmann::json::object()};
  EXPECT_TRUE(invoke(nullptr, &operator_only, "csv-export").allowed);  // by sub
}

TEST_F(Access, MaxRiskExceeded) {
  auto user = analyst();
  auto d = invoke("research-agent", &user, "csv-big");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.rule, "role analyst rule 1 (allow invoke csv-*, weather; maxRisk medium)");
  EXPECT_EQ(d.reason, "user 'alice' (issuer corp) may not invoke tool 'csv-big': it is high risk, "
                      "over the maxRisk medium of role analyst rule 1 (allow invoke csv-*, "
                      "weather; maxRisk medium)");
}

TEST_F(Access, StringArrayClaimContainsTheValue) {
  Subject in_list{"corp", "carol", {{"groups", {"x", "analysts", "y"}}}};
  Subject as_string{"corp", "dave", {{"groups", "analysts"}}};
  Subject not_in_list{"corp", "erin", {{"groups", {"analysts-2", "analyst"}}}};
  Subject number_list{"corp", "fay", {{"groups", {1, 2}}}};
  EXPECT_EQ(roles_of(config, in_list), std::vector<std::string>{"analyst"});
  EXPECT_EQ(roles_of(config, as_string), std::vector<std::string>{"analyst"});
  EXPECT_TRUE(roles_of(config, not_in_list).empty());
  EXPECT_TRUE(roles_of(config, number_list).empty());
  EXPECT_TRUE(invoke(nullptr, &in_list, "weather").allowed);
  EXPECT_FALSE(invoke(nullptr, &not_in_list, "weather").allowed);
}

TEST_F(Access, BindingOfAnotherIssuerDoesNotMatch) {
  Subject elsewhere{"other", "alice", {{"groups", {"analysts"}}}};
  EXPECT_TRUE(roles_of(config, elsewhere).empty());
  EXPECT_FALSE(invoke(nullptr, &elsewhere, "weather").allowed);
}

TEST_F(Access, RequiresUserWithoutUserIsSubjectRequired) {
  auto d = invoke("research-agent", nullptr, "signed");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.kind, "subject_required");
  EXPECT_EQ(d.rule, "tool signed requiresUser");
  Subject signer{"corp", "olga", nlohmann::json::object()};  // no role allows signed
  EXPECT_EQ(invoke("research-agent", &signer, "signed").kind, "forbidden");
}

TEST_F(Access, UserOnlyCallIsDecidedOnRoles) {
  auto user = analyst();
  auto d = invoke(nullptr, &user, "weather");
  EXPECT_TRUE(d.allowed) << d.reason;
  EXPECT_EQ(d.rule, "role analyst rule 1 (allow invoke csv-*, weather; maxRisk medium)");
  EXPECT_FALSE(invoke(nullptr, &user, "shell").allowed);  // no principal, but no role either
  Subject boss{"corp", "boss", {{"email", "boss@corp.example"}}};
  EXPECT_TRUE(decide(config, nullptr, &boss, Action::approve, "shell").allowed);
  EXPECT_TRUE(decide(config, nullptr, &boss, Action::read_audit, "").allowed);  // not a tool action
  EXPECT_FALSE(decide(config, nullptr, &boss, Action::admin, "").allowed);
}

TEST_F(Access, NeitherAgentNorUserIsDenied) {
  EXPECT_FALSE(invoke(nullptr, nullptr, "weather").allowed);
}

// The messages of the authorize stage (src/pipeline/stages/access.cpp) before decide existed.
TEST_F(Access, AgentOnlyAnswersAreTodays) {
  auto ok = invoke("research-agent", nullptr, "csv-export");
  EXPECT_TRUE(ok.allowed);
  EXPECT_EQ(ok.rule, "principal research-agent tools");
  auto no = invoke("narrow-agent", nullptr, "csv-export");
  EXPECT_EQ(no.kind, "forbidden");
  EXPECT_EQ(no.http_status(), 403);
  EXPECT_EQ(no.reason, "principal 'narrow-agent' may not call tool 'csv-export' (its tools: weather)");
  EXPECT_EQ(invoke("no-tools", nullptr, "weather").reason,
            "principal 'no-tools' may not call tool 'weather' (its tools: none)");
  auto unknown = invoke("research-agent", nullptr, "nope");
  EXPECT_EQ(unknown.kind, "unknown_tool");
  EXPECT_EQ(unknown.http_status(), 404);
  EXPECT_EQ(unknown.reason, "there is no tool named 'nope'");
}

TEST_F(Access, UnknownPrincipalIsDenied) {
  auto d = invoke("ghost", nullptr, "weather");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason, "there is no principal named 'ghost'");
}

TEST_F(Access, ToJson) {
  auto j = to_json(invoke("narrow-agent", nullptr, "csv-export"));
  EXPECT_EQ(j["allowed"], false);
  EXPECT_EQ(j["kind"], "forbidden");
  EXPECT_EQ(j["rule"], "principal narrow-agent tools");
}

}  // namespace
}  // namespace airlock::access
