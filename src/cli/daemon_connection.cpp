#include "cli/daemon_connection.hpp"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio.hpp>

#include "common/http_url.hpp"

namespace airlock::cli {

namespace asio = boost::asio;
namespace ssl = asio::ssl;

namespace {

Result<ServerAddress> parse_server(std::string_view url) {
  auto parsed = parse_http_url(url);  // the parser every other URL in Airlock goes through
  if (!parsed || parsed->has_path || parsed->has_query)
    return Error::make("usage", "--server must be http[s]://HOST:PORT");
  return ServerAddress{parsed->tls, parsed->authority(), parsed->host, parsed->port};
}

// An API key (and a subject token) goes into a header: visible ASCII only, so it cannot end
// the header line or the head.
bool header_safe_key(std::string_view key) {
  return std::all_of(key.begin(), key.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

Status check_tls_options(const ServerAddress& server, const ClientOptions& o) {
  if (!server.tls && !(o.cacert.empty() && o.cert.empty() && o.key_file.empty()))
    return Error::make("usage", "--cacert, --cert and --cert-key need an https:// --server");
  if (!o.key_file.empty() && o.cert.empty())
    return Error::make("usage", "--cert-key needs --cert");
  return {};
}

}  // namespace

Result<ServerAddress> checked_server(const ClientOptions& o) {
  auto server = parse_server(o.server);
  if (!server) return server.error();
  if (!header_safe_key(o.key))
    return Error::make("usage", "the API key may only hold visible ASCII characters");
  if (!header_safe_key(o.subject_token))
    return Error::make("usage", "the subject token may only hold visible ASCII characters");
  if (auto s = check_tls_options(*server, o); !s) return s.error();
  return server;
}

// https: the server's chain is verified against --cacert (else the system's CAs), always.
ssl::context client_context(const ClientOptions& o) {
  ssl::context ctx(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  auto load = [](const std::string& option, const std::string& file, auto&& how) {
    boost::system::error_code failed;
    how(failed);
    if (failed) throw TlsSetupError("cannot load " + option + " " + file + ": " + failed.message());
  };
  if (o.cacert.empty())
    ctx.set_default_verify_paths();
  else
    load("--cacert", o.cacert, [&](auto& ec) { ctx.load_verify_file(o.cacert, ec); });
  ctx.set_verify_mode(ssl::verify_peer);
  if (!o.cert.empty()) {
    load("--cert", o.cert, [&](auto& ec) { ctx.use_certificate_chain_file(o.cert, ec); });
    const std::string& key = o.key_file.empty() ? o.cert : o.key_file;
    load("--cert-key", key, [&](auto& ec) { ctx.use_private_key_file(key, ssl::context::pem, ec); });
  }
  return ctx;
}

// The certificate must name the host of --server (a DNS name or the IP address); a DNS name
// also goes into SNI (RFC 6066 has no IP literals).
void expect_server_name(SSL* ssl, const std::string& host) {
  boost::system::error_code not_ip;
  (void)asio::ip::make_address(host, not_ip);
  if (!not_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
    return;
  }
  SSL_set_tlsext_host_name(ssl, host.c_str());
  SSL_set1_host(ssl, host.c_str());
}

// Why the handshake failed, for a human: what verification found, else OpenSSL's reason.
std::string handshake_failure(SSL* ssl, const boost::system::error_code& ec) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK)
    return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  return ec.message();
}

}  // namespace airlock::cli
