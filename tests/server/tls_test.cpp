// Issue #15: the API over TLS, with client certificates. Real TLS on real sockets, with a PKI
// made for the run: what a client without the right protocol, suite or certificate gets (no
// HTTP answer), and what a verified certificate becomes (HttpRequest::client_certificate).
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <future>
#include <memory>

#include "server/http/http_server.hpp"
#include "server/http/peer_certificate.hpp"
#include "server_test_support.hpp"
#include "tls_test_support.hpp"

namespace airlock::server::test {
namespace {

const TestPki& pki() {
  static const TestPki instance;
  return instance;
}

std::string tls_server_yaml(bool client_ca) {
  const auto& p = pki();
  return "server: {listen: 127.0.0.1:0, readTimeout: 1s, maxConcurrentInvocations: 4, "
         "drainTimeout: 20s, tls: {certFile: " +
         p.file("server.pem") + ", keyFile: " + p.file("server.key") +
         (client_ca ? ", clientCAFile: " + p.file("ca.pem") : std::string()) + "}}";
}

// The test config, over TLS with the test CA for clients, and a principal by certificate.
class TlsWorkspace : public Workspace {
 public:
  TlsWorkspace() : Workspace(tls_server_yaml(true)) {
    std::string text = config_text();
    const std::string marker = "principals:\n";
    text.replace(text.find(marker), marker.size(),
                 marker + "  - name: research\n    certificate: {uriSAN: \"" + kClientUri +
                     "\"}\n    tools: [echo]\n");
    write_config(text);
  }
};

TlsClientOptions trusting() {
  TlsClientOptions o;
  o.ca_file = pki().file("ca.pem");
  return o;
}

TlsClientOptions with_certificate(const std::string& name) {
  TlsClientOptions o = trusting();
  o.cert_file = pki().file(name + ".pem");
  o.key_file = pki().file(name + ".key");
  return o;
}

class TlsDaemon : public ::testing::Test {
 protected:
  TlsWorkspace ws;
  RunningDaemon d{ws};

  // The daemon's count of handshakes that failed (airlock_rejected_total), read over TLS.
  int failed_handshakes() {
    auto reply = tls_request(d.port, trusting(), "GET", "/metrics");
    const std::string series = "airlock_rejected_total{reason=\"tls_handshake_failed\"} ";
    auto at = reply.body.find(series);
    return at == std::string::npos ? 0 : std::atoi(reply.body.c_str() + at + series.size());
  }
};

TEST_F(TlsDaemon, HealthzAndInvokeWithAnApiKeyOverTls) {
  auto health = tls_request(d.port, trusting(), "GET", "/healthz");
  ASSERT_EQ(health.error, "");
  EXPECT_EQ(health.status, 200);
  // No client certificate: the CA asks for one, but an API key still authenticates.
  auto call = tls_request(d.port, trusting(), "POST", "/v1/tools/echo/invoke",
                          R"({"arguments": {"n": 3}})", kKey);
  ASSERT_EQ(call.error, "");
  ASSERT_EQ(call.status, 200) << call.body;
  EXPECT_NE(call.body.find("\"status\":\"ok\""), std::string::npos) << call.body;
}

TEST_F(TlsDaemon, PlainHttpToTheTlsPortGetsNoHttpAnswer) {
  EXPECT_EQ(http(d.port, "GET", "/healthz").status, 0);
  auto raw = raw_exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 20);
  EXPECT_TRUE(raw.closed);
  EXPECT_FALSE(raw.received.starts_with("HTTP/")) << raw.received;
  EXPECT_GE(failed_handshakes(), 1);
}

TEST_F(TlsDaemon, Tls11ClientIsRefused) {
  // A client able to speak TLS 1.0 and 1.1 (level 0 allows them), and nothing newer.
  TlsClientOptions old = trusting();
  old.security_level = 0;
  old.tls12_ciphers = "DEFAULT:@SECLEVEL=0";
  old.min_version = TLS1_VERSION;
  old.max_version = TLS1_1_VERSION;
  auto refused = tls_request(d.port, old, "GET", "/healthz");
  EXPECT_EQ(refused.status, 0);
  EXPECT_NE(refused.error.find("alert protocol version"), std::string::npos) << refused.error;
  old.max_version = TLS1_2_VERSION;  // the same client, allowed TLS 1.2, gets in
  EXPECT_EQ(tls_request(d.port, old, "GET", "/healthz").status, 200);
}

TEST_F(TlsDaemon, ClientOfferingOnlyCbcSuitesIsRefused) {
  TlsClientOptions cbc = trusting();
  cbc.max_version = TLS1_2_VERSION;
  cbc.tls12_ciphers = "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA";
  auto refused = tls_request(d.port, cbc, "GET", "/healthz");
  EXPECT_EQ(refused.status, 0);
  EXPECT_NE(refused.error.find("handshake failure"), std::string::npos) << refused.error;
  cbc.tls12_ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256";  // the same client with an AEAD suite
  EXPECT_EQ(tls_request(d.port, cbc, "GET", "/healthz").status, 200);
}

TEST_F(TlsDaemon, ClientCertificateFromAnotherCaIsRefusedAtTheHandshake) {
  // The same subject and URI SAN as the CA's client certificate: only the issuer differs.
  auto refused = tls_request(d.port, with_certificate("stranger"), "GET", "/healthz");
  EXPECT_EQ(refused.status, 0);
  EXPECT_NE(refused.error.find("unknown ca"), std::string::npos) << refused.error;
  EXPECT_GE(failed_handshakes(), 1);
  auto accepted = tls_request(d.port, with_certificate("client"), "GET", "/healthz");
  EXPECT_EQ(accepted.status, 200) << accepted.error;
}

TEST_F(TlsDaemon, SilentClientIsDroppedAfterTheReadTimeout) {
  // readTimeout is 1 s; the client waits up to 20 s for the server to close.
  auto silent = raw_exchange(d.port, "", 20);
  EXPECT_TRUE(silent.closed) << "the server kept a connection that never sent a ClientHello";
  EXPECT_EQ(silent.received, "");
  // A TLS record header announcing a ClientHello that never comes.
  auto stalled = raw_exchange(d.port, std::string("\x16\x03\x01\x00\xc8", 5), 20);
  EXPECT_TRUE(stalled.closed) << "the server kept a connection stalled in the handshake";
}

TEST_F(TlsDaemon, ReloadCannotChangeTls) {
  auto plain = ws.config();
  plain.server.tls.reset();
  auto report = d.daemon->reload(std::move(plain));
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message.find("only a restart can change server.tls"), std::string::npos)
      << report.error().message;
}

// What the handler is given: the verified certificate, and whom it names.
class TlsServer : public ::testing::Test {
 protected:
  void SetUp() override {
    config = ws.config();
    HttpServerOptions options;
    options.port = 0;
    options.tls = config.server.tls;
    server = std::make_unique<HttpServer>(
        [this](const HttpRequest& request, std::function<void(HttpResponse)> reply) {
          nlohmann::json seen = {{"certificate", request.client_certificate.has_value()}};
          if (request.client_certificate) {
            seen["subject"] = request.client_certificate->subject;
            seen["uris"] = request.client_certificate->uri_sans;
            auto* p = find_principal_by_certificate(config, *request.client_certificate);
            seen["principal"] = p ? p->name : "";
          }
          reply(json_response(200, seen));
        },
        options);
    ASSERT_TRUE(server->bind().ok());
    server->serve();
  }
  void TearDown() override { server->stop(); }

  nlohmann::json seen(const TlsClientOptions& client) {
    auto reply = tls_request(server->port(), client, "GET", "/anything");
    EXPECT_EQ(reply.status, 200) << reply.error;
    return nlohmann::json::parse(reply.body, nullptr, false);
  }

  TlsWorkspace ws;
  policy::Config config;
  std::unique_ptr<HttpServer> server;
};

TEST_F(TlsServer, VerifiedClientCertificateReachesTheHandler) {
  auto seen_with = seen(with_certificate("client"));
  EXPECT_EQ(seen_with["certificate"], true);
  EXPECT_EQ(seen_with["subject"], kClientSubject);
  EXPECT_EQ(seen_with["uris"], nlohmann::json::array({kClientUri}));
  EXPECT_EQ(seen_with["principal"], "research");
}

TEST_F(TlsServer, NoCertificateNoClientCertificate) {
  EXPECT_EQ(seen(trusting())["certificate"], false);
}

TEST(TlsCheck, AKeyThatIsNotTheCertificatesIsRefused) {
  policy::TlsConfig tls{pki().file("server.pem"), pki().file("client.key"), "", "", ""};
  auto s = check_tls(tls);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("server.tls.keyFile: cannot load " + pki().file("client.key")),
            std::string::npos);
  EXPECT_NE(s.error().message.find("key values mismatch"), std::string::npos) << s.error().message;
  tls.key_file = pki().file("server.key");
  EXPECT_TRUE(check_tls(tls).ok());
}

TEST(TlsCheck, AFileThatIsNotPemIsRefused) {
  policy::TlsConfig tls{pki().file("ca.key"), pki().file("server.key"), "", "", ""};  // a key, no cert
  auto s = check_tls(tls);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("server.tls.certFile: cannot load"), std::string::npos)
      << s.error().message;
}

policy::Principal by_certificate(std::string name, std::string subject, std::string uri) {
  policy::Principal p;
  p.name = std::move(name);
  p.certificate = policy::CertificateMatch{std::move(subject), std::move(uri)};
  return p;
}

TEST(PeerCertificate, FindPrincipalBySubjectOrUriSanExactly) {
  policy::Config c;
  c.principals.emplace_back().name = "keyed";  // by key only
  c.principals.back().api_key_sha256 = "ab";
  c.principals.push_back(by_certificate("by-subject", "CN=a,O=agents", ""));
  c.principals.push_back(by_certificate("by-uri", "", "spiffe://example.org/b"));
  auto name = [&](const PeerCertificate& cert) {
    auto* p = find_principal_by_certificate(c, cert);
    return p ? p->name : "(none)";
  };
  EXPECT_EQ(name({"CN=a,O=agents", {}}), "by-subject");
  EXPECT_EQ(name({"CN=x", {"spiffe://example.org/x", "spiffe://example.org/b"}}), "by-uri");
  EXPECT_EQ(name({"CN=a,O=agents2", {}}), "(none)");                  // exact, not a prefix
  EXPECT_EQ(name({"cn=a,o=agents", {}}), "(none)");                   // not case-folded
  EXPECT_EQ(name({"", {"spiffe://example.org/b/c"}}), "(none)");      // not a path prefix
  EXPECT_EQ(name({"", {}}), "(none)");  // an empty subject matches no principal
  // One principal by subject, another by URI SAN: ambiguous, nobody.
  EXPECT_EQ(name({"CN=a,O=agents", {"spiffe://example.org/b"}}), "(none)");
}

TEST(ClearTextWarning, OnlyForANonLoopbackAddressWithoutTls) {
  policy::ServerConfig s;
  s.listen_host = "0.0.0.0";
  EXPECT_EQ(cleartext_warning(s, 8750),
            "airlock: warning: listening on 0.0.0.0:8750 without TLS: API keys and tool data "
            "cross the network in clear; set server.tls");
  s.listen_host = "::";
  EXPECT_NE(cleartext_warning(s, 1).find("listening on [::]:1 without TLS"), std::string::npos);
  for (const char* loopback : {"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"}) {
    s.listen_host = loopback;
    EXPECT_EQ(cleartext_warning(s, 8750), "") << loopback;
  }
  s.listen_host = "192.0.2.1";
  s.tls = policy::TlsConfig{"c.pem", "k.pem", "", "", ""};
  EXPECT_EQ(cleartext_warning(s, 8750), "");
}

}  // namespace
}  // namespace airlock::server::test
