// Issue #19, the web console's server side: sessions, cookies, CSRF and origin checks, the
// headers of every console response, what /console/api forwards (and what it does not), the
// hostile values the server hands the page, and GET /v1/invocations with its RBAC. Each test
// runs the attack (a forged request, a stolen or expired session, a cross-site post) and
// asserts it was refused.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <regex>

#include "audit/log_reader.hpp"
#include "common/digest.hpp"
#include "creds/sealing_key.hpp"
#include "policy/config.hpp"
#include "server/approvals/approval_store.hpp"
#include "server/approvals/approvals.hpp"
#include "server/console/console.hpp"
#include "server/console/console_session.hpp"
#include "server/invocations/invocation_store.hpp"
#include "server/invocations/invocations_api.hpp"
#include "server/http/http_server.hpp"
#include "server_test_support.hpp"
#include "tls_test_support.hpp"

namespace airlock::server::test {
namespace {

using nlohmann::json;
using namespace airlock::server::console;

// ---- sessions, cookies, checks (no daemon) ---------------------------------------------

struct FakeClock {
  MemorySessionStore::Clock::time_point t = MemorySessionStore::Clock::time_point(std::chrono::hours(1));
  std::function<MemorySessionStore::Clock::time_point()> fn() {
    return [this] { return t; };
  }
};

TEST(ConsoleSession, IdsAre256BitRandomHexAndDistinct) {
  MemorySessionStore store;
  auto a = store.create("key-a"), b = store.create("key-a");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(std::regex_match(a->id, std::regex("[0-9a-f]{64}")));
  EXPECT_TRUE(std::regex_match(a->csrf, std::regex("[0-9a-f]{64}")));
  EXPECT_NE(a->id, b->id);
  EXPECT_NE(a->csrf, b->csrf);
  EXPECT_NE(a->id, a->csrf);
  EXPECT_EQ((*store.use(a->id))->credential, "key-a");
}

TEST(ConsoleSession, UnknownGuessedAndEmptyIdsNameNoSession) {
  MemorySessionStore store;
  auto a = store.create("key");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(*store.use(""));
  EXPECT_FALSE(*store.use(std::string(64, '0')));
  EXPECT_FALSE(*store.use(a->csrf));  // the CSRF token is not a session id
  EXPECT_FALSE(*store.use(sha256_hex(a->id)));  // nor is the key it is stored under
  EXPECT_FALSE(*store.use(a->id.substr(0, 63)));
}

TEST(ConsoleSession, IdleAndAbsoluteExpiry) {
  FakeClock clock;
  SessionOptions options;
  options.idle = std::chrono::seconds(60);
  options.absolute = std::chrono::seconds(300);
  MemorySessionStore store(options, clock.fn());
  auto a = store.create("key");
  ASSERT_TRUE(a.ok());
  for (int i = 0; i < 4; ++i) {  // used every 50 s: alive until the absolute limit
    clock.t += std::chrono::seconds(50);
    EXPECT_TRUE(*store.use(a->id)) << i;
  }
  clock.t += std::chrono::seconds(100);  // 300 s after sign-in
  EXPECT_FALSE(*store.use(a->id));
  auto b = store.create("key");
  clock.t += std::chrono::seconds(60);  // idle for the whole idle time
  EXPECT_FALSE(*store.use(b->id));
  EXPECT_EQ(*store.size(), 0u);
}

TEST(ConsoleSession, SignOutEndsTheSessionAndAFullStoreEndsTheLeastRecentlyUsed) {
  FakeClock clock;
  SessionOptions options;
  options.max_sessions = 2;
  MemorySessionStore store(options, clock.fn());
  auto a = store.create("a");
  clock.t += std::chrono::seconds(1);
  auto b = store.create("b");
  clock.t += std::chrono::seconds(1);
  ASSERT_TRUE(*store.use(a->id));  // a is now the more recently used
  auto c = store.create("c");
  EXPECT_TRUE(*store.use(a->id));
  EXPECT_FALSE(*store.use(b->id));
  EXPECT_TRUE(*store.use(c->id));
  ASSERT_TRUE(store.remove(c->id));
  EXPECT_FALSE(*store.use(c->id));
}

TEST(ConsoleCookie, HttpOnlyStrictPathAndSecureOnlyOverTls) {
  const std::string plain = session_cookie("abc", false), tls = session_cookie("abc", true);
  EXPECT_EQ(plain, "airlock_console=abc; Path=/console; HttpOnly; SameSite=Strict");
  EXPECT_EQ(tls, plain + "; Secure");
  EXPECT_NE(cleared_cookie(true).find("Max-Age=0"), std::string::npos);
  EXPECT_NE(cleared_cookie(true).find("; Secure"), std::string::npos);
}

TEST(ConsoleCookie, OnlyTheExactNameIsRead) {
  EXPECT_EQ(cookie_value("a=1; airlock_console=xyz; b=2", kCookieName), "xyz");
  EXPECT_EQ(cookie_value("xairlock_console=evil; airlock_consolex=evil", kCookieName), "");
  EXPECT_EQ(cookie_value("", kCookieName), "");
  EXPECT_EQ(cookie_value("airlock_console", kCookieName), "");
}

HttpRequest post(std::map<std::string, std::string> headers) {
  HttpRequest r;
  r.method = "POST";
  r.target = "/console/api/approvals/x/approve";
  r.headers = std::move(headers);
  return r;
}

TEST(ConsoleCsrf, CrossSiteRequestsAreRefused) {
  const std::map<std::string, std::string> good = {
      {"host", "airlock.corp:8750"}, {"origin", "http://airlock.corp:8750"}, {"content-type", "application/json"}};
  EXPECT_FALSE(cross_site_refusal(post(good), false));
  auto with = [&](const std::string& k, const std::string& v) {
    auto h = good;
    if (v.empty()) h.erase(k);
    else h[k] = v;
    return post(h);
  };
  EXPECT_TRUE(cross_site_refusal(with("origin", "https://evil.example"), false));
  EXPECT_TRUE(cross_site_refusal(with("origin", "null"), false));
  EXPECT_TRUE(cross_site_refusal(with("origin", "http://airlock.corp:8750.evil.example"), false));
  EXPECT_TRUE(cross_site_refusal(post(good), true)) << "over TLS the origin is https://";
  EXPECT_TRUE(cross_site_refusal(with("content-type", "text/plain"), false)) << "a form can post text/plain";
  EXPECT_TRUE(cross_site_refusal(with("content-type", "application/x-www-form-urlencoded"), false));
  auto fetch_site = with("sec-fetch-site", "cross-site");
  EXPECT_TRUE(cross_site_refusal(fetch_site, false));
  auto same_site = with("sec-fetch-site", "same-site");
  EXPECT_TRUE(cross_site_refusal(same_site, false)) << "a sibling subdomain is not the console";
  auto neither = good;
  neither.erase("origin");
  EXPECT_TRUE(cross_site_refusal(post(neither), false));
  neither["sec-fetch-site"] = "same-origin";
  EXPECT_FALSE(cross_site_refusal(post(neither), false));
}

TEST(ConsoleCsrf, TheSessionsTokenIsRequired) {
  Session s{"key", std::string(64, 'a')};
  std::map<std::string, std::string> h = {
      {"host", "h"}, {"origin", "http://h"}, {"content-type", "application/json"}};
  auto refused = csrf_refusal(post(h), s, false);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("missing"), std::string::npos);
  h[kCsrfHeader] = std::string(64, 'b');
  EXPECT_TRUE(csrf_refusal(post(h), s, false));
  h[kCsrfHeader] = std::string(63, 'a');
  EXPECT_TRUE(csrf_refusal(post(h), s, false));
  h[kCsrfHeader] = s.csrf;
  EXPECT_FALSE(csrf_refusal(post(h), s, false));
  h["origin"] = "http://evil";
  EXPECT_TRUE(csrf_refusal(post(h), s, false)) << "the token alone is not enough";
}

TEST(ConsoleRouting, OnlyTheConsolesEndpointsAreForwarded) {
  auto fwd = [](const std::string& method, const std::string& target) {
    std::vector<std::string> parts;
    std::string path = target.substr(0, target.find('?'));
    for (std::size_t i = 1, j; i <= path.size(); i = j + 1) {
      j = path.find('/', i);
      if (j == std::string::npos) j = path.size();
      if (j > i) parts.push_back(path.substr(i, j - i));
    }
    return forwarded_target(method, parts, target);
  };
  EXPECT_EQ(fwd("GET", "/console/api/approvals"), "/v1/approvals");
  EXPECT_EQ(fwd("POST", "/console/api/approvals/apr-1/approve"), "/v1/approvals/apr-1/approve");
  EXPECT_EQ(fwd("GET", "/console/api/invocations?tool=a&user=b"), "/v1/invocations?tool=a&user=b");
  EXPECT_EQ(fwd("GET", "/console/api/audit/proof/3"), "/v1/audit/proof/3");
  EXPECT_EQ(fwd("GET", "/console/api/audit/verify"), "/v1/audit/verify");
  EXPECT_EQ(fwd("POST", "/console/api/tools/echo/invoke"), "") << "the console never invokes a tool";
  EXPECT_EQ(fwd("POST", "/console/api/token"), "");
  EXPECT_EQ(fwd("POST", "/console/api/token/revoke"), "");
  EXPECT_EQ(fwd("GET", "/console/api/mcp"), "");
  EXPECT_EQ(fwd("POST", "/console/api/invocations"), "");
  EXPECT_EQ(fwd("POST", "/console/api/approvals/apr-1/whatever"), "");
}

TEST(ConsoleAssets, ThePageHasNoInlineScriptStyleOrHandlers) {
  for (const char* name : {"index.html", "console.js", "console.css"}) ASSERT_TRUE(find_asset(name)) << name;
  const std::string html = find_asset("index.html")->body;
  // Every <script> has a src and nothing inside; no style attributes or elements; no on*=.
  EXPECT_FALSE(std::regex_search(html, std::regex("<script(?![^>]*\\bsrc=)", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(html, std::regex("<script[^>]*>[^<]+</script>", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(html, std::regex("\\son[a-z]+\\s*=", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(html, std::regex("\\sstyle\\s*=|<style", std::regex::icase)));
  EXPECT_FALSE(std::regex_search(html, std::regex("(https?:)?//[a-z0-9.-]+\\.[a-z]{2,}", std::regex::icase)))
      << "no external request";
  const std::string js = find_asset("console.js")->body;
  for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"})
    EXPECT_EQ(js.find(sink), std::string::npos) << sink;
}

// The preview is made when the approval is stored: listed from the store, a 900 KB argument
// of three-byte characters is cut on a character, within the bound, with its whole size.
TEST(ConsolePreview, ListsCarryABoundedPreviewCutOnACharacterAndTheFullHash) {
  Workspace ws;
  auto store = ApprovalStore::open(ws.dir() + "/state.db", creds::SealingKey::from_bytes({9, 9, 9}));
  ASSERT_TRUE(store.ok()) << store.error().message;
  ApprovalRecord r;
  r.id = "apr-1";
  r.invocation_id = "inv-1";
  r.tool = "danger";
  r.arguments_sha256 = std::string(64, 'f');
  r.approvers_required = 1;
  r.expires_ms = 4102444800000;  // 2100
  std::string big;
  for (int i = 0; i < 300000; ++i) big += "\xE2\x80\xAE";  // U+202E, three bytes each
  r.invocation = {{"arguments", {{"text", big}}}};
  ASSERT_TRUE((*store)->create(r).ok());
  const auto pending = (*store)->pending();
  ASSERT_EQ(pending.size(), 1u);
  const json listed = approval_json(pending[0], false);
  const std::string preview = listed["arguments_preview"];
  EXPECT_LE(preview.size(), kArgumentsPreviewBytes);
  EXPECT_GT(preview.size(), kArgumentsPreviewBytes - 3);  // only the cut character is left out
  EXPECT_FALSE(json(preview).dump().empty());  // valid UTF-8, or dump() would throw
  EXPECT_EQ(listed["arguments_bytes"].get<std::size_t>(), json(r.invocation["arguments"]).dump().size());
  EXPECT_EQ(listed["arguments_sha256"], r.arguments_sha256);
  EXPECT_FALSE(listed.contains("arguments"));
  auto loaded = (*store)->get("apr-1");
  ASSERT_TRUE(loaded);
  EXPECT_EQ(approval_json(*loaded, false)["arguments_preview"], preview);  // the same from get()
  EXPECT_TRUE(approval_json(*loaded, true).contains("arguments"));
}

TEST(InvocationQuery, FiltersParseAndMalformedOnesAreRefused) {
  pipeline::Caller agent;
  agent.actor = pipeline::Actor{"agent"};
  auto q = invocation_query("/v1/invocations?tool=a%20b&user=alice&agent=x&status=pending_approval"
                            "&since=2026-12-02T01:00:00Z&until=2026-12-02T01:00:00.5Z&limit=7",
                            agent, false);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->tool, "a b");
  EXPECT_EQ(q->status, "suspended");
  EXPECT_EQ(*q->since_ms, 1796173200000);
  EXPECT_EQ(*q->until_ms, 1796173200500);
  EXPECT_EQ(q->limit, 7);
  ASSERT_TRUE(q->owner);
  EXPECT_EQ(q->owner->principal, "agent");
  EXPECT_FALSE(invocation_query("/v1/invocations", agent, true)->owner);
  for (const char* bad : {"?status=hacked", "?limit=0", "?limit=501", "?limit=1e3", "?since=yesterday",
                          "?since=2026-12-02T01:00:00+02:00", "?tool=%zz", "?tool=%4"})
    EXPECT_FALSE(invocation_query(std::string("/v1/invocations") + bad, agent, false).ok()) << bad;
}

// A state.db from before the history: its rows get their owner from their stored response,
// so the owner filter (what a caller may see) holds for them too.
TEST(InvocationHistory, RowsFromBeforeTheOwnerColumnsAreFilteredByOwner) {
  Workspace ws;
  const std::string path = ws.dir() + "/old-state.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* old_schema =
      "CREATE TABLE invocations (id TEXT PRIMARY KEY, tool TEXT NOT NULL, status TEXT NOT NULL, response TEXT,"
      " started_ms INTEGER, finished_ms INTEGER);"
      "INSERT INTO invocations VALUES ('inv-a', 'echo', 'ok', '{\"principal\":\"agent\",\"subject\":null}', 1000, 2000);"
      "INSERT INTO invocations VALUES ('inv-b', 'echo', 'ok',"
      " '{\"principal\":\"\",\"subject\":{\"issuer\":\"corp\",\"sub\":\"alice\"}}', 3000, 4000);";
  ASSERT_EQ(sqlite3_exec(db, old_schema, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  auto store = InvocationStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  InvocationStore::Query q;
  q.owner = InvocationStore::Owner{"agent", "", ""};
  auto agents = (*store)->list(q);
  ASSERT_TRUE(agents.ok());
  ASSERT_EQ(agents->size(), 1u);
  EXPECT_EQ((*agents)[0]["id"], "inv-a");
  q.owner = InvocationStore::Owner{"", "corp", "alice"};
  auto alices = (*store)->list(q);
  ASSERT_EQ(alices->size(), 1u);
  EXPECT_EQ((*alices)[0]["id"], "inv-b");
  q.owner = InvocationStore::Owner{"", "other-issuer", "alice"};
  EXPECT_EQ((*store)->list(q)->size(), 0u) << "the same sub at another issuer is another person";
  q.owner.reset();
  EXPECT_EQ((*store)->list(q)->size(), 2u);
  store->reset();
  EXPECT_TRUE(InvocationStore::open(path).ok()) << "opening it again (the columns exist) works";
}

// ---- "Sign in with <issuer>" (identity.console): the checks of its own ------------------
// The flow itself runs against a real OpenID provider in console_browser_test.cpp.

TEST(ConsoleOidc, PkceIsS256OfAFresh256BitVerifier) {
  // RFC 7636 appendix B.
  EXPECT_EQ(s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  auto a = make_pkce(), b = make_pkce();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(std::regex_match(a->verifier, std::regex("[A-Za-z0-9_-]{43}")));
  EXPECT_NE(a->verifier, b->verifier);
  EXPECT_EQ(a->challenge, s256_challenge(a->verifier));
}

TEST(ConsoleOidc, AnIdTokenMustCarryThisSignInsNonceAndNameTheClient) {
  const json good = {{"sub", "bob"}, {"aud", "airlock-console"}, {"nonce", "n-1"}};
  EXPECT_FALSE(id_token_problem(good, "n-1", "airlock-console"));
  auto without = [&](const char* key) {
    json c = good;
    c.erase(key);
    return c;
  };
  auto with = [&](const char* key, json value) {
    json c = good;
    c[key] = std::move(value);
    return c;
  };
  EXPECT_NE(id_token_problem(without("nonce"), "n-1", "airlock-console").value_or("").find("no nonce"), std::string::npos);
  EXPECT_NE(id_token_problem(with("nonce", "n-2"), "n-1", "airlock-console").value_or("").find("not this sign-in's"),
            std::string::npos);
  EXPECT_TRUE(id_token_problem(with("nonce", 1), "n-1", "airlock-console"));
  EXPECT_NE(id_token_problem(with("aud", "airlock"), "n-1", "airlock-console").value_or("").find("aud"), std::string::npos)
      << "an ID token for another client (a token of the issuer's other audience)";
  EXPECT_TRUE(id_token_problem(without("aud"), "n-1", "airlock-console"));
  const json several = json::array({"airlock-console", "other-app"});
  EXPECT_NE(id_token_problem(with("aud", several), "n-1", "airlock-console").value_or("").find("azp"), std::string::npos);
  json with_azp = with("aud", several);
  with_azp["azp"] = "airlock-console";
  EXPECT_FALSE(id_token_problem(with_azp, "n-1", "airlock-console"));
}

TEST(ConsoleOidc, TheDiscoveryDocumentMustBeTheConfiguredIssuersAndOfferS256) {
  const json doc = {{"issuer", "https://idp.example"},
                    {"authorization_endpoint", "https://idp.example/auth"},
                    {"token_endpoint", "https://idp.example/token"},
                    {"code_challenge_methods_supported", {"S256"}}};
  auto ok = provider_endpoints(doc.dump(), "https://idp.example");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->authorization, "https://idp.example/auth");
  EXPECT_EQ(ok->token, "https://idp.example/token");
  auto mixed_up = provider_endpoints(doc.dump(), "https://other-idp.example");
  ASSERT_FALSE(mixed_up.ok());
  EXPECT_NE(mixed_up.error().message.find("not the configured issuer"), std::string::npos);
  json plain = doc;
  plain["code_challenge_methods_supported"] = {"plain"};
  EXPECT_FALSE(provider_endpoints(plain.dump(), "https://idp.example").ok()) << "PKCE plain only: refused";
  json no_token = doc;
  no_token.erase("token_endpoint");
  EXPECT_FALSE(provider_endpoints(no_token.dump(), "https://idp.example").ok());
  json javascript = doc;
  javascript["authorization_endpoint"] = "javascript:alert(1)";
  EXPECT_FALSE(provider_endpoints(javascript.dump(), "https://idp.example").ok());
  EXPECT_FALSE(provider_endpoints("not json", "https://idp.example").ok());
}

TEST(ConsoleOidc, TheConfigurationIsCheckedWhenItIsLoaded) {
  auto parse = [](const std::string& console) {
    return policy::parse_config(
        "apiVersion: airlock.dev/v1\nkind: AirlockConfig\nidentity:\n  issuers:\n"
        "    - {name: corp, issuer: \"https://idp.corp.example\", audiences: [airlock, airlock-console], "
        "jwksUrl: \"https://idp.corp.example/jwks\"}\n  console: " + console +
            "\ntools:\n  - name: t\n    runtime: {type: command, command: [/bin/cat]}\n",
        "test.yaml", "/tmp");
  };
  auto good = parse("{issuer: corp, clientId: airlock-console, redirectUri: \"https://airlock.corp/console/oidc/callback\"}");
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->identity.console->discovery_url, "https://idp.corp.example/.well-known/openid-configuration");
  auto foreign = parse("{issuer: corp, clientId: someone-else, redirectUri: \"https://airlock.corp/console/oidc/callback\"}");
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().message.find("is not one of issuer corp's audiences"), std::string::npos) << foreign.error().message;
  auto unknown = parse("{issuer: nobody, clientId: airlock, redirectUri: \"https://airlock.corp/console/oidc/callback\"}");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("no issuer named 'nobody'"), std::string::npos);
  auto elsewhere = parse("{issuer: corp, clientId: airlock, redirectUri: \"https://evil.example/steal\"}");
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_NE(elsewhere.error().message.find("/console/oidc/callback"), std::string::npos);
}

// ---- against a daemon ------------------------------------------------------------------

class ConsoleDaemon : public ::testing::Test {
 protected:
  void SetUp() override { daemon_ = std::make_unique<RunningDaemon>(ws_); }
  std::uint16_t port() const { return daemon_->port; }

  // A browser's same-origin request: Origin and Sec-Fetch-Site as Chromium sends them.
  std::map<std::string, std::string> browser(const std::string& cookie, const std::string& csrf = "") const {
    std::map<std::string, std::string> h = {{"Origin", "http://127.0.0.1"}, {"Sec-Fetch-Site", "same-origin"}};
    if (!cookie.empty()) h["Cookie"] = std::string(kCookieName) + "=" + cookie;
    if (!csrf.empty()) h["X-Airlock-CSRF"] = csrf;
    return h;
  }

  struct SignedIn {
    std::string cookie, csrf;
  };
  SignedIn sign_in(const std::string& key = kKey) {
    auto r = http_with(port(), "POST", "/console/session", json{{"credential", key}}.dump(), "", browser(""));
    EXPECT_EQ(r.status, 200) << r.body;
    const std::string set = r.headers["set-cookie"];
    const auto eq = set.find('='), semi = set.find(';');
    return {set.substr(eq + 1, semi - eq - 1), r.json().value("csrf", "")};
  }

  Workspace ws_;
  std::unique_ptr<RunningDaemon> daemon_;
};

void expect_security_headers(const Reply& r, const std::string& what) {
  EXPECT_EQ(r.headers.at("content-security-policy"), kContentSecurityPolicy) << what;
  EXPECT_EQ(r.headers.at("x-content-type-options"), "nosniff") << what;
  EXPECT_EQ(r.headers.at("referrer-policy"), "no-referrer") << what;
  EXPECT_EQ(r.headers.at("cache-control"), "no-store") << what;
}

TEST_F(ConsoleDaemon, EveryConsoleResponseCarriesTheSecurityHeaders) {
  const std::pair<const char*, const char*> pages[] = {{"/console/", "text/html"},
                                                       {"/console/console.js", "text/javascript"},
                                                       {"/console/console.css", "text/css"}};
  for (const auto& [path, type] : pages) {
    auto r = http(port(), "GET", path, "", "");
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.headers["content-type"].rfind(type, 0), 0u) << path;
    expect_security_headers(r, path);
  }
  auto redirect = http(port(), "GET", "/console", "", "");
  EXPECT_EQ(redirect.status, 308);
  EXPECT_EQ(redirect.headers["location"], "/console/");
  for (const char* path : {"/console/api/approvals", "/console/session", "/console/nope.js", "/console/api/nope"}) {
    auto r = http(port(), "GET", path, "", "");
    EXPECT_EQ(r.status, path == std::string("/console/nope.js") ? 404 : 401) << path;
    expect_security_headers(r, path);
  }
}

TEST_F(ConsoleDaemon, SignInAuthenticatesLikeTheApiAndNeverReturnsTheCredential) {
  auto bad = http_with(port(), "POST", "/console/session", json{{"credential", "not-a-key"}}.dump(), "", browser(""));
  EXPECT_EQ(bad.status, 401);
  EXPECT_EQ(bad.headers.count("set-cookie"), 0u);
  auto cross = http_with(port(), "POST", "/console/session", json{{"credential", kKey}}.dump(), "",
                         {{"Origin", "https://evil.example"}});
  EXPECT_EQ(cross.status, 403) << "login CSRF: a foreign page may not sign the browser in";
  EXPECT_EQ(cross.headers.count("set-cookie"), 0u);
  auto good = http_with(port(), "POST", "/console/session", json{{"credential", kKey}}.dump(), "", browser(""));
  ASSERT_EQ(good.status, 200) << good.body;
  EXPECT_EQ(good.body.find(kKey), std::string::npos);
  const std::string set = good.headers["set-cookie"];
  EXPECT_TRUE(std::regex_match(set, std::regex("airlock_console=[0-9a-f]{64}; Path=/console; HttpOnly; SameSite=Strict")))
      << set;
  EXPECT_EQ(good.json()["principal"], "agent");
  EXPECT_EQ(daemon_->daemon->api().console().sessions().size().value(), 1u);
}

TEST_F(ConsoleDaemon, ARefusedSignInIsAuditedAsAFailedAuthentication) {
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(http_with(port(), "POST", "/console/session", json{{"credential", "guess-" + std::to_string(i)}}.dump(),
                        "", browser(""))
                  .status,
              401);
  daemon_->daemon->shutdown();  // what is pending is written at the latest now
  auto reader = audit::LogReader::open(ws_.audit_path());
  ASSERT_TRUE(reader.ok());
  std::uint64_t counted = 0;
  (void)reader->for_each_record(0, [&](std::uint64_t, std::string_view text) {
    auto record = json::parse(text, nullptr, false);
    const json fields = record.contains("fields") ? record["fields"] : record;
    if (fields.value("schema", "") == "airlock.failed_auth/v1" && fields["tools"].contains(kSignInLabel))
      counted += fields["tools"][kSignInLabel].get<std::uint64_t>();
    return true;
  });
  EXPECT_EQ(counted, 3u);
}

TEST_F(ConsoleDaemon, SigningInAgainEndsTheSessionTheBrowserHad) {
  auto first = sign_in();
  auto again = http_with(port(), "POST", "/console/session", json{{"credential", kOtherKey}}.dump(), "",
                         browser(first.cookie));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.headers["set-cookie"].find(first.cookie), std::string::npos) << "a fresh id, never the old one";
  EXPECT_EQ(http_with(port(), "GET", "/console/session", "", "", browser(first.cookie)).status, 401);
  EXPECT_EQ(daemon_->daemon->api().console().sessions().size().value(), 1u);
}

TEST_F(ConsoleDaemon, ApiCallsNeedTheSessionAndStateChangesItsCsrfTokenAndOrigin) {
  auto s = sign_in();
  auto listed = http_with(port(), "GET", "/console/api/approvals", "", "", browser(s.cookie));
  EXPECT_EQ(listed.status, 200) << listed.body;
  EXPECT_TRUE(listed.json()["approvals"].is_array());
  // The API key as a bearer does not stand in for the session.
  EXPECT_EQ(http(port(), "GET", "/console/api/approvals", "", kKey).status, 401);
  const std::string target = "/console/api/approvals/apr-x/approve";
  const std::string body = json{{"reason", "r"}}.dump();
  auto no_token = http_with(port(), "POST", target, body, "", browser(s.cookie));
  EXPECT_EQ(no_token.status, 403);
  EXPECT_EQ(no_token.json()["error"]["kind"], "csrf");
  auto foreign = browser(s.cookie, s.csrf);
  foreign["Origin"] = "http://evil.example";
  foreign["Sec-Fetch-Site"] = "cross-site";
  EXPECT_EQ(http_with(port(), "POST", target, body, "", foreign).status, 403);
  // With both, the request reaches the approval service (no such approval: its 404).
  auto through = http_with(port(), "POST", target, body, "", browser(s.cookie, s.csrf));
  EXPECT_EQ(through.status, 404) << through.body;
  EXPECT_NE(through.body.find("no approval apr-x"), std::string::npos);
  // The console does not invoke tools, even with everything right.
  auto invoke = http_with(port(), "POST", "/console/api/tools/echo/invoke", json{{"arguments", json::object()}}.dump(),
                          "", browser(s.cookie, s.csrf));
  EXPECT_EQ(invoke.status, 404);
}

TEST_F(ConsoleDaemon, WithoutIdentityConsoleThereIsNoOpenIdSignIn) {
  EXPECT_EQ(http_with(port(), "GET", "/console/oidc", "", "", browser("")).status, 404);
  EXPECT_EQ(http_with(port(), "POST", "/console/oidc/login", "{}", "", browser("")).status, 404);
  EXPECT_EQ(http_with(port(), "GET", "/console/oidc/callback?state=x&code=y", "", "", browser("")).status, 404);
}

TEST_F(ConsoleDaemon, SignOutKillsTheSessionForGood) {
  auto s = sign_in();
  auto no_csrf = http_with(port(), "DELETE", "/console/session", "{}", "", browser(s.cookie));
  EXPECT_EQ(no_csrf.status, 403) << "a forged sign-out is refused too";
  auto out = http_with(port(), "DELETE", "/console/session", "{}", "", browser(s.cookie, s.csrf));
  EXPECT_EQ(out.status, 200) << out.body;
  EXPECT_NE(out.headers["set-cookie"].find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(http_with(port(), "GET", "/console/api/approvals", "", "", browser(s.cookie)).status, 401)
      << "a copied cookie is worthless after sign-out";
}

TEST_F(ConsoleDaemon, TheCredentialIsAuthenticatedAgainOnEveryRequest) {
  auto s = sign_in(kOtherKey);
  EXPECT_EQ(http_with(port(), "GET", "/console/api/invocations", "", "", browser(s.cookie)).status, 200);
  // The key's principal is removed from the config: the next request is refused.
  std::string yaml = ws_.config_text();
  const auto at = yaml.find("  - name: other\n");
  ASSERT_NE(at, std::string::npos);
  yaml.erase(at, yaml.find("tiers:") - at);
  ws_.write_config(yaml);
  auto reloaded = daemon_->daemon->reload(ws_.config());
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message;
  auto after = http_with(port(), "GET", "/console/api/invocations", "", "", browser(s.cookie));
  EXPECT_EQ(after.status, 401) << after.body;
  EXPECT_EQ(http_with(port(), "GET", "/console/session", "", "", browser(s.cookie)).status, 401);
}

TEST_F(ConsoleDaemon, HostileValuesReachThePageOnlyAsJsonNeverAsMarkup) {
  const std::string hostile = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>javascript:alert(3)\u202Egnp.exe";
  auto r = invoke(port(), "echo", {{"text", hostile}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string id = r.json()["id"];
  auto s = sign_in();
  const std::vector<std::string> paths = {"/console/api/invocations/" + id, "/console/api/invocations?tool=echo",
                                          "/console/api/invocations/%3Cscript%3Ealert(1)%3C%2Fscript%3E"};
  for (const auto& path : paths) {
    auto got = http_with(port(), "GET", path, "", "", browser(s.cookie));
    EXPECT_EQ(got.headers["content-type"], "application/json") << path;
    expect_security_headers(got, path);
  }
  auto one = http_with(port(), "GET", "/console/api/invocations/" + id, "", "", browser(s.cookie));
  EXPECT_EQ(one.json()["output"]["echo"]["text"], hostile) << "kept exactly, for the page to show as text";
  // Markup in a path is answered as JSON with the page's headers, not reflected as HTML.
  auto reflected = http_with(port(), "GET", "/console/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", "", "", browser(""));
  EXPECT_EQ(reflected.status, 404);
  EXPECT_EQ(reflected.headers["content-type"], "application/json");
}

TEST_F(ConsoleDaemon, TheHistoryListShowsOwnInvocationsUnlessOneReadsAll) {
  ASSERT_EQ(invoke(port(), "echo", {{"n", 1}}).status, 200);
  ASSERT_EQ(invoke(port(), "echo", {{"n", 2}}, kOtherKey).status, 200);
  ASSERT_EQ(invoke(port(), "crash", json::object()).status, 200);
  auto mine = http(port(), "GET", "/v1/invocations", "", kKey).json();
  ASSERT_TRUE(mine["invocations"].is_array()) << mine.dump();
  EXPECT_EQ(mine["scope"], "own");
  EXPECT_EQ(mine["invocations"].size(), 2u);
  for (const auto& row : mine["invocations"]) EXPECT_EQ(row["actor"]["principal"], "agent");
  auto other = http(port(), "GET", "/v1/invocations", "", kOtherKey).json();
  ASSERT_EQ(other["invocations"].size(), 1u);
  EXPECT_EQ(other["invocations"][0]["tool"], "echo");
  // Another's filter does not widen what one sees.
  EXPECT_EQ(http(port(), "GET", "/v1/invocations?agent=agent", "", kOtherKey).json()["invocations"].size(), 0u);
  EXPECT_EQ(http(port(), "GET", "/v1/invocations?tool=crash", "", kKey).json()["invocations"].size(), 1u);
  auto errors = http(port(), "GET", "/v1/invocations?status=error", "", kKey).json();
  ASSERT_EQ(errors["invocations"].size(), 1u);
  EXPECT_EQ(errors["invocations"][0]["tool"], "crash");
  EXPECT_EQ(http(port(), "GET", "/v1/invocations?since=2999-01-01T00:00:00Z", "", kKey).json()["invocations"].size(), 0u);
  EXPECT_EQ(http(port(), "GET", "/v1/invocations?limit=1", "", kKey).json()["invocations"].size(), 1u);
  EXPECT_EQ(http(port(), "GET", "/v1/invocations?status=nope", "", kKey).status, 400);
  EXPECT_EQ(http(port(), "GET", "/v1/invocations", "", "bad-key").status, 401);
}

// Over TLS the cookie is Secure and the origin a state change must come from is https://.
TEST(ConsoleTls, TheCookieIsSecureAndTheOriginHttps) {
  TestPki pki;
  Workspace ws("server: {listen: 127.0.0.1:0, maxConcurrentInvocations: 4, drainTimeout: 20s, tls: {certFile: " +
               pki.file("server.pem") + ", keyFile: " + pki.file("server.key") + "}}");
  RunningDaemon daemon(ws);
  auto sign_in = [&](const std::string& origin) {
    const std::string body = json{{"credential", kKey}}.dump();
    return handle_raw_request(daemon.daemon->api(),
                              "POST /console/session HTTP/1.1\r\nHost: localhost:8750\r\nOrigin: " + origin +
                                  "\r\nContent-Type: application/json\r\nContent-Length: " +
                                  std::to_string(body.size()) + "\r\n\r\n" + body,
                              1 << 20);
  };
  const std::string plain = sign_in("http://localhost:8750");
  EXPECT_NE(plain.find(" 403 "), std::string::npos) << "an http:// page may not post to the TLS console";
  const std::string tls = sign_in("https://localhost:8750");
  EXPECT_NE(tls.find(" 200 "), std::string::npos) << tls.substr(0, 400);
  EXPECT_TRUE(std::regex_search(tls, std::regex("Set-Cookie: airlock_console=[0-9a-f]{64}; Path=/console; HttpOnly; "
                                                "SameSite=Strict; Secure\r\n")))
      << tls.substr(0, 600);
}

}  // namespace
}  // namespace airlock::server::test
