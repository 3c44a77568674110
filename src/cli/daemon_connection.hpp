// How the command-line clients reach the daemon (client_commands.cpp's requests and
// session_shell.cpp's terminal): --server parsed, the key and subject token checked, and the TLS
// context and server name that every https connection verifies.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ssl.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cli/daemon_client.hpp"
#include "common/result.hpp"

namespace airlock::cli {

// The daemon's address from --server: http[s]://HOST[:PORT][/], HOST a DNS name, an IPv4
// address or a bracketed IPv6 address. Nothing else (no user, path, query or fragment): the
// authority goes into the Host header.
struct ServerAddress {
  bool tls = false;       // https
  std::string authority;  // HOST[:PORT]
  std::string host;       // without brackets
  std::string port = "80";  // 443 for https
};

// --server, the key, the subject token and the TLS options, checked before anything is sent
// (code "usage").
Result<ServerAddress> checked_server(const ClientOptions& o);

// A TLS option's file that could not be loaded (client_context).
struct TlsSetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// https: the server's chain is verified against --cacert (else the system's CAs), always; with
// --cert, the client's certificate. Throws TlsSetupError.
boost::asio::ssl::context client_context(const ClientOptions& o);

// The certificate must name the host of --server (a DNS name or the IP address); a DNS name
// also goes into SNI (RFC 6066 has no IP literals).
void expect_server_name(SSL* ssl, const std::string& host);

// Why a handshake failed, for a human: what verification found, else OpenSSL's reason.
std::string handshake_failure(SSL* ssl, const boost::system::error_code& ec);

}  // namespace airlock::cli
