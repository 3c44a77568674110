// The one reader of http:// and https:// URLs (Boost.URL, RFC 3986). Whatever checks a URL
// (the config's "loopback only" rules) and whatever then connects to it (webhooks, JWKS,
// token services, the CLI, the Kubernetes API server) read the same host from the same text:
// `http://127.0.0.1?.attacker.invalid/hook` was a loopback address to one reader and a host
// name to another.
#pragma once

#include <string>
#include <string_view>

#include "common/result.hpp"

namespace airlock {

struct HttpUrl {
  bool tls = false;       // https
  std::string host;       // a lower-case name, an IPv4 address, or an IPv6 address (no brackets)
  bool ipv6 = false;
  std::string port;       // as written, or 443 / 80
  bool explicit_port = false;
  std::string target;     // path and query as written, "/" when there is no path
  bool has_path = false;  // a path other than "" or "/"
  bool has_query = false;

  // host[:port] as a Host header carries it ("[::1]:8443").
  std::string authority() const;
  // localhost, 127.0.0.0/8 or ::1.
  bool is_loopback() const;
};

// `text` as an absolute http:// or https:// URL. Refused ("invalid_url", the message says
// why): anything Boost.URL does not parse, another scheme, no host, user information (a
// secret in the URL, and the classic "trusted@evil" confusion), a fragment, a port outside
// 1-65535, a host name with percent-escapes or characters outside letters, digits, '-' and
// '.', and IPvFuture hosts.
Result<HttpUrl> parse_http_url(std::string_view text);

}  // namespace airlock
