#include "egress/proxy.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "netrules/host_port.hpp"

namespace airlock::egress {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// Per direction of a relayed connection. Smaller buffers cost throughput on a fast loopback
// (64 KiB: half); larger ones gain nothing measurable.
constexpr std::size_t kRelayBuffer = 256 * 1024;

// SOCKS5 reply codes (RFC 1928).
enum SocksReply : std::uint8_t {
  kSocksOk = 0x00,
  kSocksFailure = 0x01,
  kSocksNotAllowed = 0x02,
  kSocksHostUnreachable = 0x04,
  kSocksRefused = 0x05,
  kSocksCommandNotSupported = 0x07,
  kSocksAddressNotSupported = 0x08,
};

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

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// "host:port" / "[v6]:port" / "host" (default port) from a request target or Host header.
// The host keeps its brackets: it is recorded as the client wrote it.
std::optional<std::pair<std::string, std::uint16_t>> parse_authority(std::string_view text,
                                                                     std::uint16_t default_port) {
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
bool same_authority(const std::pair<std::string, std::uint16_t>& a,
                    const std::pair<std::string, std::uint16_t>& b) {
  auto strip = [](std::string s) {
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  return a.second == b.second && iequals(strip(a.first), strip(b.first));
}

}  // namespace

struct EgressProxy::Impl {
  EgressPolicy policy;
  std::string rule_set;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::vector<std::optional<PortForward>> acceptor_forwards;
  std::thread thread;
  std::set<class Session*> live;  // io thread only

  mutable std::mutex mu;
  std::vector<EgressRecord> records;
  std::uint64_t bytes_up = 0, bytes_down = 0;  // io thread only
  std::uint32_t active = 0;                    // io thread only

  Impl(EgressPolicy p, std::string name) : policy(std::move(p)), rule_set(std::move(name)) {}
  void accept(std::size_t index);
  void add_record(EgressRecord r) {
    std::lock_guard lock(mu);
    records.push_back(std::move(r));
  }
};

// One client connection: from the first byte to the last relayed one.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(EgressProxy::Impl& proxy, tcp::socket client, std::optional<PortForward> forward)
      : proxy_(proxy),
        client_(std::move(client)),
        upstream_(proxy.io),
        resolver_(proxy.io),
        timer_(proxy.io),
        forward_(std::move(forward)),
        started_(Clock::now()) {
    proxy_.live.insert(this);
    ++proxy_.active;
  }
  ~Session() {
    proxy_.live.erase(this);
    --proxy_.active;
  }

  void start() {
    const auto& limits = proxy_.policy.limits();
    over_limit_ = proxy_.active > limits.max_connections;
    if (over_limit_) record_.rule = "refused: more than " + std::to_string(limits.max_connections) +
                                    " connections at once";
    if (forward_) {
      if (over_limit_) return finish();
      record_.host = forward_->host;
      record_.port = forward_->port;
      auto d = proxy_.policy.decide_forward(*forward_);
      return decided(d, forward_->port);
    }
    // Until the first byte says otherwise this is an HTTP client (a SOCKS client speaks
    // first), so one that says nothing gets a 408.
    protocol_ = Protocol::http_plain;
    arm_deadline(limits.request_timeout, "no complete request within the request timeout");
    auto self = shared_from_this();
    client_.async_receive(asio::buffer(peek_), tcp::socket::message_peek,
                          [this, self](error_code ec, std::size_t n) {
                            if (ec || n == 0) return finish("client closed before a request");
                            if (over_limit_ && peek_[0] == 0x05) return finish();
                            if (over_limit_)
                              return respond_http(http::status::service_unavailable, record_.rule);
                            if (peek_[0] == 0x05)
                              read_socks_greeting();
                            else
                              read_http_head();
                          });
  }

  // Ends the session now, recording why (used at shutdown and on limits).
  void finish(const std::string& why = {}) {
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
    proxy_.add_record(record_);
  }

 private:
  enum class Protocol { http_connect, http_plain, socks, forward };

  // A deadline for the current phase: the request (408), or the upstream connection (504).
  void arm_deadline(std::chrono::milliseconds after, std::string why,
                    http::status status = http::status::request_timeout) {
    timer_.expires_after(after);
    auto self = shared_from_this();
    timer_.async_wait([this, self, why, status](error_code ec) {
      if (ec || finished_) return;
      timed_out_ = true;
      error_code ignored;
      client_.cancel(ignored);
      upstream_.cancel(ignored);
      resolver_.cancel();
      record_.allowed = false;
      record_.rule = why;
      if (protocol_ == Protocol::http_connect || protocol_ == Protocol::http_plain)
        respond_http(status, why);
      else if (protocol_ == Protocol::socks && status == http::status::gateway_timeout)
        socks_reply(kSocksHostUnreachable);
      else
        finish(why);
    });
  }

  // --- HTTP -----------------------------------------------------------------------------

  void read_http_head() {
    protocol_ = Protocol::http_plain;
    parser_.emplace();
    parser_->header_limit(proxy_.policy.limits().max_header_bytes);
    auto self = shared_from_this();
    http::async_read_header(client_, buffer_, *parser_, [this, self](error_code ec, std::size_t) {
      if (timed_out_) return;
      if (ec == http::error::header_limit)
        return respond_http(http::status::request_header_fields_too_large,
                            "the request head is larger than " +
                                std::to_string(proxy_.policy.limits().max_header_bytes) + " bytes");
      if (ec) return finish("malformed request: " + ec.message());
      on_http_head();
    });
  }

  void on_http_head() {
    auto& req = parser_->get();
    std::string target(req.target());
    std::optional<std::pair<std::string, std::uint16_t>> authority;
    std::optional<std::pair<std::string, std::uint16_t>> host_header;
    if (auto h = req.find(http::field::host); h != req.end()) {
      host_header = parse_authority(h->value(), req.method() == http::verb::connect ? 0 : 80);
      if (!host_header) return respond_http(http::status::bad_request, "malformed Host header");
    }
    if (req.method() == http::verb::connect) {
      protocol_ = Protocol::http_connect;
      authority = parse_authority(target, 0);
      if (!authority) return respond_http(http::status::bad_request, "CONNECT needs host:port");
      if (host_header && !same_authority(*host_header, *authority))
        return respond_http(http::status::bad_request,
                            "the Host header disagrees with the CONNECT target");
    } else {
      // Absolute-form: http://authority/path. Anything else is not a proxy request.
      constexpr std::string_view kScheme = "http://";
      if (target.size() < kScheme.size() || !iequals(target.substr(0, kScheme.size()), kScheme))
        return respond_http(http::status::bad_request,
                            iequals(target.substr(0, 8), "https://")
                                ? "use CONNECT for https"
                                : "not a proxy request (absolute http:// URI expected)");
      auto rest = std::string_view(target).substr(kScheme.size());
      auto slash = rest.find_first_of("/?#");
      auto auth_text = rest.substr(0, slash);
      origin_form_ = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
      if (origin_form_.front() != '/') origin_form_ = "/" + origin_form_;
      if (auto hash = origin_form_.find('#'); hash != std::string::npos) origin_form_.resize(hash);
      authority = parse_authority(auth_text, 80);
      if (!authority) return respond_http(http::status::bad_request, "malformed URI authority");
      if (host_header && !same_authority(*host_header, *authority))
        return respond_http(http::status::bad_request, "the Host header disagrees with the URI");
    }
    record_.host = authority->first;
    record_.port = authority->second;
    decided(proxy_.policy.decide(authority->first, authority->second), authority->second);
  }

  void respond_http(http::status status, const std::string& why) {
    if (record_.rule.empty()) record_.rule = why;
    auto body = std::make_shared<std::string>(
        "airlock egress proxy: " + std::string(http::obsolete_reason(status)) + ": " + why +
        (status == http::status::forbidden ? ". Denied by " + proxy_.rule_set +
                                                 " (allowed: " + proxy_.policy.describe_rules() + ")."
                                           : ".") +
        "\n");
    auto head = std::make_shared<std::string>(
        "HTTP/1.1 " + std::to_string(static_cast<unsigned>(status)) + " " +
        std::string(http::obsolete_reason(status)) +
        "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
        std::to_string(body->size()) + "\r\n\r\n" + *body);
    timed_out_ = false;
    timer_.expires_after(std::chrono::seconds(5));  // do not wait forever on a stuck reader
    auto self = shared_from_this();
    timer_.async_wait([this, self](error_code ec) {
      if (!ec) finish();
    });
    asio::async_write(client_, asio::buffer(*head), [this, self, head](error_code ec, std::size_t) {
      if (ec) return finish();
      error_code ignored;
      client_.shutdown(tcp::socket::shutdown_send, ignored);
      linger();
    });
  }

  // Reads and drops what the client still sends until it closes (or the timer above fires):
  // closing with unread data would reset the connection and could lose our answer.
  void linger() {
    auto self = shared_from_this();
    client_.async_read_some(asio::buffer(peek_), [this, self](error_code ec, std::size_t) {
      if (ec || finished_) return finish();
      linger();
    });
  }

  // --- SOCKS5 ---------------------------------------------------------------------------

  void read_socks_greeting() {
    protocol_ = Protocol::socks;
    auto self = shared_from_this();
    asio::async_read(client_, asio::buffer(socks_, 2), [this, self](error_code ec, std::size_t) {
      if (ec) return finish("malformed SOCKS greeting");
      std::size_t methods = socks_[1];
      asio::async_read(client_, asio::buffer(socks_, methods),
                       [this, self, methods](error_code ec2, std::size_t) {
                         if (ec2) return finish("malformed SOCKS greeting");
                         bool no_auth = false;
                         for (std::size_t i = 0; i < methods; ++i) no_auth |= (socks_[i] == 0x00);
                         static const std::uint8_t kAccept[2] = {0x05, 0x00};
                         static const std::uint8_t kRefuse[2] = {0x05, 0xff};
                         asio::async_write(client_, asio::buffer(no_auth ? kAccept : kRefuse, 2),
                                           [this, self, no_auth](error_code ec3, std::size_t) {
                                             if (ec3 || !no_auth)
                                               return finish("SOCKS client wants authentication");
                                             read_socks_request();
                                           });
                       });
    });
  }

  void read_socks_request() {
    auto self = shared_from_this();
    asio::async_read(client_, asio::buffer(socks_, 4), [this, self](error_code ec, std::size_t) {
      if (ec || socks_[0] != 0x05) return finish("malformed SOCKS request");
      if (socks_[1] != 0x01) {
        record_.rule = "SOCKS command " + std::to_string(socks_[1]) + " is not supported";
        return socks_reply(kSocksCommandNotSupported);
      }
      std::uint8_t atyp = socks_[3];
      auto read_rest = [this, self, atyp](std::size_t len) {
        asio::async_read(client_, asio::buffer(socks_, len + 2),
                         [this, self, atyp, len](error_code ec2, std::size_t) {
                           if (ec2) return finish("malformed SOCKS request");
                           std::string host;
                           if (atyp == 0x03) {
                             host.assign(reinterpret_cast<char*>(socks_.data()), len);
                           } else {
                             IpAddress a;
                             a.v6 = (atyp == 0x04);
                             std::copy(socks_.begin(), socks_.begin() + static_cast<long>(len), a.bytes.begin());
                             host = a.to_string();
                           }
                           std::uint16_t port = static_cast<std::uint16_t>((socks_[len] << 8) | socks_[len + 1]);
                           record_.host = host;
                           record_.port = port;
                           decided(proxy_.policy.decide(host, port), port);
                         });
      };
      if (atyp == 0x01) return read_rest(4);
      if (atyp == 0x04) return read_rest(16);
      if (atyp == 0x03) {
        return asio::async_read(client_, asio::buffer(socks_, 1), [this, self, read_rest](error_code ec2, std::size_t) {
          if (ec2 || socks_[0] == 0) return finish("malformed SOCKS request");
          read_rest(socks_[0]);
        });
      }
      record_.rule = "SOCKS address type " + std::to_string(atyp) + " is not supported";
      socks_reply(kSocksAddressNotSupported);
    });
  }

  void socks_reply(SocksReply code) {
    auto reply = std::make_shared<std::array<std::uint8_t, 10>>(
        std::array<std::uint8_t, 10>{0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0});
    auto self = shared_from_this();
    asio::async_write(client_, asio::buffer(*reply), [this, self, reply, code](error_code ec, std::size_t) {
      if (ec || code != kSocksOk) return finish();
      relay();
    });
  }

  // --- Decision, resolution, connection ---------------------------------------------------

  void deny(const std::string& why) {
    record_.allowed = false;
    record_.rule = why;
    switch (protocol_) {
      case Protocol::http_connect:
      case Protocol::http_plain: return respond_http(http::status::forbidden, why);
      case Protocol::socks: return socks_reply(kSocksNotAllowed);
      case Protocol::forward: return finish();
    }
  }

  void decided(const EgressPolicy::Decision& d, std::uint16_t port) {
    if (forward_) protocol_ = Protocol::forward;
    if (!d.host.empty()) record_.host = d.host;
    if (!d.allowed) return deny(d.reason);
    const auto& limits = proxy_.policy.limits();
    if (proxy_.bytes_up >= limits.max_bytes_up || proxy_.bytes_down >= limits.max_bytes_down)
      return deny("the sandbox's egress byte budget is spent");
    record_.allowed = true;
    record_.rule = d.rule;
    if (d.address) return connect({*d.address}, port);
    auto self = shared_from_this();
    resolver_.async_resolve(d.host, std::to_string(port),
                            [this, self, d, port](error_code ec, tcp::resolver::results_type results) {
                              if (timed_out_ || finished_) return;
                              if (ec) return fail_upstream(kSocksHostUnreachable, http::status::bad_gateway,
                                                           "cannot resolve " + d.host + ": " + ec.message());
                              std::vector<IpAddress> found;
                              for (const auto& r : results) found.push_back(to_ip(r.endpoint().address()));
                              std::string why;
                              auto ok = proxy_.policy.admissible(d, found, port, &why);
                              if (ok.empty()) return deny(why);
                              connect(ok, port);
                            });
  }

  void fail_upstream(SocksReply socks, http::status status, const std::string& why) {
    record_.allowed = false;
    record_.rule = why;
    switch (protocol_) {
      case Protocol::http_connect:
      case Protocol::http_plain: return respond_http(status, why);
      case Protocol::socks: return socks_reply(socks);
      case Protocol::forward: return finish();
    }
  }

  // Connects to exactly the addresses that were checked, in order (no second lookup).
  void connect(std::vector<IpAddress> addresses, std::uint16_t port) {
    std::vector<tcp::endpoint> endpoints;
    for (const auto& a : addresses) endpoints.emplace_back(to_asio(a), port);
    arm_deadline(proxy_.policy.limits().connect_timeout,
                 "connecting to " + record_.host + ":" + std::to_string(port) + " timed out",
                 http::status::gateway_timeout);
    auto self = shared_from_this();
    asio::async_connect(upstream_, endpoints, [this, self](error_code ec, const tcp::endpoint& ep) {
      if (finished_) return;
      if (timed_out_) return;
      timer_.cancel();
      if (ec) {
        return fail_upstream(kSocksRefused, http::status::bad_gateway,
                             "connecting to " + record_.host + ":" + std::to_string(record_.port) +
                                 " failed: " + ec.message());
      }
      record_.address = to_ip(ep.address()).to_string();
      error_code ignored;
      upstream_.set_option(tcp::no_delay(true), ignored);
      connected();
    });
  }

  void connected() {
    auto self = shared_from_this();
    switch (protocol_) {
      case Protocol::forward: return relay();
      case Protocol::socks: return socks_reply(kSocksOk);
      case Protocol::http_connect: {
        static const std::string kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
        return asio::async_write(client_, asio::buffer(kEstablished), [this, self](error_code ec, std::size_t) {
          if (ec) return finish();
          forward_buffered_then_relay();
        });
      }
      case Protocol::http_plain: {
        // The request in origin form, without hop-by-hop proxy headers; the upstream
        // connection serves this one request (Connection: close).
        auto& req = parser_->get();
        auto head = std::make_shared<std::string>(std::string(req.method_string()) + " " + origin_form_ +
                                                  " HTTP/1.1\r\n");
        for (const auto& field : req) {
          auto name = field.name_string();
          if (iequals(name, "Proxy-Connection") || iequals(name, "Proxy-Authorization") ||
              iequals(name, "Connection") || iequals(name, "Keep-Alive") || iequals(name, "Upgrade"))
            continue;
          *head += std::string(name) + ": " + std::string(field.value()) + "\r\n";
        }
        if (req.find(http::field::host) == req.end()) *head += "Host: " + record_.host + "\r\n";
        *head += "Connection: close\r\n\r\n";
        count_up(head->size());
        return asio::async_write(upstream_, asio::buffer(*head), [this, self, head](error_code ec, std::size_t) {
          if (ec) return finish("upstream closed");
          forward_buffered_then_relay();
        });
      }
    }
  }

  // Bytes the client sent after the request head (a TLS ClientHello, a request body) were
  // read into our buffer with it: they go upstream first.
  void forward_buffered_then_relay() {
    if (buffer_.size() == 0) return relay();
    auto data = std::make_shared<std::string>(beast::buffers_to_string(buffer_.data()));
    buffer_.consume(buffer_.size());
    count_up(data->size());
    auto self = shared_from_this();
    asio::async_write(upstream_, asio::buffer(*data), [this, self, data](error_code ec, std::size_t) {
      if (ec) return finish("upstream closed");
      relay();
    });
  }

  // --- Relay --------------------------------------------------------------------------------

  // Relays both directions until both have ended, through a buffer per direction. This beats
  // splice() through a pipe here (docs/performance.md): spliced data goes out in page-sized
  // pieces, copied data in full segments, which the sandbox's loopback takes up to 512 KiB
  // at a time (sandbox/loopback.hpp).
  void relay() {
    last_activity_ = Clock::now();
    watch_idle();
    error_code ignored;
    client_.non_blocking(true, ignored);
    upstream_.non_blocking(true, ignored);
    up_.from = &client_, up_.to = &upstream_, up_.upward = true;
    down_.from = &upstream_, down_.to = &client_, down_.upward = false;
    for (Direction* d : {&up_, &down_})
      d->buffer = std::make_unique_for_overwrite<char[]>(kRelayBuffer);
    pump(up_);
    pump(down_);
  }

  struct Direction {
    tcp::socket* from = nullptr;
    tcp::socket* to = nullptr;
    bool upward = false;
    // Allocated when the relay starts and not zeroed, so a direction that carries little (a
    // request, a TLS handshake) commits only the pages its bytes touch.
    std::unique_ptr<char[]> buffer;
    std::size_t offset = 0, pending = 0;  // bytes read and not yet written
    bool eof = false;
  };

  // Moves what is readable on d.from to d.to, without blocking: reads a buffer's worth,
  // writes it all, then reads again, waiting on the socket that is not ready.
  void pump(Direction& d) {
    auto self = shared_from_this();
    for (;;) {
      if (finished_) return;
      if (d.pending > 0) {  // first write out what was read
        ssize_t m = ::send(d.to->native_handle(), d.buffer.get() + d.offset, d.pending,
                           MSG_NOSIGNAL);
        if (m > 0) {
          d.offset += static_cast<std::size_t>(m);
          d.pending -= static_cast<std::size_t>(m);
          last_activity_ = Clock::now();
          continue;
        }
        if (m < 0 && errno == EINTR) continue;
        if (m < 0 && errno == EAGAIN)
          return d.to->async_wait(tcp::socket::wait_write, [this, self, &d](error_code ec) {
            if (ec) return finish();
            pump(d);
          });
        return finish();
      }
      if (d.eof) {  // pass the half-close on; the session ends when both directions have
        error_code ignored;
        d.to->shutdown(tcp::socket::shutdown_send, ignored);
        (d.upward ? up_done_ : down_done_) = true;
        if (up_done_ && down_done_) finish();
        return;
      }
      ssize_t n = ::recv(d.from->native_handle(), d.buffer.get(), kRelayBuffer, 0);
      if (n > 0) {
        d.offset = 0;
        d.pending = static_cast<std::size_t>(n);
        last_activity_ = Clock::now();
        bool within = d.upward ? count_up(d.pending) : count_down(d.pending);
        if (!within)
          return finish(std::string("the sandbox's egress byte budget (") +
                        (d.upward ? "up" : "down") + ") is spent");
        continue;
      }
      if (n == 0) {
        d.eof = true;
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN)
        return d.from->async_wait(tcp::socket::wait_read, [this, self, &d](error_code ec) {
          if (ec) return finish();
          pump(d);
        });
      return finish();
    }
  }

  void watch_idle() {
    auto idle = proxy_.policy.limits().idle_timeout;
    auto due = last_activity_ + idle;
    timer_.expires_at(due);
    auto self = shared_from_this();
    timer_.async_wait([this, self, idle](error_code ec) {
      if (ec || finished_) return;
      if (Clock::now() - last_activity_ >= idle) return finish("idle timeout");
      watch_idle();
    });
  }

  bool count_up(std::size_t n) {
    record_.bytes_up += n;
    proxy_.bytes_up += n;
    return proxy_.bytes_up <= proxy_.policy.limits().max_bytes_up;
  }
  bool count_down(std::size_t n) {
    record_.bytes_down += n;
    proxy_.bytes_down += n;
    return proxy_.bytes_down <= proxy_.policy.limits().max_bytes_down;
  }

  EgressProxy::Impl& proxy_;
  tcp::socket client_, upstream_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  std::optional<PortForward> forward_;
  Clock::time_point started_, last_activity_;
  Protocol protocol_ = Protocol::forward;
  std::array<std::uint8_t, 1> peek_{};
  std::array<std::uint8_t, 262> socks_{};
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  std::string origin_form_;
  Direction up_, down_;
  bool up_done_ = false, down_done_ = false, finished_ = false, timed_out_ = false;
  bool over_limit_ = false;
  EgressRecord record_;
};

void EgressProxy::Impl::accept(std::size_t index) {
  acceptors[index]->async_accept([this, index](error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptors[index]->is_open()) return;
    if (!ec) {
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Session>(*this, std::move(socket), acceptor_forwards[index])->start();
    }
    accept(index);
  });
}

EgressProxy::EgressProxy(EgressPolicy policy, std::string rule_set)
    : impl_(std::make_unique<Impl>(std::move(policy), std::move(rule_set))) {}

EgressProxy::~EgressProxy() { stop(); }

void EgressProxy::add_proxy_listener(UniqueFd fd) {
  impl_->acceptors.push_back(std::make_unique<tcp::acceptor>(impl_->io, tcp::v4(), fd.release()));
  impl_->acceptor_forwards.emplace_back(std::nullopt);
}

void EgressProxy::add_forward_listener(UniqueFd fd, const PortForward& forward) {
  impl_->acceptors.push_back(std::make_unique<tcp::acceptor>(impl_->io, tcp::v4(), fd.release()));
  impl_->acceptor_forwards.emplace_back(forward);
}

void EgressProxy::start() {
  impl_->work.emplace(impl_->io.get_executor());
  for (std::size_t i = 0; i < impl_->acceptors.size(); ++i) impl_->accept(i);
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

void EgressProxy::stop() {
  if (!impl_->thread.joinable()) return;
  asio::post(impl_->io, [this] {
    for (auto& a : impl_->acceptors) {
      error_code ignored;
      a->close(ignored);
    }
    // Copy: finish() removes sessions from `live` once their handlers drain.
    std::vector<Session*> open(impl_->live.begin(), impl_->live.end());
    for (auto* s : open) s->finish("the sandbox ended");
  });
  impl_->work.reset();
  impl_->thread.join();
}

std::vector<EgressRecord> EgressProxy::records() const {
  std::lock_guard lock(impl_->mu);
  return impl_->records;
}

std::vector<std::pair<std::string, std::string>> proxy_environment() {
  const std::string http = "http://127.0.0.1:" + std::to_string(kProxyPort);
  const std::string socks = "socks5h://127.0.0.1:" + std::to_string(kProxyPort);
  return {{"HTTP_PROXY", http},  {"HTTPS_PROXY", http},  {"ALL_PROXY", socks}, {"NO_PROXY", ""},
          {"http_proxy", http},  {"https_proxy", http},  {"all_proxy", socks}, {"no_proxy", ""}};
}

}  // namespace airlock::egress
