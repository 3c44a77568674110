#include "server/http/peer_certificate.hpp"

#include <openssl/bio.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace airlock::server {
namespace {

std::string rfc2253_subject(X509* certificate) {
  const X509_NAME* name = X509_get_subject_name(certificate);
  if (!name) return "";
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (!bio || X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253) < 0) return "";
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return size > 0 ? std::string(data, static_cast<std::size_t>(size)) : "";
}

std::vector<std::string> uri_sans(X509* certificate) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_URI) continue;
    const ASN1_STRING* uri = name->d.uniformResourceIdentifier;
    std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                      static_cast<std::size_t>(ASN1_STRING_length(uri)));
    // A NUL inside would let "spiffe://a\0.evil" pass for "spiffe://a" in C-string code.
    if (value.find('\0') == std::string::npos) out.push_back(std::move(value));
  }
  GENERAL_NAMES_free(names);
  return out;
}

}  // namespace

PeerCertificate read_peer_certificate(X509* certificate) {
  PeerCertificate out;
  if (!certificate) return out;
  out.subject = rfc2253_subject(certificate);
  out.uri_sans = uri_sans(certificate);
  return out;
}

}  // namespace airlock::server
