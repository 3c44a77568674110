#include "server/http/tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace airlock::server {
namespace {

namespace ssl = boost::asio::ssl;

Error tls_error(const std::string& what) {
  std::string detail = openssl_error_text();
  return Error::make("tls", what + (detail.empty() ? "" : ": " + detail));
}

// Protocol versions, suites and options; no files.
Status harden(SSL_CTX* ctx) {
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
    return tls_error("cannot set TLS 1.2 as the minimum");
  if (SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1)
    return tls_error("cannot set the cipher list");
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 |
                               SSL_OP_NO_TLSv1_1);
  return {};
}

Status load_identity(SSL_CTX* ctx, const policy::TlsConfig& tls) {
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1)
    return tls_error("server.tls.certFile: cannot load " + tls.cert_file);
  if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    return tls_error("server.tls.keyFile: cannot load " + tls.key_file);
  if (SSL_CTX_check_private_key(ctx) != 1)
    return tls_error("server.tls.keyFile: " + tls.key_file + " is not the key of " + tls.cert_file);
  return {};
}

// A certificate is asked for and, if one comes, verified against the CA file; a client
// without one still gets in (and must then authenticate with an API key).
Status load_client_ca(SSL_CTX* ctx, const std::string& ca_file) {
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1)
    return tls_error("server.tls.clientCAFile: cannot load " + ca_file);
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca_file.c_str());
  if (!names) return tls_error("server.tls.clientCAFile: no CA certificate in " + ca_file);
  SSL_CTX_set_client_CA_list(ctx, names);  // the names offered to the client; takes them
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // Without a session id context, a resumed session with a client certificate is refused.
  static const unsigned char kContext[] = "airlock";
  SSL_CTX_set_session_id_context(ctx, kContext, sizeof kContext - 1);
  return {};
}

}  // namespace

std::string openssl_error_text() {
  unsigned long code = 0, last = 0;
  while ((code = ERR_get_error()) != 0) last = code;
  if (last == 0) return "";
  const char* lib = ERR_lib_error_string(last);
  const char* reason = ERR_reason_error_string(last);
  if (!reason) return "OpenSSL error " + std::to_string(last);
  return lib ? std::string(lib) + ": " + reason : std::string(reason);
}

Result<std::shared_ptr<ssl::context>> make_server_tls_context(const policy::TlsConfig& tls) {
  ERR_clear_error();
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  if (auto s = harden(ctx); !s) return s.error();
  if (auto s = load_identity(ctx, tls); !s) return s.error();
  if (!tls.client_ca_file.empty())
    if (auto s = load_client_ca(ctx, tls.client_ca_file); !s) return s.error();
  return context;
}

}  // namespace airlock::server
