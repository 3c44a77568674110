// The per-run CA of header injection: what it is (a P-256, pathlen-0, short-lived CA under a
// random name) and what it signs (a leaf for one name, for server authentication only).
#include "egress/tls_intercept.hpp"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

namespace airlock::egress {
namespace {

using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;

X509Ptr parse(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
}

std::string common_name(X509* cert) {
  char buf[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf);
  return buf;
}

// Whether `leaf` verifies for TLS server use against `ca` alone.
int verify(X509* leaf, X509* ca) {
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  X509_STORE_add_cert(store.get(), ca);
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      X509_STORE_CTX_free);
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
  if (X509_verify_cert(ctx.get()) == 1) return X509_V_OK;
  return X509_STORE_CTX_get_error(ctx.get());
}

TEST(InterceptCa, IsAShortLivedP256CaThatSignsNoOtherCa) {
  auto ca = InterceptCa::create();
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  auto cert = parse((*ca)->certificate_pem());
  ASSERT_TRUE(cert);
  EXPECT_EQ(common_name(cert.get()).rfind("Airlock per-sandbox CA ", 0), 0u);
  EXPECT_EQ(common_name(cert.get()), (*ca)->name());
  EXPECT_EQ(X509_check_ca(cert.get()), 1);
  EXPECT_EQ(X509_get_pathlen(cert.get()), 0);
  EVP_PKEY* key = X509_get0_pubkey(cert.get());
  EXPECT_EQ(EVP_PKEY_get_base_id(key), EVP_PKEY_EC);
  EXPECT_EQ(EVP_PKEY_get_bits(key), 256);
  // Valid now, and not for more than its validity from now.
  std::time_t later = std::time(nullptr) + kInterceptCaValidity.count() * 3600 + 60;
  EXPECT_LT(X509_cmp_current_time(X509_get0_notBefore(cert.get())), 0);
  EXPECT_GT(X509_cmp_current_time(X509_get0_notAfter(cert.get())), 0);
  EXPECT_LT(X509_cmp_time(X509_get0_notAfter(cert.get()), &later), 0);
  // No private key in what leaves the object.
  EXPECT_EQ((*ca)->certificate_pem().find("PRIVATE KEY"), std::string::npos);
  // Each run has its own.
  auto other = InterceptCa::create();
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*other)->name(), (*ca)->name());
}

TEST(InterceptCa, LeavesAreForTheirNameAndThisCaOnly) {
  auto ca = InterceptCa::create();
  auto other = InterceptCa::create();
  ASSERT_TRUE(ca.ok() && other.ok());
  auto leaf = (*ca)->issue("api.slack.example");
  ASSERT_TRUE(leaf.ok()) << leaf.error().message;
  auto cert = parse(leaf->certificate_pem);
  auto ca_cert = parse((*ca)->certificate_pem());
  auto other_cert = parse((*other)->certificate_pem());
  ASSERT_TRUE(cert && ca_cert && other_cert);
  EXPECT_EQ(verify(cert.get(), ca_cert.get()), X509_V_OK);
  EXPECT_NE(verify(cert.get(), other_cert.get()), X509_V_OK);
  EXPECT_EQ(X509_check_host(cert.get(), "api.slack.example", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_host(cert.get(), "other.example", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_host(cert.get(), "x.api.slack.example", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);  // CA:FALSE: it signs nothing that verifies
  EXPECT_TRUE(X509_get_extended_key_usage(cert.get()) & XKU_SSL_SERVER);
  EXPECT_FALSE(X509_get_extended_key_usage(cert.get()) & XKU_SSL_CLIENT);
}

TEST(InterceptCa, ServerContextsAreMadeOncePerHost) {
  auto ca = InterceptCa::create();
  ASSERT_TRUE(ca.ok());
  auto a = (*ca)->server_context("api.slack.example");
  auto b = (*ca)->server_context("api.slack.example");
  auto c = (*ca)->server_context("other.example");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
}

}  // namespace
}  // namespace airlock::egress
