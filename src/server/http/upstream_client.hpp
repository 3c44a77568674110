// One HTTP/1.1 exchange with another server, both bodies streamed (Boost.Beast, OpenSSL): the
// daemon forwarding a request for a session to the replica that holds it
// (sessions/session_forwarder.hpp). The request's body goes out as it is read from the
// caller's connection; the answer's head comes back as soon as it arrives and its body piece
// by piece, so neither is ever held whole here. While the body is being sent the answer is
// read too: a server that answers early (a 413 before reading an upload) stops the sending.
// Over https the server's certificate is verified against the given CAs and name.
//
// Blocking: run on a worker thread. A SocketBreaker given to exchange() lets another thread
// cut it at any point (shutdown, a replica found dead, a client gone).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.hpp"
#include "common/socket_breaker.hpp"
#include "server/http/http_message.hpp"

namespace airlock::server {

struct UpstreamRequest {
  std::string method;  // GET, POST, ...
  std::string target;  // the path and query, as received
  std::vector<std::pair<std::string, std::string>> headers;  // besides Host and the body's framing
  std::string body;                         // sent when body_reader is null
  std::shared_ptr<BodyReader> body_reader;  // streamed: with its length, else chunked
};

struct UpstreamHead {
  int status = 0;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  // end-to-end ones (no framing, no hop-by-hop)
  std::optional<std::uint64_t> length;                       // Content-Length, when the body has one
};

// An exchange whose head has arrived; its body is read with read_some().
class UpstreamExchange {
 public:
  virtual ~UpstreamExchange() = default;
  virtual const UpstreamHead& head() const = 0;
  // The next bytes of the answer's body; "" at its end. An error when the connection broke
  // (or was cut) before the end: the answer is incomplete.
  virtual Result<std::string> read_some() = 0;
};

class UpstreamClient {
 public:
  struct Options {
    std::string ca_file;      // https: the CAs that verify the server (PEM); "": the system's
    std::string server_name;  // https: the name its certificate must carry; "": the URL's host
    std::chrono::milliseconds connect_timeout{5000};  // TCP connect, then the TLS handshake
    std::chrono::milliseconds send_timeout{30000};    // each piece of the request
  };
  // Loads the CAs once. Error "config" naming the file.
  static Result<std::unique_ptr<UpstreamClient>> create(Options options);
  ~UpstreamClient();
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  // Connects to `base_url` (http[s]://HOST:PORT), sends `request` and reads the answer's head.
  // Errors by code: "upstream_unreachable" (nothing was sent: resolving, connecting, TLS),
  // "upstream_failed" (the connection broke, or was cut, once the request was under way),
  // "request_body" (the caller's body could not be read: too slow, gone).
  Result<std::unique_ptr<UpstreamExchange>> exchange(const std::string& base_url, const UpstreamRequest& request,
                                                     SocketBreaker* breaker);

  struct Impl;

 private:
  explicit UpstreamClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace airlock::server
