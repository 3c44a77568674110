// sessionTemplates, create_session and manage_sessions, quotas.sessions (issue #35): what is
// read, every mistake refused with an error naming it, and who the access decision lets create
// a session of which template.
#include <gtest/gtest.h>

#include "access/decide.hpp"
#include "policy/config.hpp"

namespace airlock::policy {
namespace {

const std::string kHead = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
identity:
  issuers:
    - {name: corp, issuer: https://idp.corp.example, audiences: [airlock], jwksUrl: https://idp.corp.example/jwks}
roles:
  - name: dev
    rules:
      - {effect: allow, actions: [create_session], sessionTemplates: ["py-*"], maxRisk: low}
      - {effect: deny, actions: [create_session], sessionTemplates: [py-secret]}
  - name: ops
    rules:
      - {effect: allow, actions: [manage_sessions], tools: ["*"]}
bindings:
  - role: dev
    users: [{issuer: corp, claim: groups, value: devs}]
  - role: ops
    users: [{issuer: corp, claim: sub, value: olga}]
principals:
  - name: coder
    apiKeySha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
    sessionTemplates: ["py-*"]
  - name: toolsonly
    apiKeySha256: 3c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
    tools: ["*"]
quotas: {default: {sessions: 3}, users: {sessions: 1}}
)";

Result<Config> parse(const std::string& templates) {
  return parse_config(kHead + "sessionTemplates:\n" + templates, "test.yaml", "/tmp");
}

TEST(SessionTemplatesConfig, FieldsAreReadOverTheTier) {
  auto c = parse(R"(  - name: py-dev
    description: A workspace
    risk: medium
    limits: {memory: 1Gi, cpus: 1.5, pids: 256, disk: 2Gi, timeout: 45s, idleTimeout: 15m, maxLifetime: 8h}
    network: {allow: ["pypi.internal:443"]}
    dataPaths: [/tmp:/data, /tmp:/scratch:rw]
    env: {PIP_INDEX_URL: "https://pypi.internal/simple"}
    warmPool: 2
    interpreter: {start: ahead, preload: [numpy, matplotlib.pyplot, _private2]}
  - name: py-min
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const SessionTemplate* t = c->find_session_template("py-dev");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->risk, Risk::medium);
  EXPECT_EQ(t->idle_timeout, std::chrono::minutes(15));
  EXPECT_EQ(t->limits.timeout, std::chrono::seconds(45));
  ASSERT_EQ(t->data_paths.size(), 2u);
  EXPECT_EQ(t->data_paths[0].path_inside, "/data");
  EXPECT_FALSE(t->data_paths[0].writable);
  EXPECT_TRUE(t->data_paths[1].writable);
  EXPECT_EQ(t->env.at("PIP_INDEX_URL"), "https://pypi.internal/simple");
  EXPECT_TRUE(t->interpreter.start_ahead);
  EXPECT_EQ(t->interpreter.preload, (std::vector<std::string>{"numpy", "matplotlib.pyplot", "_private2"}));
  EXPECT_FALSE(c->find_session_template("py-min")->interpreter.start_ahead);  // its first cell starts it
  const auto limits = c->limits_for(*t);
  EXPECT_EQ(limits.memory_bytes, 1ULL << 30);
  EXPECT_EQ(limits.pids, 256u);
  EXPECT_EQ(limits.wall_time, std::chrono::hours(8));
  ASSERT_TRUE(limits.cpus);
  EXPECT_DOUBLE_EQ(*limits.cpus, 1.5);
  const auto defaults = c->limits_for(*c->find_session_template("py-min"));
  EXPECT_EQ(defaults.memory_bytes, c->tiers.at(Risk::low).memory_bytes);  // the tier's
  EXPECT_FALSE(defaults.cpus);
  EXPECT_FALSE(defaults.cpu_time);  // the tier's 5 s is a call's budget, not a session's
  EXPECT_EQ(c->quotas.for_principal("coder").sessions, 3u);
  EXPECT_EQ(c->quotas.users.sessions, 1u);
}

TEST(SessionTemplatesConfig, CredentialsAreReadAsForATool) {
  auto c = parse(R"(  - name: py-creds
    credentials:
      - {env: API_KEY, secret: api-key}
      - env: REPORTS_TOKEN
        token: {audience: "https://reports.internal", scopes: [reports:read], ttl: 5m}
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const SessionTemplate* t = c->find_session_template("py-creds");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->credentials.size(), 2u);
  EXPECT_EQ(t->credentials[0].env, "API_KEY");
  EXPECT_EQ(t->credentials[0].provider(), "secret");
  EXPECT_EQ(t->credentials[1].provider(), "token");
  EXPECT_EQ(std::get<TokenCredential>(t->credentials[1].source).ttl, std::chrono::minutes(5));
  EXPECT_EQ(t->credentials[1].where, t->where);
}

TEST(SessionTemplatesConfig, MistakesAreRefusedByName) {
  const std::pair<const char*, const char*> cases[] = {
      {"  - name: Bad Name\n", "name"},
      {"  - name: a\n  - name: a\n", "defined twice"},
      {"  - name: a\n    risk: critical\n", "critical is refused for sessions"},
      {"  - name: a\n    limits: {cpus: 0}\n", "cpus"},
      {"  - name: a\n    limits: {idleTimeout: 2h, maxLifetime: 1h}\n", "idleTimeout is longer than maxLifetime"},
      {"  - name: a\n    limits: {maxLifetime: 200h}\n", "168h"},
      {"  - name: a\n    dataPaths: [/no/such/dir:/data]\n", "does not exist"},
      {"  - name: a\n    dataPaths: [/tmp:relative]\n", "absolute"},
      {"  - name: a\n    dataPaths: [/tmp:/d, /tmp:/d]\n", "bound twice"},
      {"  - name: a\n    image: x\n", "image"},
      {"  - name: a\n    interpreter: {start: ahead}\n", "warmPool is 0"},
      {"  - name: a\n    warmPool: 1\n    interpreter: {start: soon}\n", "expected ahead or firstCell"},
      {"  - name: a\n    interpreter: {preload: [os; rm]}\n", "is not a module name"},
      {"  - name: a\n    interpreter: {preload: [a..b]}\n", "is not a module name"},
      {"  - name: a\n    interpreter: {preload: [1abc]}\n", "is not a module name"},
      {"  - name: a\n    interpreter: {preload: [abc.]}\n", "is not a module name"},
      {"  - name: a\n    interpreter: {preload: [-m]}\n", "is not a module name"},
      {"  - name: a\n    interpreter: {warm: true}\n", "warm"},
      {"  - name: a\n    credentials: [{env: T, secret: s}, {env: T, secret: u}]\n", "two credentials are given as T"},
      {"  - name: a\n    env: {T: x}\n    credentials: [{env: T, secret: s}]\n", "T is also set in env"},
      {"  - name: a\n    credentials: [{env: T}]\n", "expected exactly one of token"},
      // Renewed while the session runs: an injected header (fixed when its proxy starts) and an
      // exchange of the user's token (no request at hand) cannot be.
      {"  - name: a\n    credentials:\n      - {env: T, secret: s}\n      - env: SLACK\n        secret: slack\n"
       "        inject: {host: api.slack.example, header: Authorization, value: \"Bearer ${SLACK}\"}\n",
       "session template a.credentials[1] (SLACK): inject is not supported for sessions"},
      {"  - name: a\n    credentials:\n      - env: UP\n        oauth-exchange: {tokenEndpoint: https://sts.example/token, "
       "audience: https://api.example, clientSecret: sts}\n",
       "session template a.credentials[0] (UP): oauth-exchange is not supported for sessions"},
  };
  for (const auto& [yaml, expected] : cases) {
    auto c = parse(yaml);
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(c.error().message.find(expected), std::string::npos) << yaml << " -> " << c.error().message;
  }
}

class SessionAccess : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = parse("  - {name: py-dev}\n  - {name: py-secret}\n  - {name: py-big, risk: medium}\n  - {name: rust}\n");
    ASSERT_TRUE(c.ok()) << c.error().message;
    config = std::move(*c);
  }
  access::Decision decide(const char* principal, const char* user, Action a, const char* tmpl) const {
    std::optional<access::Actor> agent;
    if (principal) agent = access::Actor{principal};
    std::optional<access::Subject> subject;
    if (user) subject = access::Subject{"corp", user, {{"sub", user}, {"groups", {"devs"}}}};
    return access::decide(config, agent ? &*agent : nullptr, subject ? &*subject : nullptr, a, tmpl);
  }
  Config config;
};

TEST_F(SessionAccess, BothTheAgentAndTheUserMustBeAllowed) {
  EXPECT_TRUE(decide("coder", nullptr, Action::create_session, "py-dev").allowed);
  EXPECT_TRUE(decide("coder", "ann", Action::create_session, "py-dev").allowed);
  auto not_agent = decide("toolsonly", "ann", Action::create_session, "py-dev");  // tools are not templates
  EXPECT_FALSE(not_agent.allowed);
  EXPECT_NE(not_agent.reason.find("sessionTemplates: none"), std::string::npos) << not_agent.reason;
  EXPECT_FALSE(decide("coder", nullptr, Action::create_session, "rust").allowed);
  EXPECT_FALSE(decide("coder", "ann", Action::create_session, "py-secret").allowed);  // deny wins
  auto risky = decide("coder", "ann", Action::create_session, "py-big");  // over the rule's maxRisk
  EXPECT_FALSE(risky.allowed);
  EXPECT_NE(risky.reason.find("maxRisk"), std::string::npos) << risky.reason;
  auto unknown = decide("coder", nullptr, Action::create_session, "nope");
  EXPECT_EQ(unknown.kind, "unknown_template");
  EXPECT_EQ(unknown.http_status(), 404);
  // A rule of invoke does not reach templates, nor create_session tools.
  EXPECT_FALSE(decide("toolsonly", nullptr, Action::create_session, "py-dev").allowed);
}

TEST_F(SessionAccess, ManagingSessionsIsARolesAlone) {
  EXPECT_TRUE(decide(nullptr, "olga", Action::manage_sessions, "").allowed);
  EXPECT_FALSE(decide(nullptr, "ann", Action::manage_sessions, "").allowed);
  EXPECT_FALSE(decide("coder", nullptr, Action::manage_sessions, "").allowed);  // no principal grants it
}

}  // namespace
}  // namespace airlock::policy
