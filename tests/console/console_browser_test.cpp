// Issue #19, the web console in a real browser: a daemon in this process (a real issuer for
// the users, critical tools behind the approval gate, run in the local sandbox), and
// tests/console/console_test.mjs driving Debian's headless chromium through chromedriver
// (selenium-webdriver from tests/console/node_modules, npm ci). The script signs in, sees a
// pending approval appear without reloading, approves it, sees the result, reads the
// history and the audit log, feeds the page hostile values and checks a user without
// `approve` gets no button and is refused by the API anyway. Screenshots go to the build dir.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "identity/signer.hpp"
#include "server_test_support.hpp"
#include "websocket_client.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;

constexpr const char* kCorp = "https://idp.corp.example";

const char* kServer = "server: {listen: 127.0.0.1:0, maxBodyBytes: 4Mi, maxConcurrentInvocations: 4, queueLength: 64, drainTimeout: 20s}";

const char* kSections = R"(identity:
  issuers:
    - {name: corp, issuer: https://idp.corp.example, audiences: [airlock], jwksFile: corp-jwks.json}
roles:
  - name: requester
    rules:
      - {effect: allow, actions: [invoke], tools: ["danger*"]}
  - name: approver
    rules:
      - {effect: allow, actions: [approve], tools: ["danger*"]}
      - {effect: allow, actions: [read_all_invocations, read_audit], tools: ["*"]}
bindings:
  - role: requester
    users: [{issuer: corp, claim: groups, value: staff}]
  - role: approver
    users: [{issuer: corp, claim: groups, value: approvers}]
)";

const char* kTools = R"(
  - name: danger
    description: 'Pays an invoice. <img src=x onerror="window.__pwned=1">'
    inputSchema:
      type: object
      properties:
        amount: {type: integer, description: 'In cents <script>window.__pwned=2</script>'}
        payee: {type: string, description: Who is paid}
      additionalProperties: true
    risk: critical
    approval: {approvers: 1, timeout: 10m}
    runtime: {type: python, file: tools/echo.py}
    network: {allow: ["payments.example.com:443"]}
    credentials:
      - env: PAYMENTS_TOKEN
        token: {audience: https://payments.example.com, scopes: ["payments:write"], ttl: 2m})";

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

TEST(ConsoleBrowser, SignInApproveHistoryAuditAndHostileValues) {
  ASSERT_TRUE(std::filesystem::exists(AIRLOCK_CONSOLE_NODE_MODULES "/selenium-webdriver"))
      << "npm ci in tests/console (scripts/install-deps.sh)";
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromedriver")) << "apt-get install chromium chromium-driver";
  Workspace ws(kServer, kTools);
  auto corp = identity::TokenSigner::load_or_create(ws.dir() + "/corp.key");
  ASSERT_TRUE(corp.ok());
  std::ofstream(ws.dir() + "/corp-jwks.json") << corp->jwks().dump();
  std::string yaml = ws.config_text();
  yaml.replace(yaml.find("tiers:\n"), 7, std::string(kSections) + "tiers:\n  critical: {backend: local, output: 4Mi}\n");
  ws.write_config(yaml);
  RunningDaemon daemon(ws);
  auto token = [&](const std::string& sub, json groups) {
    json claims = {{"iss", kCorp}, {"aud", "airlock"}, {"sub", sub}, {"iat", now_s()},
                   {"exp", now_s() + 900}, {"jti", "jti-" + sub}, {"groups", groups}};
    return *corp->issue(claims);
  };
  const std::string shots = std::string(AIRLOCK_CONSOLE_SCREENSHOTS);
  std::filesystem::create_directories(shots);
  const std::string command =
      "CONSOLE_URL=" + shell_quote("http://127.0.0.1:" + std::to_string(daemon.port)) +
      " AGENT_KEY=" + shell_quote(kKey) + " TOKEN_ALICE=" + shell_quote(token("alice", {"staff"})) +
      " TOKEN_BOB=" + shell_quote(token("bob", {"staff", "approvers"})) +
      " TOKEN_MALLORY=" + shell_quote(token("mallory", {"staff"})) + " SCREENSHOT_DIR=" + shell_quote(shots) +
      " NODE_PATH=" + shell_quote(AIRLOCK_CONSOLE_NODE_MODULES) + " " + shell_quote(AIRLOCK_NODE) + " " +
      shell_quote(AIRLOCK_CONSOLE_SCRIPT) + " 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "the browser test was killed";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "tests/console/console_test.mjs failed (its output is above)";
}

// Issue #35: a session's terminal in the console. Alice (a user calling directly) owns a
// session; in chromium she types into its terminal, ^C stops what runs in its foreground and
// the shell's exit is shown (console_terminal_test.mjs); Bob gets no terminal on it. And the
// attack a browser cannot stage itself: a page of another origin opening the terminal with
// Alice's console cookie (cross-site WebSocket hijacking) is refused by its Origin.
TEST(ConsoleBrowser, ASessionsTerminalForItsOwnerAndNeverCrossSite) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromedriver")) << "apt-get install chromium chromium-driver";
  Workspace ws(kServer, kTools);
  auto corp = identity::TokenSigner::load_or_create(ws.dir() + "/corp.key");
  ASSERT_TRUE(corp.ok());
  std::ofstream(ws.dir() + "/corp-jwks.json") << corp->jwks().dump();
  std::string sections = kSections;
  sections.replace(sections.find("      - {effect: allow, actions: [invoke], tools: [\"danger*\"]}\n"), 0,
                   "      - {effect: allow, actions: [create_session], tools: [\"danger*\"], sessionTemplates: [dev]}\n");
  std::string yaml = ws.config_text();
  yaml.replace(yaml.find("tiers:\n"), 7, sections + "tiers:\n  critical: {backend: local, output: 4Mi}\n");
  ws.write_config(yaml + "\nsessionTemplates:\n  - name: dev\n    limits: {idleTimeout: 1h, maxLifetime: 2h}\n");
  RunningDaemon daemon(ws);
  auto token = [&](const std::string& sub) {
    json claims = {{"iss", kCorp}, {"aud", "airlock"}, {"sub", sub}, {"iat", now_s()},
                   {"exp", now_s() + 900}, {"jti", "jti-" + sub}, {"groups", {"staff"}}};
    return *corp->issue(claims);
  };
  const std::string alice = token("alice");
  auto created = http(daemon.port, "POST", "/v1/sessions", json{{"template", "dev"}}.dump(), alice);
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.json()["id"];

  auto signed_in = http_with(daemon.port, "POST", "/console/session", json{{"credential", alice}}.dump(), "",
                             {{"Origin", "http://127.0.0.1"}, {"Sec-Fetch-Site", "same-origin"}});
  ASSERT_EQ(signed_in.status, 200) << signed_in.body;
  const std::string cookie = signed_in.headers["set-cookie"].substr(0, signed_in.headers["set-cookie"].find(';'));
  const std::string path = "/console/api/sessions/" + id + "/terminal";
  for (const char* origin : {"http://evil.example", "null", "http://127.0.0.1:1"}) {
    int status = 0;
    EXPECT_FALSE(WebSocketClient::open(daemon.port, path, {{"Cookie", cookie}, {"Origin", origin}}, &status)) << origin;
    EXPECT_EQ(status, 403) << origin;
  }
  int status = 0;
  EXPECT_FALSE(WebSocketClient::open(daemon.port, path, {{"Cookie", cookie}}, &status));  // no Origin at all
  EXPECT_EQ(status, 403);
  // (The browser's own Origin is http://127.0.0.1:PORT, its Host the same: the script's
  // terminal shows the same-origin case.)

  const std::string shots = std::string(AIRLOCK_CONSOLE_SCREENSHOTS);
  std::filesystem::create_directories(shots);
  const std::string command =
      "CONSOLE_URL=" + shell_quote("http://127.0.0.1:" + std::to_string(daemon.port)) +
      " TOKEN_ALICE=" + shell_quote(alice) + " TOKEN_BOB=" + shell_quote(token("bob")) +
      " SESSION_ID=" + shell_quote(id) + " SCREENSHOT_DIR=" + shell_quote(shots) +
      " NODE_PATH=" + shell_quote(AIRLOCK_CONSOLE_NODE_MODULES) + " " + shell_quote(AIRLOCK_NODE) + " " +
      shell_quote(AIRLOCK_CONSOLE_TERMINAL_SCRIPT) + " 2>&1";
  const int ran = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(ran)) << "the terminal test was killed";
  EXPECT_EQ(WEXITSTATUS(ran), 0) << "tests/console/console_terminal_test.mjs failed (its output is above)";
}

// A loopback port free now (the OpenID provider and the console must know each other's
// before either starts: the client's redirect URI and the issuer are configured).
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return 0;
  ::close(fd);
  return ntohs(a.sin_port);
}

const char* kOidcTools = R"(
  - name: danger
    description: Pays an invoice.
    risk: critical
    approval: {approvers: 1, timeout: 10m}
    runtime: {type: python, file: tools/echo.py})";

// Issue #33: "Sign in with <issuer>" against a real OpenID provider (oidc-provider, started by
// tests/console/console_oidc_test.mjs on loopback): the authorization code flow with PKCE end
// to end in chromium, and the attacks on it (console_oidc_test.mjs says which).
TEST(ConsoleBrowser, SignInWithARealOpenIdProvider) {
  ASSERT_TRUE(std::filesystem::exists(AIRLOCK_CONSOLE_NODE_MODULES "/oidc-provider"))
      << "npm ci in tests/console (scripts/install-deps.sh)";
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromedriver")) << "apt-get install chromium chromium-driver";
  const std::uint16_t idp = free_port(), console = free_port();
  ASSERT_TRUE(idp && console && idp != console);
  const std::string issuer = "http://127.0.0.1:" + std::to_string(idp);
  const std::string base = "http://127.0.0.1:" + std::to_string(console);
  const std::string server = "server: {listen: 127.0.0.1:" + std::to_string(console) +
                             ", maxConcurrentInvocations: 4, queueLength: 64, drainTimeout: 20s}";
  Workspace ws(server.c_str(), kOidcTools);
  std::ofstream(ws.dir() + "/client-secret") << "console-client-secret-for-tests\n";
  const std::string sections = "identity:\n  issuers:\n    - {name: corp-oidc, issuer: \"" + issuer +
                               "\", audiences: [airlock-console], jwksUrl: \"" + issuer + "/jwks\"}\n" +
                               "  console: {issuer: corp-oidc, clientId: airlock-console, redirectUri: \"" + base +
                               "/console/oidc/callback\", clientSecretFile: client-secret}\n" +
                               "roles:\n  - name: approver\n    rules:\n"
                               "      - {effect: allow, actions: [approve], tools: [\"danger\"]}\n"
                               "      - {effect: allow, actions: [read_all_invocations], tools: [\"*\"]}\n"
                               "bindings:\n  - role: approver\n    users: [{issuer: corp-oidc, claim: sub, value: bob}]\n";
  std::string yaml = ws.config_text();
  yaml.replace(yaml.find("tiers:\n"), 7, sections + "tiers:\n  critical: {backend: local, output: 4Mi}\n");
  ws.write_config(yaml);
  RunningDaemon daemon(ws);
  ASSERT_EQ(daemon.port, console);
  const std::string shots = std::string(AIRLOCK_CONSOLE_SCREENSHOTS);
  std::filesystem::create_directories(shots);
  const std::string command =
      "CONSOLE_URL=" + shell_quote(base) + " PROVIDER_PORT=" + std::to_string(idp) +
      " CLIENT_SECRET=console-client-secret-for-tests AGENT_KEY=" + shell_quote(kKey) +
      " SCREENSHOT_DIR=" + shell_quote(shots) + " NODE_PATH=" + shell_quote(AIRLOCK_CONSOLE_NODE_MODULES) + " " +
      shell_quote(AIRLOCK_NODE) + " " + shell_quote(AIRLOCK_CONSOLE_OIDC_SCRIPT) + " 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "the OpenID sign-in test was killed";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "tests/console/console_oidc_test.mjs failed (its output is above)";
}

}  // namespace
}  // namespace airlock::server::test
