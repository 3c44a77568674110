// Between Beast's messages and the daemon's own (http_message.hpp): a parsed request head to an
// HttpRequest, an HttpResponse to the response (or, for a streamed answer, the head) to write,
// and the answer to a request the parser refused. Shared by the server's connections
// (http_server.cpp) and the socket-less path of the fuzz target and tests (raw_request.cpp).
#pragma once

#include <boost/beast/http.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "server/http/http_message.hpp"
#include "server/http/peer_certificate.hpp"

namespace airlock::server {

HttpRequest to_request(const boost::beast::http::request_header<>& req, std::string body, std::string peer = "",
                       std::optional<PeerCertificate> client_certificate = std::nullopt);

// `head_only`: the answer to a HEAD request, with the GET answer's headers (Content-Length
// too) and no body.
boost::beast::http::response<boost::beast::http::string_body> to_beast(const HttpResponse& resp, bool keep_alive,
                                                                       unsigned version, bool head_only = false);

// The head of a streamed answer: chunked on HTTP/1.1; on 1.0 the body ends with the connection.
boost::beast::http::response<boost::beast::http::empty_body> stream_head(const HttpResponse& resp, bool keep_alive,
                                                                         unsigned version);

// A writer whose client has already gone: for a stream that will not be sent (HEAD, a head
// that could not be written).
std::shared_ptr<BodyWriter> gone_writer();

// 413, 431 or 400, from the parser's error.
HttpResponse parse_failure(const boost::system::error_code& ec, std::uint64_t max_body);

}  // namespace airlock::server
