// SOCKS5 (RFC 1928) on a proxy listener: CONNECT only, with a domain name (resolved by the
// proxy), an IPv4 or an IPv6 address. No authentication in a sandbox's own proxy; on the
// shared gateway, username/password (RFC 1929) naming the invocation, and nothing else.
#include <array>

#include "egress/session.hpp"

namespace airlock::egress {
namespace {

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

// Address types (RFC 1928).
constexpr std::uint8_t kAtypIpv4 = 0x01, kAtypDomain = 0x03, kAtypIpv6 = 0x04;

class Socks5Session final : public Protocol {
 public:
  explicit Socks5Session(Session& session) : session_(session) {}

  void start() override { read_greeting(); }

  void refuse(Refusal refusal, const std::string&) override {
    switch (refusal) {
      case Refusal::over_limit:
      case Refusal::request_timeout:
        return session_.finish();
      case Refusal::denied:
        return reply(kSocksNotAllowed);
      case Refusal::unresolvable:
      case Refusal::connect_timeout:
        return reply(kSocksHostUnreachable);
      case Refusal::connect_failed:
        return reply(kSocksRefused);
    }
  }

  void upstream_connected() override { reply(kSocksOk); }

 private:
  void read_greeting();
  void choose_method(std::size_t methods);
  void read_credentials();
  void on_credentials(std::size_t user_length, std::size_t password_length);
  void read_request();
  void read_address(std::uint8_t atyp);
  void read_address_and_port(std::uint8_t atyp, std::size_t length);
  void on_target(std::uint8_t atyp, std::size_t length);
  void reply(SocksReply code);

  Session& session_;
  std::array<std::uint8_t, 516> buffer_{};  // the largest: RFC 1929 credentials
};

// VER NMETHODS METHODS...
void Socks5Session::read_greeting() {
  asio::async_read(session_.client(), asio::buffer(buffer_, 2),
                   [this, self = session_.self()](error_code ec, std::size_t) {
                     if (ec) return session_.finish("malformed SOCKS greeting");
                     std::size_t methods = buffer_[1];
                     asio::async_read(session_.client(), asio::buffer(buffer_, methods),
                                      [this, self, methods](error_code ec2, std::size_t) {
                                        if (ec2) return session_.finish("malformed SOCKS greeting");
                                        choose_method(methods);
                                      });
                   });
}

// Accepts "no authentication" (or, where credentials are needed, username/password) if the
// client offers it, else refuses and ends.
void Socks5Session::choose_method(std::size_t methods) {
  const std::uint8_t wanted = session_.needs_credentials() ? 0x02 : 0x00;
  bool offered = false;
  for (std::size_t i = 0; i < methods; ++i) offered |= (buffer_[i] == wanted);
  auto answer = std::make_shared<std::array<std::uint8_t, 2>>(
      std::array<std::uint8_t, 2>{0x05, offered ? wanted : std::uint8_t{0xff}});
  asio::async_write(
      session_.client(), asio::buffer(*answer),
      [this, self = session_.self(), answer, offered, wanted](error_code ec, std::size_t) {
        if (ec || !offered)
          return session_.finish(wanted == 0x02 ? "SOCKS client offers no username/password"
                                                : "SOCKS client wants authentication");
        if (wanted == 0x02) return read_credentials();
        read_request();
      });
}

// RFC 1929: VER(1) ULEN UNAME PLEN PASSWD, read into buffer_ as it comes.
void Socks5Session::read_credentials() {
  asio::async_read(session_.client(), asio::buffer(buffer_, 2), [this, self = session_.self()](
                                                                    error_code ec, std::size_t) {
    if (ec || buffer_[0] != 0x01) return session_.finish("malformed SOCKS credentials");
    const std::size_t user_length = buffer_[1];
    // The name and the password's length byte.
    asio::async_read(session_.client(), asio::buffer(buffer_.data() + 2, user_length + 1),
                     [this, self, user_length](error_code ec2, std::size_t) {
                       if (ec2) return session_.finish("malformed SOCKS credentials");
                       const std::size_t password_length = buffer_[2 + user_length];
                       asio::async_read(
                           session_.client(),
                           asio::buffer(buffer_.data() + 3 + user_length, password_length),
                           [this, self, user_length, password_length](error_code ec3, std::size_t) {
                             if (ec3) return session_.finish("malformed SOCKS credentials");
                             on_credentials(user_length, password_length);
                           });
                     });
  });
}

void Socks5Session::on_credentials(std::size_t user_length, std::size_t password_length) {
  const char* base = reinterpret_cast<const char*>(buffer_.data());
  auto refused = session_.present_credentials(std::string_view(base + 2, user_length),
                                              std::string_view(base + 3 + user_length, password_length));
  if (refused) session_.record().rule = *refused;
  auto answer = std::make_shared<std::array<std::uint8_t, 2>>(
      std::array<std::uint8_t, 2>{0x01, refused ? std::uint8_t{0x01} : std::uint8_t{0x00}});
  asio::async_write(session_.client(), asio::buffer(*answer),
                    [this, self = session_.self(), answer, failed = refused.has_value()](
                        error_code ec, std::size_t) {
                      if (ec || failed) return session_.finish();
                      read_request();
                    });
}

// VER CMD RSV ATYP, then the address.
void Socks5Session::read_request() {
  asio::async_read(session_.client(), asio::buffer(buffer_, 4),
                   [this, self = session_.self()](error_code ec, std::size_t) {
                     if (ec || buffer_[0] != 0x05)
                       return session_.finish("malformed SOCKS request");
                     if (buffer_[1] != 0x01) {
                       session_.record().rule =
                           "SOCKS command " + std::to_string(buffer_[1]) + " is not supported";
                       return reply(kSocksCommandNotSupported);
                     }
                     read_address(buffer_[3]);
                   });
}

void Socks5Session::read_address(std::uint8_t atyp) {
  if (atyp == kAtypIpv4) return read_address_and_port(atyp, 4);
  if (atyp == kAtypIpv6) return read_address_and_port(atyp, 16);
  if (atyp == kAtypDomain) {  // a length byte, then the name
    return asio::async_read(session_.client(), asio::buffer(buffer_, 1),
                            [this, self = session_.self(), atyp](error_code ec, std::size_t) {
                              if (ec || buffer_[0] == 0)
                                return session_.finish("malformed SOCKS request");
                              read_address_and_port(atyp, buffer_[0]);
                            });
  }
  session_.record().rule = "SOCKS address type " + std::to_string(atyp) + " is not supported";
  reply(kSocksAddressNotSupported);
}

void Socks5Session::read_address_and_port(std::uint8_t atyp, std::size_t length) {
  asio::async_read(session_.client(), asio::buffer(buffer_, length + 2),
                   [this, self = session_.self(), atyp, length](error_code ec, std::size_t) {
                     if (ec) return session_.finish("malformed SOCKS request");
                     on_target(atyp, length);
                   });
}

// The address and port are in buffer_: records them and asks for the decision.
void Socks5Session::on_target(std::uint8_t atyp, std::size_t length) {
  std::string host;
  if (atyp == kAtypDomain) {
    host.assign(reinterpret_cast<char*>(buffer_.data()), length);
  } else {
    IpAddress a;
    a.v6 = (atyp == kAtypIpv6);
    std::copy(buffer_.begin(), buffer_.begin() + static_cast<long>(length), a.bytes.begin());
    host = a.to_string();
  }
  auto port = static_cast<std::uint16_t>((buffer_[length] << 8) | buffer_[length + 1]);
  session_.record().host = host;
  session_.record().port = port;
  session_.decided(session_.policy().decide(host, port), port);
}

// VER REP RSV ATYP BND.ADDR BND.PORT (0.0.0.0:0); relays after success, else ends.
void Socks5Session::reply(SocksReply code) {
  auto reply = std::make_shared<std::array<std::uint8_t, 10>>(
      std::array<std::uint8_t, 10>{0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0});
  asio::async_write(session_.client(), asio::buffer(*reply),
                    [this, self = session_.self(), reply, code](error_code ec, std::size_t) {
                      if (ec || code != kSocksOk) return session_.finish();
                      if (session_.intercepts()) return session_.intercept({});
                      session_.relay();
                    });
}

}  // namespace

std::unique_ptr<Protocol> make_socks5_protocol(Session& session) {
  return std::make_unique<Socks5Session>(session);
}

}  // namespace airlock::egress
