#include "cli/keep_alive_connection.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace airlock::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr std::size_t kChunkBytes = 64 * 1024;

std::string media_type(std::string_view content_type) {
  std::string type(content_type.substr(0, content_type.find(';')));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  return type;
}

}  // namespace

Status KeepAliveConnection::refuse_if_aborted() {
  if (!aborted_) return {};
  close();
  return Error::make("connection", "the connection to " + server_.authority + " was closed");
}

Status KeepAliveConnection::open() {
  if (aborted_) return Error::make("connection", "the connection to " + server_.authority + " was closed");
  try {
    asio::ip::tcp::resolver resolver(io_);
    const auto endpoints = resolver.resolve(server_.host, server_.port);
    if (!server_.tls) {
      plain_.emplace(io_);
      plain_->connect(endpoints);
      plain_->socket().set_option(asio::ip::tcp::no_delay(true));
      socket_fd_ = plain_->socket().native_handle();
      return refuse_if_aborted();
    }
    secure_.emplace(io_, *tls_);
    expect_server_name(secure_->native_handle(), server_.host);
    beast::get_lowest_layer(*secure_).connect(endpoints);
    beast::get_lowest_layer(*secure_).socket().set_option(asio::ip::tcp::no_delay(true));
    socket_fd_ = beast::get_lowest_layer(*secure_).socket().native_handle();
    if (auto s = refuse_if_aborted(); !s) return s;
    boost::system::error_code ec;
    secure_->handshake(asio::ssl::stream_base::client, ec);
    if (ec) {
      const std::string why = handshake_failure(secure_->native_handle(), ec);
      close();
      return Error::make("tls", "TLS handshake with " + server_.authority + " failed: " + why);
    }
    return {};
  } catch (const boost::system::system_error& e) {
    close();
    return Error::make("connection", "cannot reach " + server_.authority + ": " + e.code().message());
  }
}

void KeepAliveConnection::close() {
  socket_fd_ = -1;
  plain_.reset();
  secure_.reset();
  buffer_.clear();
}

// abort() sets the flag, then shuts the socket down; open() publishes the socket, then tests
// the flag: whichever comes second sees the other's.
void KeepAliveConnection::abort() {
  aborted_ = true;
  const int fd = socket_fd_.load();
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

template <class Stream>
Status KeepAliveConnection::exchange_on(Stream& stream, http::request<http::string_body>& req,
                                        const OnHead& on_head, const OnBody& on_body, bool& answer_started) {
  http::write(stream, req);
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);  // an event stream has no end known ahead; on_body bounds it
  http::read_header(stream, buffer_, parser);
  answer_started = true;
  AnswerHead head;
  head.status = static_cast<int>(parser.get().result_int());
  head.content_type = media_type(parser.get()[http::field::content_type]);
  head.fields = parser.get().base();
  on_head(head);
  std::vector<char> chunk(kChunkBytes);
  bool wanted = true;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    boost::system::error_code ec;
    http::read_some(stream, buffer_, parser, ec);  // what has come: an event is passed on at once
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
    const std::size_t n = chunk.size() - parser.get().body().size;
    if (n > 0 && !on_body(std::string_view(chunk.data(), n))) {
      wanted = false;
      break;
    }
  }
  if (!wanted || !parser.keep_alive()) close();
  return {};
}

Status KeepAliveConnection::exchange(http::request<http::string_body>& req, const OnHead& on_head,
                                     const OnBody& on_body) {
  req.set(http::field::host, server_.authority);
  req.keep_alive(true);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = plain_ || secure_;
    if (!reused)
      if (auto opened = open(); !opened) return opened;
    bool answer_started = false;
    try {
      if (plain_) return exchange_on(*plain_, req, on_head, on_body, answer_started);
      return exchange_on(*secure_, req, on_head, on_body, answer_started);
    } catch (const boost::system::system_error& e) {
      close();
      // A kept-alive connection the server closed while idle fails before any answer: the
      // request was not read, and goes again on a new connection.
      if (reused && !answer_started) continue;
      return Error::make("connection", "the connection to " + server_.authority + " failed: " + e.code().message());
    }
  }
  return Error::make("connection", "cannot reach " + server_.authority);
}

}  // namespace airlock::cli
