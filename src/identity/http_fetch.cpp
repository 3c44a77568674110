#include "identity/http_fetch.hpp"

#include "common/http_url.hpp"
#include "common/percent_encoding.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <optional>
#include <type_traits>

namespace airlock::identity {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

Error failed(const std::string& why) {
  return Error::make("fetch_failed", why);
}

using Url = HttpUrl;

// The URL by the one parser (common/http_url.hpp) that the config's checks use too.
Result<Url> parse_url(const std::string& url, const std::string& what) {
  auto parsed = parse_http_url(url);
  if (!parsed) return failed(what + ": " + parsed.error().message);
  return *parsed;
}

// One request over `stream` (a tcp_stream or an ssl_stream over one), run to completion on `io`.
template <typename Stream>
Result<FetchResponse> exchange(asio::io_context& io, Stream& stream, beast::tcp_stream& socket,
                               const Url& url, const tcp::resolver::results_type& endpoints,
                               const FetchRequest& request, const FetchOptions& options) {
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  error_code result;
  std::string stage = "connect";
  beast::flat_buffer buffer;
  http::request<http::string_body> req{http::string_to_verb(request.method), url.target, 11};
  req.set(http::field::host, url.authority());
  req.set(http::field::accept, "application/json");
  req.set(http::field::user_agent, "airlock");
  for (const auto& [name, value] : request.headers) req.set(name, value);
  req.body() = request.body;
  if (req.method() != http::verb::get || !req.body().empty()) req.prepare_payload();
  http::response_parser<http::string_body> parser;
  parser.body_limit(options.max_bytes);
  auto on_read = [&](error_code ec, std::size_t) { result = ec; };
  auto on_write = [&](error_code ec, std::size_t) {
    if (ec) {
      result = ec;
      return;
    }
    stage = "read";
    socket.expires_at(deadline);
    http::async_read(stream, buffer, parser, on_read);
  };
  auto send = [&] {
    stage = "write";
    socket.expires_at(deadline);
    http::async_write(stream, req, on_write);
  };
  auto on_handshake = [&](error_code ec) {
    if (ec) {
      result = ec;
      return;
    }
    send();
  };
  socket.expires_at(deadline);
  socket.async_connect(endpoints, [&](error_code ec, const tcp::endpoint&) {
    if (ec) {
      result = ec;
      return;
    }
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      send();
    } else {
      stage = "TLS handshake";
      socket.expires_at(deadline);
      stream.async_handshake(asio::ssl::stream_base::client, on_handshake);
    }
  });
  io.run();
  if (result == http::error::body_limit) return failed(request.what + " answered more than the size limit");
  if (result) return failed(request.what + ": " + stage + " failed: " + result.message());
  const int status = parser.get().result_int();
  return FetchResponse{status, parser.release().body()};
}

Result<FetchResponse> https_request(asio::io_context& io, const Url& url,
                                    const tcp::resolver::results_type& endpoints,
                                    const FetchRequest& request, const FetchOptions& options) {
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  error_code ec;
  ctx.set_options(asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  if (options.ca_file.empty())
    ctx.set_default_verify_paths(ec);
  else
    ctx.load_verify_file(options.ca_file, ec);
  if (ec) return failed("cannot load the CA certificates: " + ec.message());
  ctx.set_verify_mode(asio::ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
  stream.set_verify_callback(asio::ssl::host_name_verification(url.host));
  if (SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str()) != 1)
    return failed("cannot set the TLS server name");
  return exchange(io, stream, beast::get_lowest_layer(stream), url, endpoints, request, options);
}

}  // namespace

Result<FetchResponse> http_request(const FetchRequest& request, const FetchOptions& options) {
  if (http::string_to_verb(request.method) == http::verb::unknown)
    return failed("unknown HTTP method " + request.method);
  auto url = parse_url(request.url, request.what);
  if (!url) return url.error();
  asio::io_context io;
  tcp::resolver resolver(io);
  error_code ec;
  // Names resolve synchronously: these URLs are configured by the operator, not by requesters.
  auto endpoints = resolver.resolve(url->host, url->port, ec);
  if (ec) return failed("cannot resolve the host of " + request.what + ": " + ec.message());
  if (url->tls) return https_request(io, *url, endpoints, request, options);
  beast::tcp_stream stream(io);
  return exchange(io, stream, stream, *url, endpoints, request, options);
}

std::string form_urlencode(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [name, value] : fields)
    out += (out.empty() ? "" : "&") + percent_encode(name) + "=" + percent_encode(value);
  return out;
}

Result<FetchResponse> http_post_form(const std::string& url,
                                     const std::vector<std::pair<std::string, std::string>>& fields,
                                     std::vector<std::pair<std::string, std::string>> headers,
                                     const std::string& what, const FetchOptions& options) {
  headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  return http_request(FetchRequest{"POST", url, std::move(headers), form_urlencode(fields), what}, options);
}

Result<std::string> http_get(const std::string& url, const FetchOptions& options) {
  auto answer = http_request(FetchRequest{"GET", url, {}, "", "the JWKS URL"}, options);
  if (!answer) return answer.error();
  if (answer->status != 200) return failed("the JWKS URL answered HTTP " + std::to_string(answer->status));
  return std::move(answer->body);
}

}  // namespace airlock::identity
