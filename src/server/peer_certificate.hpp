// A TLS client's verified certificate, as the API sees it (HttpRequest::client_certificate),
// and the principal it authenticates as (principals[].certificate, docs/daemon.md).
#pragma once

#include <string>
#include <vector>

#include "policy/config.hpp"

typedef struct x509_st X509;  // <openssl/x509.h>, not included here

namespace airlock::server {

struct PeerCertificate {
  // The subject in RFC 2253 form, most specific first ("CN=research-agent,O=agents"), as
  // `openssl x509 -noout -subject -nameopt RFC2253` prints it; "" for an empty subject.
  std::string subject;
  std::vector<std::string> uri_sans;  // the URI subjectAltNames, in certificate order
};

// Reads the subject and URI SANs of a certificate (one the handshake verified).
PeerCertificate read_peer_certificate(X509* certificate);

// The principal whose `certificate` matches: its subject equal to the certificate's, or its
// uriSAN equal to one of the certificate's URI SANs. nullptr when none does, and when more
// than one principal does (one by subject, another by URI SAN): an ambiguous certificate
// authenticates as nobody.
const policy::Principal* find_principal_by_certificate(const policy::Config& config,
                                                       const PeerCertificate& certificate);

}  // namespace airlock::server
