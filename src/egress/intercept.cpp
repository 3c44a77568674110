// Header injection on an intercepted connection: TLS with the sandbox under the per-run CA's
// leaf for the injected host, TLS with the upstream verified against the daemon's trust
// store, then HTTP/1.1 request by request (keep-alive), each request with the configured
// headers set to their secret values whatever the sandbox sent, each response relayed back.
//
// The value is only ever written into the upstream's TLS stream: it is not in any record,
// message or log line.
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/buffered_read_stream.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <limits>

#include "egress/session.hpp"

namespace airlock::egress {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;

// Body bytes move through this much at a time.
constexpr std::size_t kBodyChunk = 64 * 1024;

// The sandbox's side reads through a buffer that first holds what the proxy protocol already
// read past its own request; ssl::stream also wants the lowest layer named.
struct PrefixedSocket : beast::buffered_read_stream<tcp::socket&, beast::flat_buffer> {
  using buffered_read_stream::buffered_read_stream;
  using lowest_layer_type = tcp::socket;
  tcp::socket& lowest_layer() { return next_layer(); }
  const tcp::socket& lowest_layer() const { return next_layer(); }
};

class HeaderInjector final : public Interception {
 public:
  HeaderInjector(Session& session, std::vector<const HeaderInjection*> injections,
                 std::shared_ptr<ssl::context> server, std::shared_ptr<ssl::context> upstream)
      : session_(session),
        injections_(std::move(injections)),
        host_(injections_.front()->host),
        port_(injections_.front()->port),
        server_ctx_(std::move(server)),
        upstream_ctx_(std::move(upstream)),
        client_(session.client(), *server_ctx_),
        upstream_(session.upstream(), *upstream_ctx_),
        chunk_(std::make_unique_for_overwrite<char[]>(kBodyChunk)) {}

  void start(std::string client_bytes) override;

 private:
  using ClientStream = ssl::stream<PrefixedSocket>;
  using UpstreamStream = ssl::stream<tcp::socket&>;
  using Next = std::function<void()>;

  void handshake_upstream();
  void fail_upstream(const std::string& why);
  void answer(const std::string& status, const std::string& why);
  void close_client(const std::string& why);
  void read_request();
  void on_request();
  void read_response();
  void on_response();
  void end_exchange();

  template <class From, class Parser, class To, class Serializer>
  void send_message(From& from, beast::flat_buffer& buffer, Parser& parser, To& to,
                    Serializer& serializer, bool upward, Next next);
  template <class From, class Parser, class To, class Serializer>
  void pump_body(From& from, beast::flat_buffer& buffer, Parser& parser, To& to,
                 Serializer& serializer, bool upward, Next next);
  bool sent(error_code ec, std::size_t n, bool upward);
  void idle_deadline();

  Session& session_;
  std::vector<const HeaderInjection*> injections_;  // one host:port
  const std::string& host_;
  std::uint16_t port_;
  std::shared_ptr<ssl::context> server_ctx_, upstream_ctx_;
  ClientStream client_;
  UpstreamStream upstream_;
  beast::flat_buffer client_buffer_, upstream_buffer_;
  std::optional<http::request_parser<http::buffer_body>> request_;
  std::optional<http::request_serializer<http::buffer_body>> request_out_;
  std::optional<http::response_parser<http::buffer_body>> response_;
  std::optional<http::response_serializer<http::buffer_body>> response_out_;
  std::unique_ptr<char[]> chunk_;
  std::string answer_;  // the proxy's own response, when it gives one
};

void HeaderInjector::start(std::string client_bytes) {
  auto& early = client_.next_layer().buffer();
  early.commit(asio::buffer_copy(early.prepare(client_bytes.size()), asio::buffer(client_bytes)));
  session_.expire_after(session_.policy().limits().connect_timeout,
                        "the TLS handshake with the sandbox timed out");
  client_.async_handshake(ssl::stream_base::server, [this, self = session_.self()](error_code ec) {
    if (session_.finished()) return;
    if (ec) return session_.finish("the TLS handshake with the sandbox failed: " + ec.message());
    handshake_upstream();
  });
}

// The upstream must prove it is the injected host to the daemon's trust store: else the
// value would go to whoever answers the address.
void HeaderInjector::handshake_upstream() {
  if (auto s = expect_upstream_host(upstream_.native_handle(), host_); !s)
    return fail_upstream(s.error().message);
  session_.expire_after(session_.policy().limits().connect_timeout,
                        "the TLS handshake with " + host_ + " timed out");
  upstream_.async_handshake(
      ssl::stream_base::client, [this, self = session_.self()](error_code ec) {
        if (session_.finished()) return;
        if (ec)
          return fail_upstream("the TLS handshake with " + host_ +
                               " failed: " + tls_failure(upstream_.native_handle(), ec.message()));
        read_request();
      });
}

// The sandbox already has TLS with us: it gets a 502 naming why, inside that TLS, once it
// has sent its request (answering before would race its write: a reset loses the answer).
void HeaderInjector::fail_upstream(const std::string& why) {
  session_.expire_after(std::chrono::seconds(5), why);  // a client that does not go on
  request_.emplace();
  request_->header_limit(session_.policy().limits().max_header_bytes);
  http::async_read_header(client_, client_buffer_, *request_,
                          [this, self = session_.self(), why](error_code, std::size_t) {
                            if (session_.finished()) return;
                            answer("502 Bad Gateway", why);
                          });
}

// The proxy's own answer, "airlock egress proxy: <reason>: <why>.", then the end.
void HeaderInjector::answer(const std::string& status, const std::string& why) {
  session_.expire_after(std::chrono::seconds(5), why);  // a reader that does not read
  std::string body = "airlock egress proxy: " + status.substr(4) + ": " + why + ".\n";
  answer_ = "HTTP/1.1 " + status + "\r\nContent-Type: text/plain\r\nConnection: close\r\n" +
            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  asio::async_write(client_, asio::buffer(answer_),
                    [this, self = session_.self(), why](error_code, std::size_t) {
                      close_client(why);
                    });
}

// Ends TLS with the sandbox (close_notify), then the session.
void HeaderInjector::close_client(const std::string& why) {
  if (session_.finished()) return;
  client_.async_shutdown([this, self = session_.self(), why](error_code) { session_.finish(why); });
}

void HeaderInjector::idle_deadline() {
  session_.expire_after(session_.policy().limits().idle_timeout, "idle timeout");
}

void HeaderInjector::read_request() {
  const auto& limits = session_.policy().limits();
  request_.emplace();
  request_->header_limit(limits.max_header_bytes);
  request_->body_limit(std::numeric_limits<std::uint64_t>::max());  // the byte budget bounds it
  idle_deadline();
  http::async_read_header(
      client_, client_buffer_, *request_,
      [this, self = session_.self()](error_code ec, std::size_t) {
        if (session_.finished()) return;
        if (ec == http::error::end_of_stream || ec == asio::error::eof ||
            ec == ssl::error::stream_truncated)
          return session_.finish();  // the sandbox is done
        if (ec == http::error::header_limit)
          return session_.finish("a request head is larger than " +
                                 std::to_string(session_.policy().limits().max_header_bytes) +
                                 " bytes");
        if (ec) return session_.finish("malformed request: " + ec.message());
        on_request();
      });
}

// Sets the headers: each replaces every field of its name the sandbox sent (its placeholder).
// The value is for the verified host only: a Host header or an absolute URI naming another
// would let a front end shared by many hosts (a CDN) route it elsewhere, so the target must
// be in origin form and Host is set to the injected host.
void HeaderInjector::on_request() {
  auto& message = request_->get();
  auto target = message.target();
  if (target.empty() || (target.front() != '/' && target != "*"))
    return answer("400 Bad Request", "a request to an injected host must have a path as target");
  message.set(http::field::host, port_ == 443 ? host_ : host_ + ":" + std::to_string(port_));
  for (const auto* in : injections_) message.set(in->header, in->value);
  request_out_.emplace(message);
  send_message(client_, client_buffer_, *request_, upstream_, *request_out_, true,
               [this] { read_response(); });
}

void HeaderInjector::read_response() {
  response_.emplace();
  response_->header_limit(session_.policy().limits().max_header_bytes);
  response_->body_limit(std::numeric_limits<std::uint64_t>::max());
  if (request_->get().method() == http::verb::head) response_->skip(true);
  idle_deadline();
  http::async_read_header(
      upstream_, upstream_buffer_, *response_,
      [this, self = session_.self()](error_code ec, std::size_t) {
        if (session_.finished()) return;
        if (ec == http::error::header_limit)
          return session_.finish("a response head from " + host_ + " is too large");
        if (ec) return session_.finish("no response from " + host_ + ": " + ec.message());
        on_response();
      });
}

void HeaderInjector::on_response() {
  auto& message = response_->get();
  // A protocol switch would turn the rest into bytes we do not read as HTTP.
  if (message.result() == http::status::switching_protocols)
    return session_.finish("protocol upgrades are not relayed on an intercepted connection");
  const bool interim = message.result_int() < 200;  // 100 Continue, 103: the final one follows
  response_out_.emplace(message);
  send_message(upstream_, upstream_buffer_, *response_, client_, *response_out_, false,
               [this, interim] { interim ? read_response() : end_exchange(); });
}

// After a final response: the next request on a kept-alive connection, or the end.
void HeaderInjector::end_exchange() {
  if (request_->get().keep_alive() && response_->get().keep_alive()) return read_request();
  session_.expire_after(std::chrono::seconds(1), "");
  close_client("");
}

// Writes the head, then the body as it arrives, until the message is complete.
template <class From, class Parser, class To, class Serializer>
void HeaderInjector::send_message(From& from, beast::flat_buffer& buffer, Parser& parser, To& to,
                                  Serializer& serializer, bool upward, Next next) {
  http::async_write_header(to, serializer,
                           [this, self = session_.self(), &from, &buffer, &parser, &to, &serializer,
                            upward, next = std::move(next)](error_code ec, std::size_t n) mutable {
                             if (!sent(ec, n, upward)) return;
                             pump_body(from, buffer, parser, to, serializer, upward,
                                       std::move(next));
                           });
}

// One piece of body: read up to kBodyChunk (none once the parser is done, which tells the
// serializer to finish), write it, and again until the serializer is done.
template <class From, class Parser, class To, class Serializer>
void HeaderInjector::pump_body(From& from, beast::flat_buffer& buffer, Parser& parser, To& to,
                               Serializer& serializer, bool upward, Next next) {
  if (serializer.is_done()) return next();
  auto write = [this, self = session_.self(), &from, &buffer, &parser, &to, &serializer, upward,
                next](error_code ec, std::size_t n) mutable {
    if (ec == http::error::need_buffer) ec = {};
    if (!sent(ec, n, upward)) return;
    pump_body(from, buffer, parser, to, serializer, upward, std::move(next));
  };
  auto& body = parser.get().body();
  if (parser.is_done()) {
    body.data = nullptr;
    body.size = 0;
    body.more = false;
    return http::async_write(to, serializer, std::move(write));
  }
  body.data = chunk_.get();
  body.size = kBodyChunk;
  idle_deadline();
  http::async_read(from, buffer, parser,
                   [this, self = session_.self(), &parser, &to, &serializer, upward,
                    write = std::move(write)](error_code ec, std::size_t) mutable {
                     if (session_.finished()) return;
                     if (ec == http::error::need_buffer) ec = {};
                     if (ec)
                       return session_.finish(std::string(upward ? "the sandbox" : "the upstream") +
                                              " ended a message early: " + ec.message());
                     auto& b = parser.get().body();
                     b.size = kBodyChunk - b.size;
                     b.data = chunk_.get();
                     b.more = !parser.is_done();
                     http::async_write(to, serializer, std::move(write));
                   });
}

// Counts what was written against the byte budgets; false (the session ended) on an error
// or a spent budget. Counted after the write, so a message may pass the budget by at most
// one piece (a head, or kBodyChunk of body and its chunk framing).
bool HeaderInjector::sent(error_code ec, std::size_t n, bool upward) {
  if (session_.finished()) return false;
  if (ec) {
    session_.finish(std::string(upward ? "the upstream" : "the sandbox") +
                    " closed: " + ec.message());
    return false;
  }
  idle_deadline();
  if (upward ? session_.count_up(n) : session_.count_down(n)) return true;
  session_.finish(std::string("the sandbox's egress byte budget (") + (upward ? "up" : "down") +
                  ") is spent");
  return false;
}

}  // namespace

void Session::intercept(std::string client_bytes) {
  if (!tenant_->ca || !tenant_->upstream_tls)
    return finish("header injection without an interception CA");
  auto server = tenant_->ca->server_context(injections_.front()->host);
  if (!server) return finish(server.error().message);
  interception_ =
      std::make_unique<HeaderInjector>(*this, injections_, std::move(*server), tenant_->upstream_tls);
  last_activity_ = Clock::now();
  interception_->start(std::move(client_bytes));
}

}  // namespace airlock::egress
