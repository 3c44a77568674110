#include "server/http/upstream_client.hpp"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <functional>
#include <type_traits>

#include "common/http_url.hpp"

namespace airlock::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

struct UpstreamClient::Impl {
  Options options;
  asio::ssl::context tls{asio::ssl::context::tls_client};
};

namespace {

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

constexpr std::size_t kPieceBytes = 64 * 1024;

// Headers of one connection (RFC 9110 7.6.1), and the framing each side sets for itself.
bool end_to_end(beast::string_view name) {
  static constexpr const char* kOwn[] = {"connection", "keep-alive",        "proxy-connection", "proxy-authenticate",
                                         "proxy-authorization", "te",       "trailer",          "transfer-encoding",
                                         "upgrade",    "content-length",    "host",             "expect"};
  return std::none_of(std::begin(kOwn), std::end(kOwn), [&](const char* own) { return beast::iequals(own, name); });
}

// Runs `io` until `done()`, or until `deadline` passes (none: no limit; a SocketBreaker still
// ends what waits); false when it stopped before `done()`.
bool run_until(asio::io_context& io, const std::function<bool()>& done, std::optional<Clock::time_point> deadline) {
  while (!done()) {
    if (io.stopped()) io.restart();
    const std::size_t ran = deadline ? io.run_one_until(*deadline) : io.run_one();
    if (ran == 0) return done();
  }
  return true;
}

// One asynchronous operation's outcome, kept by the conversation: a handler that runs after
// its caller gave up (a timeout, an early answer) still writes somewhere alive.
struct Op {
  bool done = false;
  error_code ec;
  void start() { *this = Op{}; }
  auto handler() {
    return [this](error_code e, auto&&...) {
      ec = e;
      done = true;
    };
  }
};

struct IoHolder {
  asio::io_context io;
};

// The certificate must carry `name` (a DNS name or an IP address); a DNS name also goes into
// SNI (RFC 6066 has no IP literals).
void expect_name(SSL* ssl, const std::string& name) {
  error_code not_ip;
  (void)asio::ip::make_address(name, not_ip);
  if (!not_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
    return;
  }
  SSL_set_tlsext_host_name(ssl, name.c_str());
  SSL_set1_host(ssl, name.c_str());
}

template <class Stream>
class Conversation final : IoHolder, public UpstreamExchange {
 public:
  Conversation(UpstreamClient::Impl& client, HttpUrl url, SocketBreaker* breaker, bool head_only)
      : client_(client), url_(std::move(url)), where_(std::string(url_.tls ? "https://" : "http://") + url_.authority()),
        breaker_(breaker), stream_(make_stream()), sr_(req_) {
    parser_.body_limit(boost::none);  // a file of any size goes through, a piece at a time
    if (head_only) parser_.skip(true);
  }
  ~Conversation() override {
    if (breaker_) breaker_->detach();
    error_code ignored;
    beast::get_lowest_layer(stream_).socket().close(ignored);
  }

  Status open();
  Status send(const UpstreamRequest& request);
  Status await_head();
  const UpstreamHead& head() const override { return head_; }
  Result<std::string> read_some() override;

 private:
  Stream make_stream() {
    if constexpr (std::is_same_v<Stream, TlsStream>) return Stream(io, client_.tls);
    else return Stream(io);
  }
  Error unreachable(const std::string& step, const error_code& ec) const {
    return Error::make("upstream_unreachable", where_ + ": " + step + " failed: " + ec.message());
  }
  Error broke(const std::string& step, const error_code& ec) const {
    return Error::make("upstream_failed", where_ + ": " + step + " failed: " + ec.message());
  }
  Status handshake(Clock::time_point deadline);
  void prepare_head(const UpstreamRequest& request);
  Status write(std::function<void()> start, const std::string& step);
  Status send_body(const UpstreamRequest& request);
  void take_head();

  UpstreamClient::Impl& client_;
  const HttpUrl url_;
  const std::string where_;  // scheme://host:port, for messages
  SocketBreaker* breaker_;
  Stream stream_;
  http::request<http::buffer_body> req_;
  http::request_serializer<http::buffer_body> sr_;
  beast::flat_buffer buffer_;
  http::response_parser<http::buffer_body> parser_;
  std::vector<char> piece_ = std::vector<char>(kPieceBytes);
  std::string sending_;  // the request body's piece being written
  Op connect_op_, write_op_, head_op_, read_op_;
  UpstreamHead head_;
};

template <class Stream>
Status Conversation<Stream>::open() {
  if (breaker_ && breaker_->broken()) return Error::make("upstream_unreachable", where_ + ": cut before connecting");
  const auto deadline = Clock::now() + client_.options.connect_timeout;
  tcp::resolver resolver(io);
  error_code ec;
  // Synchronous: the address is a replica's own, from the shared database, not a requester's.
  auto endpoints = resolver.resolve(url_.host, url_.port, ec);
  if (ec) return unreachable("resolving " + url_.host, ec);
  auto& socket = beast::get_lowest_layer(stream_);
  connect_op_.start();
  socket.async_connect(endpoints, connect_op_.handler());
  if (!run_until(io, [&] { return connect_op_.done; }, deadline))
    return unreachable("connecting", asio::error::timed_out);
  if (connect_op_.ec) return unreachable("connecting", connect_op_.ec);
  if (breaker_) breaker_->attach(socket.socket().native_handle());
  if constexpr (std::is_same_v<Stream, TlsStream>) return handshake(deadline);
  return {};
}

template <class Stream>
Status Conversation<Stream>::handshake(Clock::time_point deadline) {
  const std::string& name = client_.options.server_name.empty() ? url_.host : client_.options.server_name;
  expect_name(stream_.native_handle(), name);
  connect_op_.start();
  stream_.async_handshake(asio::ssl::stream_base::client, connect_op_.handler());
  if (!run_until(io, [&] { return connect_op_.done; }, deadline))
    return unreachable("the TLS handshake", asio::error::timed_out);
  if (!connect_op_.ec) return {};
  const long verify = SSL_get_verify_result(stream_.native_handle());
  if (verify != X509_V_OK)
    return Error::make("upstream_unreachable", where_ + ": its certificate is not one of a replica's (the name " +
                                                   name + ", server.tls.replicaCAFile): " +
                                                   X509_verify_cert_error_string(verify));
  return unreachable("the TLS handshake", connect_op_.ec);
}

// The head: the method and target as received, the caller's end-to-end headers, the body's
// framing (its length when known, else chunked).
template <class Stream>
void Conversation<Stream>::prepare_head(const UpstreamRequest& request) {
  req_.version(11);
  req_.method_string(request.method);
  req_.target(request.target);
  req_.set(http::field::host, url_.authority());
  for (const auto& [name, value] : request.headers)
    if (end_to_end(name)) req_.insert(name, value);
  if (request.body_reader) {
    if (auto length = request.body_reader->length()) req_.content_length(*length);
    else req_.chunked(true);
  } else if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
             request.method == "PATCH") {
    req_.content_length(request.body.size());
  }
  req_.body().data = nullptr;
  req_.body().more = true;
}

// One write within the send timeout; it ends early, successfully, when the answer's head
// arrives meanwhile (the server answered before it took the whole body).
template <class Stream>
Status Conversation<Stream>::write(std::function<void()> start, const std::string& step) {
  write_op_.start();
  start();
  if (!run_until(io, [&] { return write_op_.done || head_op_.done; }, Clock::now() + client_.options.send_timeout))
    return broke(step, asio::error::timed_out);
  if (write_op_.done && write_op_.ec && write_op_.ec != http::error::need_buffer) return broke(step, write_op_.ec);
  return {};
}

template <class Stream>
Status Conversation<Stream>::send(const UpstreamRequest& request) {
  prepare_head(request);
  head_op_.start();
  http::async_read_header(stream_, buffer_, parser_, head_op_.handler());
  if (auto s = write([&] { http::async_write_header(stream_, sr_, write_op_.handler()); }, "sending the request"); !s)
    return s;
  if (sr_.is_done() || head_op_.done) return {};
  return send_body(request);
}

template <class Stream>
Status Conversation<Stream>::send_body(const UpstreamRequest& request) {
  bool last = false;
  while (!last && !head_op_.done && write_op_.done) {
    if (request.body_reader) {
      auto piece = request.body_reader->read();
      if (!piece) return Error::make("request_body", "the request's body: " + piece.error().message);
      sending_ = std::move(*piece);
    } else {
      sending_ = request.body;
    }
    last = sending_.empty() || !request.body_reader;
    if (sr_.is_done()) break;  // a declared length, all sent
    req_.body().data = sending_.empty() ? nullptr : sending_.data();
    req_.body().size = sending_.size();
    req_.body().more = !last;
    if (auto s = write([&] { http::async_write(stream_, sr_, write_op_.handler()); }, "sending the request's body"); !s)
      return s;
    if (last && !sr_.is_done() && !head_op_.done && write_op_.done) {  // the chunked body's end
      req_.body().data = nullptr;
      req_.body().size = 0;
      req_.body().more = false;
      if (auto s = write([&] { http::async_write(stream_, sr_, write_op_.handler()); }, "ending the request"); !s)
        return s;
    }
  }
  return {};
}

template <class Stream>
Status Conversation<Stream>::await_head() {
  run_until(io, [&] { return head_op_.done; }, std::nullopt);
  if (!head_op_.done) return broke("reading the answer", asio::error::operation_aborted);
  if (head_op_.ec) return broke("reading the answer", head_op_.ec);
  take_head();
  return {};
}

template <class Stream>
void Conversation<Stream>::take_head() {
  const auto& res = parser_.get();
  head_.status = static_cast<int>(res.result_int());
  head_.content_type = std::string(res[http::field::content_type]);
  for (const auto& field : res)
    if (end_to_end(field.name_string()) && !beast::iequals(field.name_string(), "content-type") &&
        !beast::iequals(field.name_string(), "server"))
      head_.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  if (!parser_.chunked() && parser_.content_length()) head_.length = *parser_.content_length();
}

template <class Stream>
Result<std::string> Conversation<Stream>::read_some() {
  while (!parser_.is_done()) {
    parser_.get().body().data = piece_.data();
    parser_.get().body().size = piece_.size();
    read_op_.start();
    http::async_read_some(stream_, buffer_, parser_, read_op_.handler());
    run_until(io, [&] { return read_op_.done; }, std::nullopt);
    if (!read_op_.done) return broke("reading the answer's body", asio::error::operation_aborted);
    if (read_op_.ec && read_op_.ec != http::error::need_buffer) return broke("reading the answer's body", read_op_.ec);
    const std::size_t n = piece_.size() - parser_.get().body().size;
    if (n > 0) return std::string(piece_.data(), n);
  }
  return std::string();
}

template <class Stream>
Result<std::unique_ptr<UpstreamExchange>> converse(UpstreamClient::Impl& client, const HttpUrl& url,
                                                   const UpstreamRequest& request, SocketBreaker* breaker) {
  auto c = std::make_unique<Conversation<Stream>>(client, url, breaker, request.method == "HEAD");
  if (auto s = c->open(); !s) return s.error();
  if (auto s = c->send(request); !s) return s.error();
  if (auto s = c->await_head(); !s) return s.error();
  return std::unique_ptr<UpstreamExchange>(std::move(c));
}

}  // namespace

UpstreamClient::UpstreamClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UpstreamClient::~UpstreamClient() = default;

Result<std::unique_ptr<UpstreamClient>> UpstreamClient::create(Options options) {
  auto impl = std::make_unique<Impl>();
  SSL_CTX_set_min_proto_version(impl->tls.native_handle(), TLS1_2_VERSION);
  error_code ec;
  if (options.ca_file.empty()) impl->tls.set_default_verify_paths(ec);
  else impl->tls.load_verify_file(options.ca_file, ec);
  if (ec)
    return Error::make("config", "cannot load the CA certificates " +
                                     (options.ca_file.empty() ? std::string("of the system") : options.ca_file) + ": " +
                                     ec.message());
  impl->tls.set_verify_mode(asio::ssl::verify_peer);
  impl->options = std::move(options);
  return std::unique_ptr<UpstreamClient>(new UpstreamClient(std::move(impl)));
}

Result<std::unique_ptr<UpstreamExchange>> UpstreamClient::exchange(const std::string& base_url,
                                                                   const UpstreamRequest& request,
                                                                   SocketBreaker* breaker) {
  auto url = parse_http_url(base_url);
  if (!url) return Error::make("upstream_unreachable", "the address '" + base_url + "': " + url.error().message);
  if (url->tls) return converse<TlsStream>(*impl_, *url, request, breaker);
  return converse<PlainStream>(*impl_, *url, request, breaker);
}

}  // namespace airlock::server
