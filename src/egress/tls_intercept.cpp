#include "egress/tls_intercept.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <array>

#include "common/hex.hpp"

namespace airlock::egress {
namespace {

namespace ssl = boost::asio::ssl;

using PkeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

// ALPN: the one protocol either side speaks, in wire format.
constexpr unsigned char kAlpnHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

Error tls_error(const std::string& what) {
  unsigned long code = ERR_peek_last_error();
  const char* reason = code ? ERR_reason_error_string(code) : nullptr;
  ERR_clear_error();
  return Error::make("tls", what + (reason ? std::string(": ") + reason : ""));
}

PkeyPtr new_p256_key() {
  return PkeyPtr(EVP_EC_gen("P-256"), EVP_PKEY_free);
}

std::string random_hex(std::size_t bytes) {
  std::array<unsigned char, 32> buf{};
  if (RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1) return {};
  return hex_encode(buf.data(), bytes);
}

// One v3 extension written as in openssl.cnf, in the context of `issuer` signing `subject`.
bool add_extension(X509* subject, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, subject, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) return false;
  bool ok = X509_add_ext(subject, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named CN=`common_name`, with a random serial and the validity
// window; not yet signed nor extended.
X509Ptr new_certificate(EVP_PKEY* key, const std::string& common_name,
                        std::chrono::seconds validity) {
  X509Ptr cert(X509_new(), X509_free);
  std::array<unsigned char, 16> serial{};
  if (!cert || RAND_bytes(serial.data(), serial.size()) != 1) return {nullptr, X509_free};
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial.data(), serial.size(), nullptr);
  bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get())) != nullptr;
  BN_free(bn);
  X509_NAME* name = X509_get_subject_name(cert.get());
  ok = ok && X509_set_version(cert.get(), 2) == 1 &&
       X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300) != nullptr &&
       X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(validity.count())) !=
           nullptr &&
       X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                  reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                  -1, 0) == 1 &&
       X509_set_pubkey(cert.get(), key) == 1;
  if (!ok) return {nullptr, X509_free};
  return cert;
}

template <typename Write>
std::string to_pem(Write write) {
  BioPtr bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || write(bio.get()) != 1) return {};
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

std::string certificate_to_pem(X509* cert) {
  return to_pem([&](BIO* b) { return PEM_write_bio_X509(b, cert); });
}

std::string key_to_pem(EVP_PKEY* key) {
  return to_pem([&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
}

// Picks http/1.1 if the client offers it, else no ALPN at all (never h2).
int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                  unsigned int inlen, void*) {
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kAlpnHttp11, sizeof kAlpnHttp11, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

Status tls12_or_later(SSL_CTX* ctx) {
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
    return tls_error("cannot require TLS 1.2");
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  return {};
}

}  // namespace

struct InterceptCa::Key {
  PkeyPtr key{nullptr, EVP_PKEY_free};
  X509Ptr cert{nullptr, X509_free};
};

InterceptCa::~InterceptCa() = default;

Result<std::unique_ptr<InterceptCa>> InterceptCa::create(std::chrono::seconds validity) {
  std::unique_ptr<InterceptCa> ca(new InterceptCa());
  ca->validity_ = validity;
  ca->key_ = std::make_unique<Key>();
  ca->key_->key = new_p256_key();
  if (!ca->key_->key) return tls_error("cannot generate the per-sandbox CA key");
  std::string suffix = random_hex(8);
  if (suffix.empty()) return tls_error("no randomness for the per-sandbox CA");
  ca->name_ = "Airlock per-sandbox CA " + suffix;
  ca->key_->cert = new_certificate(ca->key_->key.get(), ca->name_, validity);
  X509* cert = ca->key_->cert.get();
  bool ok = cert && X509_set_issuer_name(cert, X509_get_subject_name(cert)) == 1 &&
            add_extension(cert, cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
            add_extension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign") &&
            add_extension(cert, cert, NID_subject_key_identifier, "hash") &&
            X509_sign(cert, ca->key_->key.get(), EVP_sha256()) > 0;
  if (!ok) return tls_error("cannot make the per-sandbox CA certificate");
  ca->pem_ = certificate_to_pem(cert);
  if (ca->pem_.empty()) return tls_error("cannot encode the per-sandbox CA certificate");
  return ca;
}

Result<InterceptCa::Leaf> InterceptCa::issue(const std::string& host) const {
  PkeyPtr key = new_p256_key();
  if (!key) return tls_error("cannot generate a key for " + host);
  X509Ptr cert = new_certificate(key.get(), host, validity_);
  X509* issuer = key_->cert.get();
  const std::string san = "DNS:" + host;  // host is a normalized name: letters, digits, '-', '.'
  bool ok = cert && X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer)) == 1 &&
            add_extension(cert.get(), issuer, NID_basic_constraints, "critical,CA:FALSE") &&
            add_extension(cert.get(), issuer, NID_key_usage, "critical,digitalSignature") &&
            add_extension(cert.get(), issuer, NID_ext_key_usage, "serverAuth") &&
            add_extension(cert.get(), issuer, NID_subject_alt_name, san.c_str()) &&
            add_extension(cert.get(), issuer, NID_authority_key_identifier, "keyid:always") &&
            X509_sign(cert.get(), key_->key.get(), EVP_sha256()) > 0;
  if (!ok) return tls_error("cannot make a certificate for " + host);
  Leaf leaf{certificate_to_pem(cert.get()), key_to_pem(key.get())};
  if (leaf.certificate_pem.empty() || leaf.key_pem.empty())
    return tls_error("cannot encode the certificate for " + host);
  return leaf;
}

Result<std::shared_ptr<ssl::context>> InterceptCa::server_context(const std::string& host) {
  if (auto it = servers_.find(host); it != servers_.end()) return it->second;
  auto leaf = issue(host);
  if (!leaf) return leaf.error();
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  if (auto s = tls12_or_later(context->native_handle()); !s) return s.error();
  boost::system::error_code ec;
  context->use_certificate(boost::asio::buffer(leaf->certificate_pem), ssl::context::pem, ec);
  if (!ec) context->use_private_key(boost::asio::buffer(leaf->key_pem), ssl::context::pem, ec);
  if (ec) return Error::make("tls", "cannot use the certificate for " + host + ": " + ec.message());
  SSL_CTX_set_alpn_select_cb(context->native_handle(), select_http11, nullptr);
  servers_.emplace(host, context);
  return context;
}

Result<std::shared_ptr<ssl::context>> make_upstream_tls_context() {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* ctx = context->native_handle();
  if (auto s = tls12_or_later(ctx); !s) return s.error();
  if (SSL_CTX_set_default_verify_paths(ctx) != 1)
    return tls_error("cannot load the default trust store");
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_set_alpn_protos(ctx, kAlpnHttp11, sizeof kAlpnHttp11) != 0)
    return tls_error("cannot offer ALPN http/1.1");
  return context;
}

Status expect_upstream_host(SSL* ssl, const std::string& host) {
  if (SSL_set_tlsext_host_name(ssl, host.c_str()) != 1 || SSL_set1_host(ssl, host.c_str()) != 1)
    return tls_error("cannot expect the name " + host);
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return {};
}

std::string tls_failure(SSL* ssl, const std::string& fallback) {
  long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK)
    return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  return fallback;
}

}  // namespace airlock::egress
