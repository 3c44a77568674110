#include "http_client.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace airlock::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct HttpClient::Impl {
  std::uint16_t port;
  asio::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;

  Result<HttpReply> exchange(http::request<http::string_body>& req) {
    req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
    req.keep_alive(true);
    req.prepare_payload();
    beast::error_code ec;
    http::write(stream, req, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    if (!ec) http::read(stream, buffer, parser, ec);
    if (ec) return Error::make("http", std::string(req.target()) + ": " + ec.message());
    const auto& res = parser.get();
    return HttpReply{static_cast<int>(res.result_int()), std::string(res[http::field::content_type]),
                     std::string(res["Mcp-Session-Id"]), res.body()};
  }
};

HttpClient::HttpClient(std::uint16_t port) : impl_(std::make_unique<Impl>()) {
  impl_->port = port;
}
HttpClient::~HttpClient() = default;

Status HttpClient::connect() {
  beast::error_code ec;
  impl_->stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), impl_->port),
                        ec);
  if (ec)
    return Error::make("connect", "127.0.0.1:" + std::to_string(impl_->port) + ": " + ec.message());
  return {};
}

Result<HttpReply> HttpClient::post(const std::string& target, const std::string& body,
                                   const std::map<std::string, std::string>& headers) {
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) req.set(name, value);
  req.body() = body;
  return impl_->exchange(req);
}

Result<HttpReply> HttpClient::get(const std::string& target) {
  http::request<http::string_body> req{http::verb::get, target, 11};
  return impl_->exchange(req);
}

}  // namespace airlock::bench
