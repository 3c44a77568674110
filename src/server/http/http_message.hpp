// An HTTP request and its response as the handlers see them, without the sockets: what the
// server (http_server.hpp) parses and writes, and what every endpoint folder takes and returns.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "server/http/peer_certificate.hpp"

namespace airlock::server {

// The body of a request read while it arrives (a file uploaded into a session: never held
// whole). Used from one worker thread at a time; each read blocks until bytes arrive.
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // The next bytes of the body; "" at its end. An error when the client is too slow (the
  // server's read timeout), has gone, or the answer has already been sent.
  virtual Result<std::string> read() = 0;
  // The Content-Length, when the request gave one (not a chunked body).
  virtual std::optional<std::uint64_t> length() const = 0;
};

// A BodyReader over a body already read whole (a request the server did not stream).
std::shared_ptr<BodyReader> string_body_reader(std::string body);

struct HttpRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  // Set for a request whose route streams its body (HttpServerOptions::streams_body): `body`
  // is empty and the handler reads it from here.
  std::shared_ptr<BodyReader> body_reader;
  std::string peer;  // the client's IP address ("" when unknown)
  // Over TLS with server.tls.clientCAFile: the certificate the client presented and the
  // handshake verified against that CA. None: no TLS, or no certificate presented.
  std::optional<PeerCertificate> client_certificate;
};

// The body of a response written while it is produced (Server-Sent Events on /mcp). Usable
// from any thread; writes are sent in order.
class BodyWriter {
 public:
  virtual ~BodyWriter() = default;
  // False once the client has gone (nothing more will be sent).
  virtual bool write(std::string bytes) = 0;
  // Ends the body; the connection is kept alive if the request allowed it.
  virtual void finish() = 0;
  // Called once if the client goes away before finish() (at once if it already has).
  virtual void on_client_gone(std::function<void()> callback) = 0;
  // Ends the body without its end: the connection is dropped, so the client sees an
  // incomplete answer (a download DLP blocked halfway).
  virtual void abort() = 0;
  // Blocks until fewer than `bytes` written are still waiting to be sent, or the client has
  // gone, or `timeout` passes; true in the first case. A writer of a large body calls it
  // between writes, so that a slow client slows it down instead of being dropped.
  virtual bool wait_below(std::size_t bytes, std::chrono::milliseconds timeout) {
    (void)bytes;
    (void)timeout;
    return true;
  }
};

// A WebSocket the server accepted (RFC 6455) through an upgrade answer (HttpResponse::websocket).
// Usable from any thread; messages are sent in order.
class WebSocket {
 public:
  virtual ~WebSocket() = default;
  // Queues one message; false once the connection is closed (or closing). Past the server's
  // max_stream_queue_bytes unsent, the client reads too slowly and is disconnected.
  virtual bool send(std::string message, bool binary) = 0;
  // Blocks until fewer than `bytes` are queued unsent, or it closes, or `timeout` passes; true
  // in the first case: a producer calls it between sends so that a slow client slows it down.
  virtual bool wait_below(std::size_t bytes, std::chrono::milliseconds timeout) = 0;
  // Sends what is queued, then a close frame with `code` (RFC 6455 section 7.4) and `reason`;
  // the connection ends when the client answers (or after the server's read timeout).
  virtual void close(std::uint16_t code, std::string reason) = 0;
};

// What the owner of an accepted WebSocket is told: each message the client sends, and, once,
// its end (the client closed or went away, the connection failed, the server stops). Both are
// called on the server's I/O threads: neither may block.
struct WebSocketHandlers {
  std::function<void(std::string message, bool binary)> message;
  std::function<void()> closed;
};

// Whether the request asks to become a WebSocket (GET, Upgrade: websocket, Connection: upgrade,
// Sec-WebSocket-Key, Sec-WebSocket-Version: 13).
bool is_websocket_upgrade(const HttpRequest& request);

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Set: `body` is ignored; the server sends the head (chunked), then calls `stream` once
  // with the writer of the body. Not read timeout bound.
  std::function<void(std::shared_ptr<BodyWriter>)> stream;
  // Set, in answer to a request that is_websocket_upgrade: status and body are ignored; the
  // server completes the handshake (101 Switching Protocols) and calls `websocket` once with
  // the connection; the handlers it returns receive what the client sends. The connection is
  // not read timeout bound: the server pings an idle client and drops one that stops answering.
  std::function<WebSocketHandlers(std::shared_ptr<WebSocket>)> websocket;
};

// A JSON body with its status; Airlock's error shape, {"error": {"kind", "message"}}, which the
// transport's own refusals (413, 431, 400, 408) use too.
HttpResponse json_response(int status, const nlohmann::json& body);
HttpResponse error_response(int status, const std::string& kind, const std::string& message);

// What answers the requests: Api::handle, or (in tests) anything with its contract. `reply`
// is called exactly once, perhaps later and from another thread.
using RequestHandler =
    std::function<void(const HttpRequest& request, std::function<void(HttpResponse)> reply)>;

}  // namespace airlock::server
