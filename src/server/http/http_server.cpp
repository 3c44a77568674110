#include "server/http/http_server.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "server/http/beast_message.hpp"
#include "server/http/body_stream.hpp"
#include "server/http/tls_context.hpp"
#include "server/http/websocket_channel.hpp"

namespace airlock::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

std::string peer_address(const tcp::socket& socket) {
  error_code ec;
  auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "";
  auto address = endpoint.address();
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
  return address.to_string();
}

// The client's certificate, if it sent one and the handshake verified it (a certificate that
// fails verification has already failed the handshake).
std::optional<PeerCertificate> verified_client_certificate(SSL* ssl) {
  X509* certificate = SSL_get0_peer_certificate(ssl);
  if (!certificate || SSL_get_verify_result(ssl) != X509_V_OK) return std::nullopt;
  return read_peer_certificate(certificate);
}

}  // namespace

struct HttpServer::Impl {
  RequestHandler handler;
  HttpServerOptions options;
  // Requests handed to the Api whose answer is not written yet: stop() waits for them, so an
  // invocation that finishes while the daemon drains still reaches its client.
  std::mutex mu;
  std::condition_variable idle;
  std::size_t in_flight = 0;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::shared_ptr<asio::ssl::context> tls;  // set by bind() when options.tls is
  // The streamed bodies being sent (under mu): stop() tells their writers the client has
  // gone before the io_context stops, so no writer posts to it afterwards.
  std::vector<std::weak_ptr<BodyStream>> streams;
  std::vector<std::weak_ptr<HangUp>> websockets;  // open ones (under mu): hung up the same way

  Impl(RequestHandler h, HttpServerOptions o) : handler(std::move(h)), options(std::move(o)) {}
  void accept();
  void add_stream(const std::shared_ptr<BodyStream>& body);
  void add_websocket(const std::shared_ptr<HangUp>& socket);
  void end_streams();
};

void HttpServer::Impl::add_stream(const std::shared_ptr<BodyStream>& body) {
  std::lock_guard lock(mu);
  std::erase_if(streams, [](const auto& w) { return w.expired(); });
  streams.push_back(body);
}

void HttpServer::Impl::add_websocket(const std::shared_ptr<HangUp>& socket) {
  std::lock_guard lock(mu);
  std::erase_if(websockets, [](const auto& w) { return w.expired(); });
  websockets.push_back(socket);
}

void HttpServer::Impl::end_streams() {
  std::vector<std::shared_ptr<BodyStream>> open;
  std::vector<std::shared_ptr<HangUp>> sockets;
  {
    std::lock_guard lock(mu);
    for (auto& w : streams)
      if (auto body = w.lock()) open.push_back(std::move(body));
    for (auto& w : websockets)
      if (auto socket = w.lock()) sockets.push_back(std::move(socket));
    streams.clear();
    websockets.clear();
  }
  for (auto& body : open) body->client_gone();
  for (auto& socket : sockets) socket->hang_up();
}

// One client connection: (over TLS, a handshake first) read a request, answer it, repeat
// while keep-alive. Its handlers run on one strand. The read has its own deadline (a timer,
// not the stream's expiry, which would close the socket): a request that has not fully
// arrived in time, head or body, is answered 408 before the connection is closed. `Stream` is
// PlainStream or TlsStream; the HTTP code is the same for both.
template <class Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // `tls_context...`: the ssl::context, for a TlsStream only.
  template <class... TlsContext>
  Connection(HttpServer::Impl& server, tcp::socket socket, TlsContext&... tls_context)
      : server_(server),
        peer_(peer_address(socket)),
        stream_(std::move(socket), tls_context...),
        read_deadline_(stream_.get_executor()) {}

  ~Connection() {
    if (body_) body_->client_gone();  // the io_context is going: so is the client
  }

  void start() {
    if constexpr (kTls)
      handshake();
    else
      read();
  }

  // A request's head first: its route decides whether the body is read whole (up to
  // max_body_bytes) before the handler runs, or streamed to it (options.streams_body).
  void read() {
    head_parser_.emplace();
    head_parser_->header_limit(server_.options.max_header_bytes);
    head_parser_->body_limit(boost::none);  // checked below, once the route is known
    parser_.reset();
    upload_parser_.reset();
    tcp_layer().expires_never();
    timed_out_ = false;
    reading_ = true;
    const std::uint64_t seq = ++reads_;
    auto self = this->shared_from_this();
    read_deadline_.expires_after(server_.options.read_timeout);
    read_deadline_.async_wait([this, self, seq](error_code ec) {
      if (ec || seq != reads_ || !reading_) return;  // cancelled, or that read is over
      timed_out_ = true;
      error_code ignored;
      tcp_layer().socket().cancel(ignored);
    });
    http::async_read_header(stream_, buffer_, *head_parser_,
                            [this, self](error_code ec, std::size_t) { on_head(ec); });
  }

 private:
  beast::tcp_stream& tcp_layer() { return beast::get_lowest_layer(stream_); }

  // The handshake has the read timeout of a request head, through the stream's expiry: a
  // client that connects and says nothing (or too slowly) is closed, with no answer (there
  // is no TLS session to send one on).
  void handshake() {
    tcp_layer().expires_after(server_.options.read_timeout);
    auto self = this->shared_from_this();
    stream_.async_handshake(asio::ssl::stream_base::server, [this, self](error_code ec) {
      if (ec) {
        if (server_.options.rejected) server_.options.rejected("tls_handshake_failed");
        return close_socket();
      }
      tls_up_ = true;
      client_certificate_ = verified_client_certificate(stream_.native_handle());
      read();
    });
  }

  void on_head(error_code ec) {
    if (ec) return on_read(ec);
    const auto& head = head_parser_->get();
    if (server_.options.streams_body && server_.options.streams_body(head.method_string(), head.target())) {
      reading_ = false;
      read_deadline_.cancel();
      upload_parser_.emplace(std::move(*head_parser_));
      head_parser_.reset();
      upload_parser_->eager(true);  // each read parses all the body its buffer holds
      return dispatch_streamed();
    }
    const auto length = head_parser_->content_length();
    if (length && *length > server_.options.max_body_bytes) return on_read(http::error::body_limit);
    parser_.emplace(std::move(*head_parser_));
    head_parser_.reset();
    parser_->body_limit(server_.options.max_body_bytes);  // a chunked body's, as it comes
    if (parser_->is_done()) return on_read({});
    auto self = this->shared_from_this();
    http::async_read(stream_, buffer_, *parser_, [this, self](error_code e, std::size_t) { on_read(e); });
  }

  bool got_some() const {
    return (head_parser_ && head_parser_->got_some()) || (parser_ && parser_->got_some());
  }

  void on_read(error_code ec) {
    reading_ = false;
    read_deadline_.cancel();
    if (ec && timed_out_) {
      // An idle keep-alive connection is closed quietly; a request that is late gets 408.
      if (!got_some() && buffer_.size() == 0) return close();
      return reject("request_timeout",
                    error_response(408, "request_timeout", "the request took too long"));
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof) return close();
    if (ec == asio::error::operation_aborted || ec == asio::error::connection_reset)
      return close();
    // A TLS record that does not decrypt, or a peer gone without close_notify: not HTTP.
    if (ec.category() == asio::error::get_ssl_category() ||
        ec == asio::ssl::error::stream_truncated)
      return close_socket();
    if (ec) return reject(rejection_reason(ec), parse_failure(ec, server_.options.max_body_bytes));
    dispatch();
  }

  // Hands the parsed request to the Api; its answer comes back through `reply`.
  void dispatch() {
    auto& req = parser_->get();
    hand_over(parser_->keep_alive(), req, to_request(req, std::move(req.body()), peer_, client_certificate_));
  }

  // The head only: the handler reads the body through the request's body_reader.
  void dispatch_streamed() {
    const auto& head = upload_parser_->get();
    auto request = to_request(head, "", peer_, client_certificate_);
    std::optional<std::uint64_t> length;
    if (auto n = upload_parser_->content_length()) length = *n;
    expects_continue_ = beast::iequals(head[http::field::expect], "100-continue");
    continue_sent_ = false;
    upload_answered_ = false;
    request.body_reader = std::make_shared<UploadReader>(this->weak_from_this(), stream_.get_executor(), length,
                                                         server_.options.read_timeout);
    hand_over(upload_parser_->keep_alive(), head, std::move(request));
  }

  void hand_over(bool keep_alive, const http::request_header<>& req, HttpRequest request) {
    const unsigned version = req.version();
    const bool head_only = req.method() == http::verb::head;
    auto self = this->shared_from_this();
    auto reply = [self, keep_alive, version, head_only](HttpResponse resp) {
      // From a worker thread: hop back onto the connection's executor.
      asio::post(self->stream_.get_executor(),
                 [self, resp = std::move(resp), keep_alive, version, head_only]() mutable {
                   self->write(std::move(resp), keep_alive, version, head_only);
                 });
    };
    {
      std::lock_guard lock(server_.mu);
      ++server_.in_flight;
    }
    answered_ = false;
    server_.handler(std::move(request), std::move(reply));
  }

  // A streamed request body, read on the connection's executor for a handler on a worker
  // thread: one piece per read(), each within the read timeout (the stream's expiry: a client
  // that stops sending is closed).
  class UploadReader final : public BodyReader {
   public:
    UploadReader(std::weak_ptr<Connection> connection, asio::any_io_executor executor,
                 std::optional<std::uint64_t> length, std::chrono::milliseconds timeout)
        : connection_(std::move(connection)), executor_(std::move(executor)), length_(length), timeout_(timeout) {}

    Result<std::string> read() override {
      auto piece = std::make_shared<std::promise<Result<std::string>>>();
      auto arrived = piece->get_future();
      asio::post(executor_, [weak = connection_, piece] {
        if (auto connection = weak.lock()) connection->read_upload_piece(piece);
        else piece->set_value(Error::make("client_gone", "the client has gone"));
      });
      // Bounded: a server that stops drops the posted read without running it.
      if (arrived.wait_for(timeout_ + std::chrono::seconds(5)) != std::future_status::ready)
        return Error::make("client_gone", "the request body did not arrive in time");
      return arrived.get();
    }
    std::optional<std::uint64_t> length() const override { return length_; }

   private:
    std::weak_ptr<Connection> connection_;
    asio::any_io_executor executor_;
    std::optional<std::uint64_t> length_;
    std::chrono::milliseconds timeout_;
  };

  using Piece = std::shared_ptr<std::promise<Result<std::string>>>;

  void read_upload_piece(Piece piece) {
    if (!upload_parser_ || upload_answered_)
      return piece->set_value(Error::make("client_gone", "the answer to this request has been sent"));
    if (upload_parser_->is_done()) return piece->set_value(std::string());
    auto self = this->shared_from_this();
    if (expects_continue_ && !continue_sent_) {  // the client waits for this before its body
      continue_sent_ = true;
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      tcp_layer().expires_after(server_.options.read_timeout);
      return asio::async_write(stream_, asio::buffer(kContinue), [this, self, piece](error_code ec, std::size_t) {
        tcp_layer().expires_never();
        if (ec) return piece->set_value(Error::make("client_gone", "the client has gone: " + ec.message()));
        read_upload_piece(piece);
      });
    }
    upload_piece_.resize(64 * 1024);
    // Room for a whole piece in the connection's buffer: it reads no more than it has room
    // for (512 bytes after a small head), and a body read 512 bytes at a time is slow.
    buffer_.reserve(upload_piece_.size());
    auto& body = upload_parser_->get().body();
    body.data = upload_piece_.data();
    body.size = upload_piece_.size();
    body.more = true;
    tcp_layer().expires_after(server_.options.read_timeout);
    http::async_read_some(stream_, buffer_, *upload_parser_, [this, self, piece](error_code ec, std::size_t) {
      tcp_layer().expires_never();
      if (ec == http::error::need_buffer) ec = {};  // the piece is full
      if (ec) return piece->set_value(Error::make("client_gone", "reading the request body: " + ec.message()));
      const std::size_t n = upload_piece_.size() - upload_parser_->get().body().size;
      if (n == 0 && !upload_parser_->is_done()) return read_upload_piece(piece);  // framing only
      piece->set_value(std::string(upload_piece_.data(), n));
    });
  }

  static std::string_view rejection_reason(const error_code& ec) {
    if (ec == http::error::body_limit) return "body_too_large";
    if (ec == http::error::header_limit) return "headers_too_large";
    return "malformed_request";
  }

  void reject(std::string_view reason, HttpResponse resp) {
    if (server_.options.rejected) server_.options.rejected(reason);
    write(std::move(resp), false, 11);
  }

  void write(HttpResponse resp, bool keep_alive, unsigned version, bool head_only = false) {
    // A streamed body the handler did not read to its end cannot be skipped: the connection
    // ends after this answer.
    const bool unread_body = upload_parser_ && !upload_parser_->is_done();
    if (unread_body) keep_alive = false;
    upload_answered_ = true;  // later reads of the body fail
    if (resp.websocket) return upgrade(std::move(resp.websocket));
    if (resp.stream) return start_stream(std::move(resp), keep_alive, version, head_only);
    auto out = std::make_shared<http::response<http::string_body>>(
        to_beast(resp, keep_alive, version, head_only));
    tcp_layer().expires_after(server_.options.read_timeout);
    auto self = this->shared_from_this();
    auto done = [this, self, out, keep_alive, unread_body](error_code ec, std::size_t) {
      done_answering();
      if (!ec && unread_body) return drain_then_close();
      if (ec || !keep_alive) return close();
      read();
    };
    // A HEAD answer announces the GET body's length but sends no body.
    if (head_only) {
      auto sr = std::make_shared<http::response_serializer<http::string_body>>(*out);
      http::async_write_header(stream_, *sr,
                               [sr, done](error_code ec, std::size_t n) { done(ec, n); });
    } else {
      http::async_write(stream_, *out, done);
    }
  }

  // An answer that makes the connection a WebSocket: the stream moves to its channel, which
  // completes the handshake (or answers a request that was no proper upgrade 400) and lives on
  // by itself; this connection reads no more.
  void upgrade(std::function<WebSocketHandlers(std::shared_ptr<WebSocket>)> open) {
    done_answering();
    if (!parser_) return close();  // a streamed body is never an upgrade
    WebSocketLimits limits;
    limits.handshake = server_.options.read_timeout;
    limits.max_queued_bytes = server_.options.max_stream_queue_bytes;
    auto channel = std::make_shared<WebSocketChannel<Stream>>(std::move(stream_), limits);
    server_.add_websocket(channel);
    channel->accept(parser_->release(), std::move(open));
    parser_.reset();
  }

  // A streamed answer: the head, then the handler's writer is given the body. No read
  // deadline applies while it is sent; each send is bounded by the read timeout instead (a
  // client that stops reading is closed), and a client that leaves is noticed by a read kept
  // open on the connection.
  void start_stream(HttpResponse resp, bool keep_alive, unsigned version, bool head_only) {
    chunked_ = version >= 11;
    after_stream_ = keep_alive && chunked_ ? AfterStream::kRead : AfterStream::kClose;
    auto head =
        std::make_shared<http::response<http::empty_body>>(stream_head(resp, keep_alive, version));
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*head);
    tcp_layer().expires_after(server_.options.read_timeout);
    auto self = this->shared_from_this();
    http::async_write_header(
        stream_, *sr,
        [this, self, head, sr, stream = std::move(resp.stream), head_only](error_code ec,
                                                                           std::size_t) {
          if (ec || head_only) {
            stream(gone_writer());  // a HEAD answer has no body; a failed head, no client
            done_answering();
            if (ec) return close_socket();
            return continue_after_stream({});
          }
          begin_body(stream);
        });
  }

  void begin_body(const std::function<void(std::shared_ptr<BodyWriter>)>& stream) {
    tcp_layer().expires_never();
    auto wake = [weak = this->weak_from_this(), ex = stream_.get_executor()] {
      asio::post(ex, [weak] {
        if (auto self = weak.lock()) self->pump();
      });
    };
    body_ = std::make_shared<BodyStream>(std::move(wake), server_.options.max_stream_queue_bytes);
    server_.add_stream(body_);
    watch_client();
    stream(body_);
  }

  // Sends what the writer has queued, one write at a time, in order.
  void pump() {
    if (!body_) return;
    if (body_->overflowed()) return end_stream(false);  // too slow a reader, even mid-send
    if (sending_) return;
    auto next = body_->next();
    switch (next.kind) {
      case BodyStream::Next::kNothing:
        return;
      case BodyStream::Next::kBytes:
        return send(chunked_ ? frame_chunk(next.bytes) : std::move(next.bytes), false);
      case BodyStream::Next::kLast:
        if (chunked_) return send(frame_last_chunk(), true);
        return end_stream(true);
    }
  }

  void send(std::string bytes, bool last) {
    sending_ = true;
    auto data = std::make_shared<std::string>(std::move(bytes));
    tcp_layer().expires_after(server_.options.read_timeout);  // the pending read keeps its own
    auto self = this->shared_from_this();
    auto sent = [this, self, data, last](error_code ec, std::size_t) { on_sent(ec, last); };
    asio::async_write(stream_, asio::buffer(*data), std::move(sent));
  }

  void on_sent(error_code ec, bool last) {
    sending_ = false;
    if (!body_) return;  // the stream ended meanwhile (the client left)
    if (ec) return end_stream(false);
    if (last) return end_stream(true);
    pump();
  }

  // A read kept open while the body is sent: its failure is the client leaving. Bytes that
  // arrive (a pipelined request) are kept for the next request, up to a head's worth.
  void watch_client() {
    if (buffer_.size() >= server_.options.max_header_bytes) return;
    watching_ = true;
    auto self = this->shared_from_this();
    stream_.async_read_some(buffer_.prepare(1024), [this, self](error_code ec, std::size_t n) {
      watching_ = false;
      if (!ec) buffer_.commit(n);
      if (!body_) return continue_after_stream(ec);
      if (ec) return end_stream(false);
      watch_client();
    });
  }

  // `clean`: the last chunk is sent; else the client has gone (or is too slow) and the
  // connection is dropped.
  void end_stream(bool clean) {
    auto body = std::exchange(body_, nullptr);
    body->client_gone();  // after finish(), this only stops the writer's wakes
    done_answering();
    if (!clean) {
      after_stream_ = AfterStream::kNothing;
      return close_socket();
    }
    if (!watching_) return continue_after_stream({});
    tcp_layer().cancel();  // the watch's handler continues
  }

  void continue_after_stream(error_code ec) {
    const auto then = std::exchange(after_stream_, AfterStream::kNothing);
    if (then == AfterStream::kNothing) return;
    if (ec && ec != asio::error::operation_aborted) return close_socket();
    if (then == AfterStream::kRead) return read();
    close();
  }

  // Marks this connection's request answered (once), waking a stop() that waits for it.
  void done_answering() {
    if (answered_) return;
    answered_ = true;
    std::lock_guard lock(server_.mu);
    if (--server_.in_flight == 0) server_.idle.notify_all();
  }

  // After an answer to a request whose body was not read to its end (an upload refused at
  // the disk limit): the client may still be sending it, and closing now would reset the
  // connection before it reads the answer. So: no more sending, then what arrives is read and
  // dropped until the client closes or 5 s pass.
  void drain_then_close() {
    if constexpr (kTls) {
      return close();
    } else {
      error_code ignored;
      tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
      tcp_layer().expires_after(std::min<std::chrono::milliseconds>(server_.options.read_timeout, std::chrono::seconds(5)));
      drain_some();
    }
  }

  void drain_some() {
    upload_piece_.resize(64 * 1024);
    auto self = this->shared_from_this();
    stream_.async_read_some(asio::buffer(upload_piece_), [this, self](error_code ec, std::size_t) {
      if (ec) return close_socket();
      drain_some();
    });
  }

  // Over TLS, close_notify first (bounded by the read timeout), then the socket.
  void close() {
    if constexpr (kTls) {
      if (tls_up_) {
        tls_up_ = false;
        tcp_layer().expires_after(server_.options.read_timeout);
        auto self = this->shared_from_this();
        stream_.async_shutdown([self](error_code) { self->close_socket(); });
        return;
      }
    }
    close_socket();
  }

  void close_socket() {
    error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp_layer().close();
  }

  HttpServer::Impl& server_;
  std::string peer_;
  Stream stream_;
  asio::steady_timer read_deadline_;
  bool timed_out_ = false;
  bool reading_ = false;
  std::uint64_t reads_ = 0;  // which read the deadline belongs to
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> head_parser_;  // until the head is read
  std::optional<http::request_parser<http::string_body>> parser_;      // a body read whole
  std::optional<http::request_parser<http::buffer_body>> upload_parser_;  // a streamed body
  std::string upload_piece_;  // the streamed body's next piece
  bool expects_continue_ = false, continue_sent_ = false, upload_answered_ = false;
  bool answered_ = true;  // no request of ours is with the Api
  bool tls_up_ = false;   // the handshake is done and no close_notify was sent
  std::optional<PeerCertificate> client_certificate_;  // verified at the handshake
  // A streamed answer being sent (start_stream).
  enum class AfterStream { kNothing, kRead, kClose };
  std::shared_ptr<BodyStream> body_;
  bool chunked_ = true;
  bool sending_ = false;
  bool watching_ = false;
  AfterStream after_stream_ = AfterStream::kNothing;
};

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(io), [this](error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    // Each answer is written whole: Nagle's algorithm would only hold its last segment back
    // until the client's (delayed) ACK of the one before.
    error_code ignored;
    if (!ec) socket.set_option(tcp::no_delay(true), ignored);
    if (!ec && tls)
      std::make_shared<Connection<TlsStream>>(*this, std::move(socket), *tls)->start();
    else if (!ec)
      std::make_shared<Connection<PlainStream>>(*this, std::move(socket))->start();
    accept();
  });
}

HttpServer::HttpServer(RequestHandler handler, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(handler), std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::bind() {
  if (impl_->options.tls && !impl_->tls) {
    auto context = make_server_tls_context(*impl_->options.tls);
    if (!context) return context.error();
    impl_->tls = std::move(*context);
  }
  error_code ec;
  auto address = asio::ip::make_address(impl_->options.host, ec);
  if (ec) return Error::make("config", "server.listen: '" + impl_->options.host + "' is not an IP address");
  tcp::endpoint endpoint(address, impl_->options.port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Error::make("listen", "cannot listen on " + impl_->options.host + ":" +
                                     std::to_string(impl_->options.port) + ": " + ec.message());
  return {};
}

void HttpServer::serve() {
  impl_->work.emplace(impl_->io.get_executor());
  impl_->accept();
  for (unsigned i = 0; i < impl_->options.io_threads; ++i) impl_->threads.emplace_back([this] { impl_->io.run(); });
}


std::uint16_t HttpServer::port() const {
  error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void HttpServer::stop_accepting() {
  std::promise<void> done;
  asio::post(impl_->io, [this, &done] {
    error_code ignored;
    impl_->acceptor.close(ignored);
    done.set_value();
  });
  if (!impl_->threads.empty()) done.get_future().wait();
}

void HttpServer::stop() {
  if (impl_->threads.empty()) return;
  {
    // Answers already handed back by the Api are written first (bounded: a client that does
    // not read must not hold the shutdown).
    std::unique_lock lock(impl_->mu);
    impl_->idle.wait_for(lock, std::chrono::seconds(5), [this] { return impl_->in_flight == 0; });
  }
  impl_->end_streams();
  impl_->work.reset();
  impl_->io.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

Status check_tls(const policy::TlsConfig& tls) {
  auto context = make_server_tls_context(tls);
  if (!context) return context.error();
  return {};
}

}  // namespace airlock::server
