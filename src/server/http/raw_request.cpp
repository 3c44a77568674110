// The server's parser and answer without a socket (http_server.hpp, handle_raw_request): what
// the fuzz target and tests drive. Beast's parser only; none of the connections' Asio code.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <sstream>

#include "server/http/beast_message.hpp"
#include "server/http/body_stream.hpp"
#include "server/http/http_server.hpp"

namespace airlock::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

std::string head_text(http::response<http::empty_body>& head) {
  http::response_serializer<http::empty_body> sr{head};
  sr.split(true);
  std::string out;
  error_code ec;
  while (!ec && !sr.is_header_done()) {
    sr.next(ec, [&](error_code& e, const auto& buffers) {
      e = {};
      out += beast::buffers_to_string(buffers);
      sr.consume(beast::buffer_bytes(buffers));
    });
  }
  return out;
}

// No socket to watch: the collection stops where a client would have stopped waiting.
std::string raw_stream_answer(const HttpResponse& resp, bool head_only) {
  auto head = stream_head(resp, false, 11);
  std::string out = head_text(head);
  if (head_only) {
    resp.stream(gone_writer());
    return out;
  }
  return out + collect_chunked(resp.stream, std::chrono::seconds(2), 1u << 20);
}

}  // namespace

std::string handle_raw_request(const RequestHandler& handler, const std::string& bytes,
                               std::uint64_t max_body_bytes) {
  http::request_parser<http::string_body> parser;
  parser.body_limit(max_body_bytes);
  parser.header_limit(16 * 1024);
  parser.eager(true);
  error_code ec;
  parser.put(asio::buffer(bytes), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  HttpResponse resp;
  if (ec || !parser.is_done()) {
    resp = parse_failure(ec ? ec : http::error::partial_message, max_body_bytes);
  } else {
    std::promise<HttpResponse> answer;
    handler(to_request(parser.get(), parser.get().body()),
            [&answer](HttpResponse r) { answer.set_value(std::move(r)); });
    resp = answer.get_future().get();
  }
  const bool head_only = !ec && parser.is_done() && parser.get().method() == http::verb::head;
  if (resp.websocket)  // no connection to upgrade
    resp = error_response(400, "websocket_unavailable", "a WebSocket needs a connection");
  if (resp.stream) return raw_stream_answer(resp, head_only);
  std::ostringstream out;
  out << to_beast(resp, false, 11, head_only);
  return out.str();
}

}  // namespace airlock::server
