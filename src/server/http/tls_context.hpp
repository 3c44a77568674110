// The daemon's TLS settings as an OpenSSL context (server.tls): TLS 1.2 or later, ECDHE with
// AES-GCM or ChaCha20-Poly1305 only, the server's preference, no compression, no
// renegotiation; with a client CA file, client certificates asked for and verified.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "common/result.hpp"
#include "policy/config.hpp"

namespace airlock::server {

// TLS 1.2's suites (TLS 1.3 has only AEAD suites, OpenSSL's defaults are kept).
inline constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// The error names the file and what OpenSSL found wrong with it.
Result<std::shared_ptr<boost::asio::ssl::context>> make_server_tls_context(
    const policy::TlsConfig& tls);

// The last OpenSSL error of this thread as text ("" if none), clearing the queue.
std::string openssl_error_text();

}  // namespace airlock::server
