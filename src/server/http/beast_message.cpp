#include "server/http/beast_message.hpp"

#include <cctype>

#include "server/http/body_stream.hpp"

namespace airlock::server {
namespace {

namespace http = boost::beast::http;
using boost::system::error_code;

// The response's own headers. Set-Cookie may come more than once (one cookie each: the console's
// OpenID callback sets its session and clears its login cookie); any other name is set once.
template <class Message>
void add_headers(Message& out, const HttpResponse& resp) {
  for (const auto& [k, v] : resp.headers) {
    if (boost::beast::iequals(k, "set-cookie")) out.insert(k, v);
    else out.set(k, v);
  }
}

}  // namespace

HttpRequest to_request(const http::request_header<>& req, std::string body, std::string peer,
                       std::optional<PeerCertificate> client_certificate) {
  HttpRequest r;
  r.peer = std::move(peer);
  r.client_certificate = std::move(client_certificate);
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  for (const auto& f : req) {
    std::string name(f.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  r.body = std::move(body);
  return r;
}

http::response<http::string_body> to_beast(const HttpResponse& resp, bool keep_alive,
                                           unsigned version, bool head_only) {
  http::response<http::string_body> out{static_cast<http::status>(resp.status), version};
  out.set(http::field::server, "airlock");
  out.set(http::field::content_type, resp.content_type);
  add_headers(out, resp);
  out.keep_alive(keep_alive);
  out.body() = resp.body;
  out.prepare_payload();
  if (head_only) out.body().clear();
  return out;
}

http::response<http::empty_body> stream_head(const HttpResponse& resp, bool keep_alive,
                                             unsigned version) {
  http::response<http::empty_body> out{static_cast<http::status>(resp.status), version};
  out.set(http::field::server, "airlock");
  out.set(http::field::content_type, resp.content_type);
  add_headers(out, resp);
  out.keep_alive(keep_alive && version >= 11);
  if (version >= 11) out.chunked(true);
  return out;
}

std::shared_ptr<BodyWriter> gone_writer() {
  auto writer = std::make_shared<BodyStream>(nullptr, 0);
  writer->client_gone();
  return writer;
}

HttpResponse parse_failure(const error_code& ec, std::uint64_t max_body) {
  if (ec == http::error::body_limit)
    return error_response(413, "body_too_large", "the request body is larger than " + std::to_string(max_body) + " bytes");
  if (ec == http::error::header_limit) return error_response(431, "headers_too_large", "the request head is too large");
  return error_response(400, "malformed_request", "malformed HTTP request: " + ec.message());
}

}  // namespace airlock::server
