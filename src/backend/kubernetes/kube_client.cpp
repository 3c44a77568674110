#include "backend/kubernetes/kube_client.hpp"

#include <boost/asio/connect.hpp>
#include <openssl/x509v3.h>

#include "backend/kubernetes/kube_connection.hpp"

namespace airlock::backend::kubernetes {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string KubeResponse::status_message() const {
  auto parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status" && parsed.contains("message"))
    return parsed["message"].get<std::string>();
  return body.substr(0, 200);
}

KubeClient::KubeClient(KubeEndpoint endpoint) : endpoint_(std::move(endpoint)), tls_(new Tls) {
  tls_->context.set_verify_mode(asio::ssl::verify_peer);
  tls_->context.add_certificate_authority(asio::buffer(endpoint_.ca_pem));
  if (!endpoint_.client_cert_pem.empty()) {
    tls_->context.use_certificate_chain(asio::buffer(endpoint_.client_cert_pem));
    tls_->context.use_private_key(asio::buffer(endpoint_.client_key_pem), asio::ssl::context::pem);
  }
}

KubeClient::~KubeClient() { delete tls_; }

namespace {

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

Result<std::unique_ptr<Stream>> connect(asio::io_context& io, asio::ssl::context& context,
                                        const KubeEndpoint& endpoint) {
  auto stream = std::make_unique<Stream>(io, context);
  SSL* ssl = stream->native_handle();
  if (is_ip_address(endpoint.host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), endpoint.host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, endpoint.host.c_str());
    SSL_set1_host(ssl, endpoint.host.c_str());
  }
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  auto addresses = resolver.resolve(endpoint.host, endpoint.port, ec);
  const std::string where = endpoint.host + ":" + endpoint.port;
  if (ec) return Error::make("kubernetes", "cannot resolve the API server " + where + ": " + ec.message());
  bool connected = false;
  beast::get_lowest_layer(*stream).expires_after(kIoTimeout);
  beast::get_lowest_layer(*stream).async_connect(addresses, [&](boost::system::error_code e, const tcp::endpoint&) {
    ec = e;
    if (e) return;
    connected = true;
    stream->async_handshake(asio::ssl::stream_base::client, [&](boost::system::error_code h) { ec = h; });
  });
  io.run();
  io.restart();
  if (!connected) return Error::make("kubernetes", "cannot reach the API server " + where + ": " + ec.message());
  if (ec) return Error::make("kubernetes", "TLS with the API server " + where + " failed: " + ec.message());
  beast::get_lowest_layer(*stream).expires_never();
  return stream;
}

void authorize(http::fields& fields, const KubeEndpoint& endpoint) {
  fields.set(http::field::host, endpoint.host);
  fields.set(http::field::user_agent, "airlock");
  if (!endpoint.bearer_token.empty()) fields.set(http::field::authorization, "Bearer " + endpoint.bearer_token);
}

namespace {

http::request<http::string_body> make_request(const KubeEndpoint& endpoint, const std::string& method,
                                              const std::string& target, const std::string& body,
                                              const std::string& content_type) {
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  authorize(req, endpoint);
  req.set(http::field::accept, "application/json");
  if (!body.empty()) {
    req.set(http::field::content_type, content_type);
    req.body() = body;
  }
  req.prepare_payload();
  return req;
}

std::optional<std::chrono::seconds> retry_after(const http::fields& fields) {
  auto it = fields.find(http::field::retry_after);
  if (it == fields.end()) return std::nullopt;
  try {
    return std::chrono::seconds(std::stoul(std::string(it->value())));
  } catch (...) {
    return std::nullopt;
  }
}

void close_quietly(Stream& stream) {
  boost::system::error_code ec;
  beast::get_lowest_layer(stream).socket().close(ec);
}

}  // namespace

Result<KubeResponse> KubeClient::request(const std::string& method, const std::string& target,
                                         const std::string& body, const std::string& content_type) {
  asio::io_context io;
  auto stream = connect(io, tls_->context, endpoint_);
  if (!stream) return stream.error();
  boost::system::error_code ec;
  auto req = make_request(endpoint_, method, target, body, content_type);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64ULL << 20);
  Stream& s = **stream;
  beast::get_lowest_layer(s).expires_after(kIoTimeout);
  http::async_write(s, req, [&](boost::system::error_code w, std::size_t) {
    ec = w;
    if (!w) http::async_read(s, buffer, parser, [&](boost::system::error_code r, std::size_t) { ec = r; });
  });
  io.run();
  close_quietly(s);
  if (ec) return Error::make("kubernetes", method + " " + target + ": " + ec.message());
  auto& res = parser.get();
  return KubeResponse{res.result_int(), res.body(), retry_after(res)};
}

namespace {

// Splits the streamed body into lines, each a watch event.
bool deliver_lines(std::string& pending, const std::function<bool(const nlohmann::json&)>& on_event) {
  std::size_t newline;
  while ((newline = pending.find('\n')) != std::string::npos) {
    std::string line = pending.substr(0, newline);
    pending.erase(0, newline + 1);
    if (line.empty()) continue;
    auto event = nlohmann::json::parse(line, nullptr, false);
    if (event.is_discarded()) return on_event(nlohmann::json{{"type", "ERROR"}, {"object", {{"message", "unparseable watch event"}}}});
    if (!on_event(event)) return false;
  }
  return true;
}

}  // namespace

Result<unsigned> KubeClient::watch(const std::string& target,
                                   const std::function<bool(const nlohmann::json&)>& on_event,
                                   WatchBreaker* breaker) {
  asio::io_context io;
  auto stream = connect(io, tls_->context, endpoint_);
  if (!stream) return stream.error();
  int fd = beast::get_lowest_layer(**stream).socket().native_handle();
  if (breaker) breaker->attach(fd);
  boost::system::error_code ec;
  http::write(**stream, make_request(endpoint_, "GET", target, "", ""), ec);
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  if (!ec) http::read_header(**stream, buffer, parser, ec);
  unsigned status = ec ? 0 : parser.get().result_int();
  std::string pending;
  char chunk[8192];
  while (!ec && status == 200 && !parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    http::read_some(**stream, buffer, parser, ec);  // returns with what has arrived
    if (ec == http::error::need_buffer) ec = {};
    pending.append(chunk, sizeof chunk - parser.get().body().size);
    if (!deliver_lines(pending, on_event)) break;
  }
  if (breaker) breaker->detach();
  close_quietly(**stream);
  if (status == 0) return Error::make("kubernetes", "watch " + target + ": " + ec.message());
  return status;  // a stream that broke mid-way is for the caller to re-list and re-watch
}

}  // namespace airlock::backend::kubernetes
