// HTTP on a proxy listener: CONNECT tunnels and plain requests with an absolute http:// URI.
// Both start with one request head; they differ in what follows the upstream connection.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "common/base64.hpp"
#include "egress/session.hpp"
#include "netrules/host_port.hpp"

namespace airlock::egress {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

using Authority = std::pair<std::string, std::uint16_t>;

// "host:port" / "[v6]:port" / "host" (default port) from a request target or Host header.
// The host keeps its brackets: it is recorded as the client wrote it.
std::optional<Authority> parse_authority(std::string_view text, std::uint16_t default_port) {
  auto split = netrules::split_host_port(text);
  if (!split) return std::nullopt;
  std::string host = split->bracketed ? "[" + split->host + "]" : split->host;
  if (split->host.empty() || host.find_first_of("@/\\ ") != std::string::npos) return std::nullopt;
  std::uint16_t port = default_port;
  if (split->port && !split->port->empty()) {  // "host:" is the default port (RFC 3986)
    auto p = netrules::parse_port(*split->port);
    if (!p) return std::nullopt;
    port = *p;
  } else if (default_port == 0) {
    return std::nullopt;
  }
  return std::make_pair(host, port);
}

// The same host:port, compared after normalizing case and a trailing dot.
bool same_authority(const Authority& a, const Authority& b) {
  auto strip = [](std::string s) {
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  return a.second == b.second && beast::iequals(strip(a.first), strip(b.first));
}

// Proxy-to-origin hop-by-hop headers, not passed on with a plain request.
bool is_hop_by_hop(std::string_view name) {
  return beast::iequals(name, "Proxy-Connection") || beast::iequals(name, "Proxy-Authorization") ||
         beast::iequals(name, "Connection") || beast::iequals(name, "Keep-Alive") || beast::iequals(name, "Upgrade");
}

// "Basic base64(user:password)" (RFC 7617) as (user, password); nullopt if it is not one.
std::optional<std::pair<std::string, std::string>> basic_credentials(std::string_view value) {
  constexpr std::string_view kScheme = "Basic ";
  if (value.size() <= kScheme.size() || !beast::iequals(value.substr(0, kScheme.size()), kScheme))
    return std::nullopt;
  std::string encoded(value.substr(kScheme.size()));
  if (encoded.size() % 4 != 0 || encoded.size() > 1024) return std::nullopt;
  auto bytes = base64_decode(encoded);
  if (!bytes) return std::nullopt;
  const std::string& decoded = *bytes;
  auto colon = decoded.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(decoded.substr(0, colon), decoded.substr(colon + 1));
}

class HttpProxySession final : public Protocol {
 public:
  explicit HttpProxySession(Session& session) : session_(session) {}

  void start() override { read_head(); }
  void refuse(Refusal refusal, const std::string& why) override;
  void upstream_connected() override;

 private:
  using Request = http::request<http::empty_body>;

  void read_head();
  void on_head();
  std::optional<std::string> present_credentials(const Request& req);
  std::optional<Authority> connect_target(const Request& req,
                                          const std::optional<Authority>& host_header);
  std::optional<Authority> absolute_uri_target(const Request& req,
                                               const std::optional<Authority>& host_header);
  void respond(http::status status, const std::string& why);
  void linger();
  void tunnel();
  void forward_request();
  void forward_buffered_then_relay();

  Session& session_;
  std::array<std::uint8_t, 1> drain_{};
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  bool connect_ = false;     // a CONNECT tunnel, else one plain request
  std::string origin_form_;  // a plain request's target without scheme and authority
};

void HttpProxySession::refuse(Refusal refusal, const std::string& why) {
  switch (refusal) {
    case Refusal::over_limit:
      return respond(http::status::service_unavailable, why);
    case Refusal::request_timeout:
      return respond(http::status::request_timeout, why);
    case Refusal::denied:
      return respond(http::status::forbidden, why);
    case Refusal::unresolvable:
    case Refusal::connect_failed:
      return respond(http::status::bad_gateway, why);
    case Refusal::connect_timeout:
      return respond(http::status::gateway_timeout, why);
  }
}

void HttpProxySession::read_head() {
  parser_.emplace();
  parser_->header_limit(session_.policy().limits().max_header_bytes);
  http::async_read_header(session_.client(), buffer_, *parser_,
                          [this, self = session_.self()](error_code ec, std::size_t) {
                            if (session_.timed_out()) return;
                            if (ec == http::error::header_limit)
                              return respond(
                                  http::status::request_header_fields_too_large,
                                  "the request head is larger than " +
                                      std::to_string(session_.policy().limits().max_header_bytes) +
                                      " bytes");
                            if (ec) return session_.finish("malformed request: " + ec.message());
                            on_head();
                          });
}

// Finds the target (CONNECT's authority, or the absolute URI's) and asks for the decision.
// A Host header, if any, must name the same host and port.
void HttpProxySession::on_head() {
  auto& req = parser_->get();
  connect_ = req.method() == http::verb::connect;
  std::optional<Authority> host_header;
  if (auto h = req.find(http::field::host); h != req.end()) {
    host_header = parse_authority(h->value(), connect_ ? 0 : 80);
    if (!host_header) return respond(http::status::bad_request, "malformed Host header");
  }
  auto target = connect_ ? connect_target(req, host_header) : absolute_uri_target(req, host_header);
  if (!target) return;  // answered
  session_.record().host = target->first;
  session_.record().port = target->second;
  if (session_.needs_credentials()) {
    if (auto refused = present_credentials(req))
      return respond(session_.over_limit() ? http::status::service_unavailable
                                           : http::status::proxy_authentication_required,
                     *refused);
  }
  session_.decided(session_.policy().decide(target->first, target->second), target->second);
}

// The shared gateway's connections name their invocation in Proxy-Authorization.
std::optional<std::string> HttpProxySession::present_credentials(const Request& req) {
  auto field = req.find(http::field::proxy_authorization);
  if (field == req.end()) return "this proxy needs the invocation's credentials (Proxy-Authorization)";
  auto credentials = basic_credentials(field->value());
  if (!credentials) return "Proxy-Authorization is not Basic credentials";
  return session_.present_credentials(credentials->first, credentials->second);
}

std::optional<Authority> HttpProxySession::connect_target(
    const Request& req, const std::optional<Authority>& host_header) {
  auto authority = parse_authority(req.target(), 0);
  if (!authority) {
    respond(http::status::bad_request, "CONNECT needs host:port");
    return std::nullopt;
  }
  if (host_header && !same_authority(*host_header, *authority)) {
    respond(http::status::bad_request, "the Host header disagrees with the CONNECT target");
    return std::nullopt;
  }
  return authority;
}

// Absolute-form: http://authority/path. Anything else is not a proxy request.
std::optional<Authority> HttpProxySession::absolute_uri_target(
    const Request& req, const std::optional<Authority>& host_header) {
  std::string target(req.target());
  constexpr std::string_view kScheme = "http://";
  if (target.size() < kScheme.size() || !beast::iequals(target.substr(0, kScheme.size()), kScheme)) {
    respond(http::status::bad_request, beast::iequals(target.substr(0, 8), "https://")
                                                  ? "use CONNECT for https"
                                                  : "not a proxy request (absolute http:// URI expected)");
    return std::nullopt;
  }
  auto rest = std::string_view(target).substr(kScheme.size());
  auto slash = rest.find_first_of("/?#");
  auto auth_text = rest.substr(0, slash);
  origin_form_ = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (origin_form_.front() != '/') origin_form_ = "/" + origin_form_;
  if (auto hash = origin_form_.find('#'); hash != std::string::npos) origin_form_.resize(hash);
  auto authority = parse_authority(auth_text, 80);
  if (!authority) {
    respond(http::status::bad_request, "malformed URI authority");
    return std::nullopt;
  }
  if (host_header && !same_authority(*host_header, *authority)) {
    respond(http::status::bad_request, "the Host header disagrees with the URI");
    return std::nullopt;
  }
  return authority;
}

// Answers with `status` and a plain-text reason, then closes (lingering).
void HttpProxySession::respond(http::status status, const std::string& why) {
  auto& record = session_.record();
  if (record.rule.empty()) record.rule = why;
  auto body = std::make_shared<std::string>(
      "airlock egress proxy: " + std::string(http::obsolete_reason(status)) + ": " + why +
      (status == http::status::forbidden ? ". Denied by " + session_.rule_set() + " (allowed: " +
                                               session_.policy().describe_rules() + ")."
                                         : ".") +
      "\n");
  auto head = std::make_shared<std::string>(
      "HTTP/1.1 " + std::to_string(static_cast<unsigned>(status)) + " " +
      std::string(http::obsolete_reason(status)) +
      (status == http::status::proxy_authentication_required
           ? "\r\nProxy-Authenticate: Basic realm=\"airlock egress\""
           : "") +
      "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body->size()) + "\r\n\r\n" + *body);
  session_.finish_after(std::chrono::seconds(5));  // do not wait forever on a stuck reader
  asio::async_write(session_.client(), asio::buffer(*head),
                    [this, self = session_.self(), head](error_code ec, std::size_t) {
                      if (ec) return session_.finish();
                      error_code ignored;
                      session_.client().shutdown(tcp::socket::shutdown_send, ignored);
                      linger();
                    });
}

// Reads and drops what the client still sends until it closes (or the timer above fires):
// closing with unread data would reset the connection and could lose our answer.
void HttpProxySession::linger() {
  session_.client().async_read_some(asio::buffer(drain_),
                                    [this, self = session_.self()](error_code ec, std::size_t) {
                                      if (ec || session_.finished()) return session_.finish();
                                      linger();
                                    });
}

void HttpProxySession::upstream_connected() {
  if (connect_)
    tunnel();
  else
    forward_request();
}

// CONNECT: "200 Connection established", then the tunnel.
void HttpProxySession::tunnel() {
  static const std::string kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  asio::async_write(session_.client(), asio::buffer(kEstablished),
                    [this, self = session_.self()](error_code ec, std::size_t) {
                      if (ec) return session_.finish();
                      if (!session_.intercepts()) return forward_buffered_then_relay();
                      // A ClientHello sent ahead of our answer is the interception's.
                      std::string early = beast::buffers_to_string(buffer_.data());
                      buffer_.consume(buffer_.size());
                      session_.intercept(std::move(early));
                    });
}

// A plain request goes upstream in origin form, without hop-by-hop proxy headers; the
// upstream connection serves this one request (Connection: close).
void HttpProxySession::forward_request() {
  auto& req = parser_->get();
  auto head = std::make_shared<std::string>(std::string(req.method_string()) + " " + origin_form_ +
                                            " HTTP/1.1\r\n");
  for (const auto& field : req) {
    if (is_hop_by_hop(field.name_string())) continue;
    *head += std::string(field.name_string()) + ": " + std::string(field.value()) + "\r\n";
  }
  if (req.find(http::field::host) == req.end()) *head += "Host: " + session_.record().host + "\r\n";
  *head += "Connection: close\r\n\r\n";
  session_.count_up(head->size());
  asio::async_write(session_.upstream(), asio::buffer(*head),
                    [this, self = session_.self(), head](error_code ec, std::size_t) {
                      if (ec) return session_.finish("upstream closed");
                      forward_buffered_then_relay();
                    });
}

// Bytes the client sent after the request head (a TLS ClientHello, a request body) were
// read into our buffer with it: they go upstream first.
void HttpProxySession::forward_buffered_then_relay() {
  if (buffer_.size() == 0) return session_.relay();
  auto data = std::make_shared<std::string>(beast::buffers_to_string(buffer_.data()));
  buffer_.consume(buffer_.size());
  session_.count_up(data->size());
  asio::async_write(session_.upstream(), asio::buffer(*data),
                    [this, self = session_.self(), data](error_code ec, std::size_t) {
                      if (ec) return session_.finish("upstream closed");
                      session_.relay();
                    });
}

}  // namespace

std::unique_ptr<Protocol> make_http_proxy_protocol(Session& session) {
  return std::make_unique<HttpProxySession>(session);
}

}  // namespace airlock::egress
