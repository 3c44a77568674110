// A TLS client's verified certificate, as the API sees it (HttpRequest::client_certificate),
// and the principal it authenticates as (principals[].certificate, docs/daemon.md).
#pragma once

#include <string>
#include <vector>

#include "policy/config.hpp"

typedef struct x509_st X509;  // <openssl/x509.h>, not included here

namespace airlock::server {

using PeerCertificate = policy::ClientCertificate;

// Reads the subject and URI SANs of a certificate (one the handshake verified).
PeerCertificate read_peer_certificate(X509* certificate);

// Config::find_principal_by_certificate.
inline const policy::Principal* find_principal_by_certificate(const policy::Config& config,
                                                              const PeerCertificate& certificate) {
  return config.find_principal_by_certificate(certificate);
}

}  // namespace airlock::server
