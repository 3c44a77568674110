// The HTTP/1.1 listener (Boost.Beast): parses requests with size and time limits, hands them
// to the Api, writes its answers. Keep-alive; 413 for bodies over the limit; 408 for slow
// clients. Optionally over TLS (OpenSSL), with client certificates (tls_context.cpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "policy/config.hpp"
#include "server/http/http_message.hpp"

namespace airlock::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8750;  // 0: any free port
  std::uint64_t max_body_bytes = 1 << 20;
  std::uint32_t max_header_bytes = 16 * 1024;
  // A request (head and body) must arrive within this, or it is answered 408.
  std::chrono::milliseconds read_timeout{30'000};
  unsigned io_threads = 2;
  // A streamed body (HttpResponse::stream) with more than this written and not yet sent: the
  // client reads too slowly; it is disconnected and the writer told it has gone.
  std::size_t max_stream_queue_bytes = 4u << 20;
  // Set: every connection is TLS (1.2 or later); the handshake is under read_timeout too.
  // With a client CA file, a client certificate is asked for (not required) and verified.
  std::optional<policy::TlsConfig> tls;
  // Told each request refused before it reaches the Api, with a reason from a fixed set:
  // body_too_large, headers_too_large, malformed_request, request_timeout,
  // tls_handshake_failed.
  std::function<void(std::string_view reason)> rejected;
  // Says, from a request's method and target, whether its body is streamed to the handler
  // (HttpRequest::body_reader; no max_body_bytes: the handler bounds it) instead of read
  // whole first. Each read of a streamed body has read_timeout. Unset: none is.
  std::function<bool(std::string_view method, std::string_view target)> streams_body;
};

class HttpServer {
 public:
  HttpServer(RequestHandler handler, HttpServerOptions options);  // Api::handler() in the daemon
  ~HttpServer();
  Status bind();              // binds and listens; nothing is accepted until serve()
  void serve();               // accepts and answers on its own threads
  std::uint16_t port() const;  // the bound port
  void stop_accepting();      // new connections are refused; open ones are served
  void stop();                // closes everything and joins

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Loads server.tls into a TLS context as bind() would: whether the certificate, the key (and
// that they belong together) and the client CA file are usable. For `airlock serve --check`.
Status check_tls(const policy::TlsConfig& tls);

// Runs one request through the same parser as the server, without sockets: the raw bytes of
// an HTTP/1.1 request in, the raw response out (used by the fuzz target and tests; the Api's
// is in server/api/api.hpp). A streamed answer is collected as its chunks; one that has not
// finished within 2 s or has written more than 1 MiB is cut there (the writer is told the
// client has gone).
std::string handle_raw_request(const RequestHandler& handler, const std::string& bytes,
                               std::uint64_t max_body_bytes);

}  // namespace airlock::server
