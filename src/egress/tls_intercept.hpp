// TLS for header injection (rules.hpp, HeaderInjection): the per-run certificate authority
// whose leaf certificates the proxy presents to the sandbox for the injected hosts, and the
// upstream side that verifies the real server against the daemon's trust store.
//
// The CA's private key exists only in this object, in the daemon's memory: it is never
// written anywhere. Only its certificate leaves, into the sandbox's CA bundle.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "common/result.hpp"

namespace airlock::egress {

// The lifetime of a per-run CA and of its leaves: longer than any run, short enough that a
// certificate copied out of a sandbox is soon worthless.
inline constexpr std::chrono::hours kInterceptCaValidity{24};

class InterceptCa {
 public:
  // A new CA: an EC P-256 key, self-signed, CA:TRUE with pathlen 0, valid from a few minutes
  // ago (clock skew) for `validity`, named "Airlock per-sandbox CA <random hex>".
  static Result<std::unique_ptr<InterceptCa>> create(
      std::chrono::seconds validity = kInterceptCaValidity);
  ~InterceptCa();
  InterceptCa(const InterceptCa&) = delete;
  InterceptCa& operator=(const InterceptCa&) = delete;

  const std::string& certificate_pem() const { return pem_; }
  const std::string& name() const { return name_; }

  // A leaf certificate for `host` (SAN dNSName, serverAuth) and its key, both PEM.
  struct Leaf {
    std::string certificate_pem;
    std::string key_pem;
  };
  Result<Leaf> issue(const std::string& host) const;

  // A TLS server context presenting the leaf for `host`: TLS 1.2 or later, ALPN http/1.1 only
  // (HTTP/2 is never offered). Made on first use for a host, then shared.
  Result<std::shared_ptr<boost::asio::ssl::context>> server_context(const std::string& host);

 private:
  struct Key;
  InterceptCa() = default;

  std::unique_ptr<Key> key_;  // the CA's key and certificate (OpenSSL objects)
  std::string pem_, name_;
  std::chrono::seconds validity_{};
  std::map<std::string, std::shared_ptr<boost::asio::ssl::context>> servers_;
};

// The upstream side: verifies the peer against the default trust store (SSL_CERT_FILE and
// SSL_CERT_DIR of this process when set, else the system's), as read now; TLS 1.2 or later,
// ALPN http/1.1 only.
Result<std::shared_ptr<boost::asio::ssl::context>> make_upstream_tls_context();

// Per upstream connection (an SSL*): sends `host` as SNI and requires the certificate to be
// for it.
Status expect_upstream_host(SSL* ssl, const std::string& host);

// Why the last TLS operation on `ssl` failed: the certificate verification error when there
// was one, else `fallback`.
std::string tls_failure(SSL* ssl, const std::string& fallback);

}  // namespace airlock::egress
