// The shared part of every proxied connection: limits, deadlines, the decision and its record,
// and the upstream connection through the SSRF guard. The relay is in relay.cpp.
#include "egress/session.hpp"

namespace airlock::egress {
namespace {

IpAddress to_ip(const asio::ip::address& a) {
  IpAddress out;
  if (a.is_v4()) {
    auto b = a.to_v4().to_bytes();
    std::copy(b.begin(), b.end(), out.bytes.begin());
  } else {
    auto b = a.to_v6().to_bytes();
    out.v6 = true;
    std::copy(b.begin(), b.end(), out.bytes.begin());
  }
  return out;
}

asio::ip::address to_asio(const IpAddress& a) {
  if (!a.v6) return asio::ip::address_v4({a.bytes[0], a.bytes[1], a.bytes[2], a.bytes[3]});
  asio::ip::address_v6::bytes_type b;
  std::copy(a.bytes.begin(), a.bytes.end(), b.begin());
  return asio::ip::address_v6(b);
}

}  // namespace

Session::Session(ProxyCore& proxy, tcp::socket client, std::optional<PortForward> forward)
    : proxy_(proxy),
      tenant_(proxy.first_tenant),
      client_(std::move(client)),
      upstream_(proxy.io),
      resolver_(proxy.io),
      timer_(proxy.io),
      forward_(std::move(forward)),
      started_(Clock::now()) {
  proxy_.live.insert(this);
  ++tenant_->active;
}

Session::~Session() {
  proxy_.live.erase(this);
  --tenant_->active;
}

void Session::start() {
  const auto& limits = tenant_->policy.limits();
  over_limit_ = tenant_->active > limits.max_connections;
  if (over_limit_)
    record_.rule =
        "refused: more than " + std::to_string(limits.max_connections) + " connections at once";
  if (forward_) {
    if (over_limit_) return finish();
    protocol_ = make_forward_protocol(*this, *forward_);
    return protocol_->start();
  }
  // Until the first byte says otherwise this is an HTTP client (a SOCKS client speaks
  // first), so one that says nothing gets a 408.
  protocol_ = make_http_proxy_protocol(*this);
  arm_deadline(limits.request_timeout, "no complete request within the request timeout",
               Refusal::request_timeout);
  sniff_protocol();
}

// Peeks at the first byte: 0x05 is a SOCKS5 greeting, anything else an HTTP request.
void Session::sniff_protocol() {
  client_.async_receive(asio::buffer(peek_), tcp::socket::message_peek,
                        [this, self = self()](error_code ec, std::size_t n) {
                          if (ec || n == 0) return finish("client closed before a request");
                          if (peek_[0] == 0x05) protocol_ = make_socks5_protocol(*this);
                          if (over_limit_)
                            return protocol_->refuse(Refusal::over_limit, record_.rule);
                          protocol_->start();
                        });
}

void Session::finish(const std::string& why) {
  if (finished_) return;
  finished_ = true;
  if (!why.empty() && record_.rule.empty()) record_.rule = why;
  if (!why.empty() && record_.allowed && !record_.rule.empty() && record_.rule != why)
    record_.rule += " (" + why + ")";
  error_code ignored;
  timer_.cancel();
  resolver_.cancel();
  client_.close(ignored);
  upstream_.close(ignored);
  record_.ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count());
  tenant_->add_record(record_);
}

std::optional<std::string> Session::present_credentials(std::string_view user,
                                                        std::string_view password) {
  auto named = proxy_.authenticate ? proxy_.authenticate(user, password) : nullptr;
  if (!named) return "no admitted invocation has these proxy credentials (unknown, or its call ended)";
  --tenant_->active;
  tenant_ = std::move(named);
  ++tenant_->active;
  authenticated_ = true;
  record_.rule.clear();
  const auto max = tenant_->policy.limits().max_connections;
  over_limit_ = tenant_->active > max;
  if (over_limit_)
    return "refused: more than " + std::to_string(max) + " connections at once";
  return std::nullopt;
}

void Session::finish_after(std::chrono::seconds after) {
  timed_out_ = false;
  timer_.expires_after(after);
  timer_.async_wait([this, self = self()](error_code ec) {
    if (!ec) finish();
  });
}

void Session::expire_after(std::chrono::milliseconds after, std::string why) {
  timer_.expires_after(after);  // a pending wait ends with operation_aborted
  timer_.async_wait([this, self = self(), why = std::move(why)](error_code ec) {
    if (!ec) finish(why);
  });
}

// A deadline for the current phase: the request, or the upstream connection.
void Session::arm_deadline(std::chrono::milliseconds after, std::string why, Refusal refusal) {
  timer_.expires_after(after);
  timer_.async_wait([this, self = self(), why, refusal](error_code ec) {
    if (ec || finished_) return;
    timed_out_ = true;
    error_code ignored;
    client_.cancel(ignored);
    upstream_.cancel(ignored);
    resolver_.cancel();
    refuse(refusal, why);
  });
}

void Session::refuse(Refusal refusal, const std::string& why) {
  record_.allowed = false;
  record_.rule = why;
  protocol_->refuse(refusal, why);
}

void Session::decided(const EgressPolicy::Decision& d, std::uint16_t port) {
  if (!d.host.empty()) record_.host = d.host;
  if (!d.allowed) return refuse(Refusal::denied, d.reason);
  const auto& limits = tenant_->policy.limits();
  if (tenant_->bytes_up >= limits.max_bytes_up || tenant_->bytes_down >= limits.max_bytes_down)
    return refuse(Refusal::denied, "the sandbox's egress byte budget is spent");
  record_.allowed = true;
  record_.rule = d.rule;
  if (!forward_) injections_ = tenant_->policy.injections_for(d, port);
  for (std::size_t i = 0; i < injections_.size(); ++i)
    record_.rule += (i == 0 ? " (TLS intercepted to set " : ", ") + injections_[i]->header +
                    (i + 1 == injections_.size() ? ")" : "");
  if (d.address) return connect({*d.address}, port);
  resolve_and_connect(d, port);
}

// Resolves the name here and keeps only the answers the SSRF guard admits.
void Session::resolve_and_connect(const EgressPolicy::Decision& d, std::uint16_t port) {
  auto on_resolved = [this, self = self(), d, port](error_code ec,
                                                    tcp::resolver::results_type results) {
    if (timed_out_ || finished_) return;
    if (ec) return refuse(Refusal::unresolvable, "cannot resolve " + d.host + ": " + ec.message());
    std::vector<IpAddress> found;
    for (const auto& r : results) found.push_back(to_ip(r.endpoint().address()));
    std::string why;
    auto ok = tenant_->policy.admissible(d, found, port, &why);
    if (ok.empty()) return refuse(Refusal::denied, why);
    connect(ok, port);
  };
  resolver_.async_resolve(d.host, std::to_string(port), std::move(on_resolved));
}

// Connects to exactly the addresses that were checked, in order (no second lookup).
void Session::connect(const std::vector<IpAddress>& addresses, std::uint16_t port) {
  std::vector<tcp::endpoint> endpoints;
  for (const auto& a : addresses) endpoints.emplace_back(to_asio(a), port);
  arm_deadline(tenant_->policy.limits().connect_timeout,
               "connecting to " + record_.host + ":" + std::to_string(port) + " timed out",
               Refusal::connect_timeout);
  asio::async_connect(
      upstream_, endpoints, [this, self = self()](error_code ec, const tcp::endpoint& ep) {
        if (finished_) return;
        if (timed_out_) return;
        timer_.cancel();
        if (ec) {
          return refuse(Refusal::connect_failed, "connecting to " + record_.host + ":" +
                                                     std::to_string(record_.port) +
                                                     " failed: " + ec.message());
        }
        on_connected(ep);
      });
}

void Session::on_connected(const tcp::endpoint& ep) {
  record_.address = to_ip(ep.address()).to_string();
  error_code ignored;
  upstream_.set_option(tcp::no_delay(true), ignored);
  protocol_->upstream_connected();
}

}  // namespace airlock::egress
