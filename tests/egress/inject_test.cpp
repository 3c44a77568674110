// Header injection, executed: a real program in a real sandbox talks HTTPS through the egress
// proxy to TLS servers on the host's loopback that record what reached them. The secret must
// reach the one verified upstream, on every request, and nowhere else: not the sandbox, not
// another host, not an impostor, not the records.
//
// The daemon's trust store is the process's SSL_CERT_FILE: each test points it at a test CA
// (made here with the openssl command) before the run, as an operator's environment would.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "egress_fixtures.hpp"
#include "tls_fixtures.hpp"

namespace airlock::egress {
namespace {

using namespace fixtures;
namespace fs = std::filesystem;

const std::string kSecret = "real-secret-123";
const std::string kHost = "api.slack.example";

// How often `needle` occurs in `text`, ignoring case.
int count_ci(std::string text, std::string needle) {
  auto lower = [](std::string& s) { std::transform(s.begin(), s.end(), s.begin(), ::tolower); };
  lower(text);
  lower(needle);
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The CA bundles of runs in the temporary directory (backend/ca_bundle.cpp names them).
std::set<std::string> ca_bundles() {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
    if (e.path().filename().string().rfind("airlock-ca-", 0) == 0) out.insert(e.path().string());
  return out;
}

// The bundles made since `before` are all gone within 5 s: those of tests running beside
// this one (ctest -j) go when their runs end; a bundle this run leaked never does.
bool new_bundles_go_away(const std::set<std::string>& before) {
  for (int i = 0; i < 50; ++i) {
    bool left = false;
    for (const auto& b : ca_bundles()) left |= !before.count(b);
    if (!left) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Nothing the daemon produced about the run may hold the secret.
void expect_no_secret(const Outcome& o) {
  EXPECT_EQ(describe(o).find(kSecret), std::string::npos) << describe(o);  // records, message
  EXPECT_EQ(o.stdout_data.find(kSecret), std::string::npos) << o.stdout_data;
  EXPECT_EQ(o.stderr_data.find(kSecret), std::string::npos) << o.stderr_data;
}

// A run allowed to reach kHost:port, with the secret injected as its Authorization header
// and only a placeholder in its SLACK_TOKEN.
Spec injected(Spec spec, std::uint16_t port) {
  allow(spec, kHost + ":" + std::to_string(port));
  spec.egress.resolve[kHost] = "127.0.0.1";
  spec.egress.inject.push_back({kHost, port, "Authorization", "Bearer " + kSecret});
  spec.env["SLACK_TOKEN"] = "placeholder";
  return spec;
}

class Inject : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // a TLS peer that hangs up must not kill the test
    ::setenv("SSL_CERT_FILE", pki.ca_file().c_str(), 1);  // the daemon's trust store
  }
  TestPki pki;
};

// Through HTTPS_PROXY (CONNECT) with http.client, keep-alive: two requests on one connection,
// the second with two Authorization headers of its own.
const char* kHttpClient = R"(
import http.client, os, ssl, sys
port = int(sys.argv[1])
print("env", os.environ.get("SLACK_TOKEN"))
print("bundle", os.environ.get("SSL_CERT_FILE"), os.path.exists("/etc/airlock/ca-certificates.crt"))
ctx = ssl.create_default_context()
ctx.set_alpn_protocols(["h2", "http/1.1"])
c = http.client.HTTPSConnection("127.0.0.1", 3128, timeout=20, context=ctx)
c.set_tunnel("api.slack.example", port)
token = os.environ["SLACK_TOKEN"]
c.request("POST", "/api/one", body=b"payload one", headers={"Authorization": "Bearer " + token})
r = c.getresponse()
print(r.status, r.read().decode().strip())
c.putrequest("GET", "/api/two")
c.putheader("authorization", "Bearer " + token)
c.putheader("AUTHORIZATION", "Basic " + token)
c.endheaders()
r = c.getresponse()
print(r.status, r.read().decode().strip())
print("alpn", c.sock.selected_alpn_protocol())
print("issuer", dict(x[0] for x in c.sock.getpeercert()["issuer"])["commonName"])
)";

TEST_F(Inject, UpstreamGetsTheValueAndTheSandboxOnlyThePlaceholder) {
  TlsServer upstream(pki.server(kHost, "ca"));
  auto bundles_before = ca_bundles();
  Outcome o =
      run_local(injected(python(kHttpClient, {std::to_string(upstream.port())}), upstream.port()));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  const std::string& out = o.stdout_data;
  EXPECT_NE(out.find("env placeholder\n"), std::string::npos) << out;
  EXPECT_NE(out.find("bundle /etc/airlock/ca-certificates.crt True\n"), std::string::npos) << out;
  EXPECT_NE(out.find("200 hello over tls 1\n200 hello over tls 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("alpn http/1.1\n"), std::string::npos) << out;  // h2 offered, not taken
  EXPECT_NE(out.find("issuer Airlock per-sandbox CA "), std::string::npos) << out;

  auto requests = upstream.requests();
  ASSERT_EQ(requests.size(), 2u) << describe(o);
  EXPECT_EQ(upstream.connections(), 1);  // keep-alive upstream too
  for (const auto& r : requests) {
    EXPECT_NE(r.find("\r\nAuthorization: Bearer " + kSecret + "\r\n"), std::string::npos) << r;
    EXPECT_EQ(count_ci(r, "\r\nauthorization:"), 1) << r;  // the sandbox's own are replaced
    EXPECT_EQ(r.find("placeholder"), std::string::npos) << r;
  }
  EXPECT_EQ(requests[0].rfind("POST /api/one HTTP/1.1\r\n", 0), 0u) << requests[0];
  EXPECT_EQ(requests[0].substr(requests[0].size() - 11), "payload one");

  ASSERT_EQ(o.egress.size(), 1u) << describe(o);
  EXPECT_TRUE(o.egress[0].allowed);
  EXPECT_NE(o.egress[0].rule.find("TLS intercepted to set Authorization"), std::string::npos)
      << o.egress[0].rule;
  EXPECT_GT(o.egress[0].bytes_up, 0u);
  EXPECT_GT(o.egress[0].bytes_down, 0u);
  expect_no_secret(o);
  EXPECT_TRUE(new_bundles_go_away(bundles_before));  // the run's bundle is gone
}

// SOCKS5 (curl's socks5h), the host name in another case with a trailing dot, and a second
// injected header; curl finds the bundle through CURL_CA_BUNDLE.
TEST_F(Inject, Socks5AndAnotherSpellingOfTheHost) {
  TlsServer upstream(pki.server(kHost, "ca"));
  const std::string port = std::to_string(upstream.port());
  Spec spec = curl({"-x", "socks5h://127.0.0.1:3128", "-H", "Authorization: Bearer placeholder",
                    "https://API.Slack.Example.:" + port + "/socks"});
  spec = injected(spec, upstream.port());
  spec.egress.inject.push_back({kHost, upstream.port(), "X-Api-Key", kSecret + "-key"});
  Outcome o = run_local(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "hello over tls 1\n") << describe(o);
  auto requests = upstream.requests();
  ASSERT_EQ(requests.size(), 1u) << describe(o);
  EXPECT_NE(requests[0].find("\r\nAuthorization: Bearer " + kSecret + "\r\n"), std::string::npos)
      << requests[0];
  EXPECT_EQ(count_ci(requests[0], "\r\nauthorization:"), 1) << requests[0];
  EXPECT_NE(requests[0].find("\r\nX-Api-Key: " + kSecret + "-key\r\n"), std::string::npos)
      << requests[0];
  ASSERT_EQ(o.egress.size(), 1u);
  EXPECT_NE(o.egress[0].rule.find("(TLS intercepted to set Authorization, X-Api-Key)"),
            std::string::npos)
      << o.egress[0].rule;
  expect_no_secret(o);
}

// An impostor at the injected host's address: a certificate from a CA the daemon does not
// trust, or a trusted certificate for another name. The sandbox gets a 502; nothing is sent.
TEST_F(Inject, AnUpstreamThatDoesNotVerifyGetsNothing) {
  for (auto [name, ca] : {std::pair<std::string, std::string>{kHost, "rogue"},
                          std::pair<std::string, std::string>{"other.example", "ca"}}) {
    TlsServer impostor(pki.server(name, ca));
    Spec spec = injected(python(R"(
import http.client, os, sys
c = http.client.HTTPSConnection("127.0.0.1", 3128, timeout=20)
c.set_tunnel("api.slack.example", int(sys.argv[1]))
try:
    c.request("GET", "/", headers={"Authorization": "Bearer " + os.environ["SLACK_TOKEN"]})
    r = c.getresponse()
    print(r.status, r.read().decode().strip())
except Exception as e:
    print("failed", type(e).__name__)
)",
                                {std::to_string(impostor.port())}),
                         impostor.port());
    Outcome o = run_local(spec);
    EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
    EXPECT_EQ(o.stdout_data.rfind("502 airlock egress proxy: Bad Gateway: the TLS handshake with " +
                                      kHost + " failed: certificate verify failed",
                                  0),
              0u)
        << name << " signed by " << ca << describe(o);
    EXPECT_GE(impostor.connections(), 1) << "the proxy never tried: the test proves nothing";
    EXPECT_TRUE(impostor.requests().empty()) << impostor.requests().front();
    ASSERT_EQ(o.egress.size(), 1u) << describe(o);
    EXPECT_NE(o.egress[0].rule.find("certificate verify failed"), std::string::npos)
        << o.egress[0].rule;
    expect_no_secret(o);
  }
}

// Another allowed host is a plain tunnel: the sandbox verifies that server's own certificate
// (against the test CA alone, bound inside) and the server sees what the sandbox sent.
TEST_F(Inject, OtherHostsAreRelayedUntouched) {
  TlsServer injected_host(pki.server(kHost, "ca"));
  TlsServer other(pki.server("other.example", "ca"));
  Spec spec = injected(python(R"(
import http.client, os, ssl, sys
ctx = ssl.create_default_context(cafile="/etc/airlock-test/ca.pem")
c = http.client.HTTPSConnection("127.0.0.1", 3128, timeout=20, context=ctx)
c.set_tunnel("other.example", int(sys.argv[1]))
c.request("GET", "/", headers={"Authorization": "Bearer " + os.environ["SLACK_TOKEN"]})
print(c.getresponse().read().decode().strip())
print("issuer", dict(x[0] for x in c.sock.getpeercert()["issuer"])["commonName"])
)",
                              {std::to_string(other.port())}),
                       injected_host.port());
  allow(spec, "other.example:" + std::to_string(other.port()));
  spec.egress.resolve["other.example"] = "127.0.0.1";
  spec.binds.push_back({pki.ca_file(), "/etc/airlock-test/ca.pem", false});
  Outcome o = run_local(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "hello over tls 1\nissuer Airlock test CA\n") << describe(o);
  auto requests = other.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_NE(requests[0].find("\r\nAuthorization: Bearer placeholder\r\n"), std::string::npos)
      << requests[0];
  EXPECT_EQ(injected_host.connections(), 0);
  ASSERT_EQ(o.egress.size(), 1u);
  EXPECT_EQ(o.egress[0].rule, "other.example:" + std::to_string(other.port()));
  expect_no_secret(o);
}

// Domain fronting: a front end shared by many hosts (a CDN) routes by Host or by an absolute
// URI, so a request naming another host could carry the value there. Host is set to the
// injected host and a target that is not a path is refused.
TEST_F(Inject, TheValueIsForTheInjectedHostOnly) {
  TlsServer upstream(pki.server(kHost, "ca"));
  const char* client = R"(
import http.client, sys
def connection():
    c = http.client.HTTPSConnection("127.0.0.1", 3128, timeout=20)
    c.set_tunnel("api.slack.example", int(sys.argv[1]))
    return c
c = connection()
c.putrequest("GET", "/fronted", skip_host=True)
c.putheader("Host", "attacker.example")
c.endheaders()
r = c.getresponse()
print(r.status, r.read().decode().strip())
c = connection()
c.request("GET", "https://attacker.example/absolute")
r = c.getresponse()
print(r.status, r.read().decode().strip())
)";
  const std::string port = std::to_string(upstream.port());
  Outcome o = run_local(injected(python(client, {port}), upstream.port()));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data,
            "200 hello over tls 1\n400 airlock egress proxy: Bad Request: a request to an "
            "injected host must have a path as target.\n")
      << describe(o);
  auto requests = upstream.requests();
  ASSERT_EQ(requests.size(), 1u) << describe(o);
  EXPECT_EQ(requests[0].rfind("GET /fronted HTTP/1.1\r\n", 0), 0u) << requests[0];
  EXPECT_NE(requests[0].find("\r\nHost: " + kHost + ":" + port + "\r\n"), std::string::npos)
      << requests[0];
  EXPECT_EQ(requests[0].find("attacker"), std::string::npos) << requests[0];
  expect_no_secret(o);
}

// The proxy's limits hold inside the interception: a request head over max_header_bytes
// never reaches the upstream, and a body past the byte budget is cut off.
TEST_F(Inject, LimitsHoldOnInterceptedConnections) {
  TlsServer upstream(pki.server(kHost, "ca"));
  const char* client = R"(
import http.client, os, sys
c = http.client.HTTPSConnection("127.0.0.1", 3128, timeout=20)
c.set_tunnel("api.slack.example", int(sys.argv[1]))
try:
    if sys.argv[2] == "head":
        c.request("GET", "/", headers={"X-Big": "a" * 20000})
    else:
        c.request("POST", "/", body=b"b" * 200000)
    print(c.getresponse().status)
except Exception as e:
    print("failed", type(e).__name__)
)";
  const std::string port = std::to_string(upstream.port());
  Spec head = injected(python(client, {port, "head"}), upstream.port());
  Outcome o = run_local(head);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data.rfind("failed", 0), 0u) << describe(o);
  ASSERT_EQ(o.egress.size(), 1u) << describe(o);
  EXPECT_NE(o.egress[0].rule.find("a request head is larger than 16384 bytes"), std::string::npos)
      << o.egress[0].rule;
  EXPECT_TRUE(upstream.requests().empty());

  Spec body = injected(python(client, {port, "body"}), upstream.port());
  body.egress.limits.max_bytes_up = 64 * 1024;
  o = run_local(body);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data.rfind("failed", 0), 0u) << describe(o);
  ASSERT_EQ(o.egress.size(), 1u) << describe(o);
  EXPECT_NE(o.egress[0].rule.find("byte budget (up) is spent"), std::string::npos)
      << o.egress[0].rule;
  EXPECT_TRUE(upstream.requests().empty());  // the body never arrived whole
  EXPECT_LE(o.egress[0].bytes_up, 64u * 1024 + 64 * 1024) << describe(o);
  expect_no_secret(o);
}

// An injection is not an allow rule: without one the host is denied like any other.
TEST_F(Inject, TheInjectedHostStillNeedsAnAllowRule) {
  TlsServer upstream(pki.server(kHost, "ca"));
  Spec spec = injected(curl({"-o", "/dev/null", "-w", "%{http_code}",
                             "https://api.slack.example:" + std::to_string(upstream.port()) + "/"}),
                       upstream.port());
  spec.egress.allow = {*parse_allow_rule("unrelated.example:443")};
  Outcome o = run_local(spec);
  EXPECT_EQ(upstream.connections(), 0) << describe(o);
  ASSERT_EQ(o.egress.size(), 1u) << describe(o);
  EXPECT_FALSE(o.egress[0].allowed);
  EXPECT_NE(o.stderr_data.find("403"), std::string::npos) << describe(o);
  expect_no_secret(o);
}

}  // namespace
}  // namespace airlock::egress
