#include "common/http_url.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

namespace airlock {
namespace {

Error invalid(const std::string& why) {
  return Error::make("invalid_url", why);
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
}

bool is_port(std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value >= 1 && value <= 65535;
}

}  // namespace

std::string HttpUrl::authority() const {
  const std::string h = ipv6 ? "[" + host + "]" : host;
  return explicit_port ? h + ":" + port : h;
}

bool HttpUrl::is_loopback() const {
  if (ipv6) return host == "::1";
  if (host == "localhost") return true;
  // An IPv4 address (the parser said so: four decimal octets) in 127.0.0.0/8.
  return host.starts_with("127.") && host.find_first_not_of("0123456789.") == std::string::npos;
}

Result<HttpUrl> parse_http_url(std::string_view text) {
  auto parsed = boost::urls::parse_absolute_uri(text);
  if (!parsed) return invalid("not a URL (RFC 3986): " + parsed.error().message());
  const boost::urls::url_view& u = *parsed;
  HttpUrl out;
  if (u.scheme_id() == boost::urls::scheme::https) out.tls = true;
  else if (u.scheme_id() != boost::urls::scheme::http) return invalid("not an http:// or https:// URL");
  if (!u.has_authority() || u.encoded_host().empty()) return invalid("the URL names no host");
  if (u.has_userinfo()) return invalid("the URL carries user information (user@host)");
  if (u.has_fragment()) return invalid("the URL has a fragment (#...)");
  // After an authority a path is empty or starts with '/' (RFC 3986 3.3, path-abempty). Boost
  // 1.81's parser breaks off a host or port early and calls the rest a path:
  // "http://127.0.0.1.attacker.invalid/" came back as host 127.0.0.1, path ".attacker.invalid/",
  // and "http://a.example:80x/" as port 80, path "x/". So the authority must also be exactly
  // the text between "//" and the first '/', '?' or '#', as any other reader splits it.
  const std::string_view path = u.encoded_path();
  const std::string_view after_slashes = text.substr(text.find("//") + 2);
  if ((!path.empty() && path.front() != '/') ||
      u.encoded_authority() != after_slashes.substr(0, after_slashes.find_first_of("/?#")))
    return invalid("the URL's host or port is not followed by '/', '?', '#' or its end");
  switch (u.host_type()) {
    case boost::urls::host_type::ipv4:
      out.host = std::string(u.encoded_host());
      break;
    case boost::urls::host_type::ipv6:
      out.ipv6 = true;
      out.host = u.host_ipv6_address().to_string();
      break;
    case boost::urls::host_type::name: {
      const std::string name(u.encoded_host());
      if (!std::all_of(name.begin(), name.end(), is_name_char))
        return invalid("the host name holds a character other than letters, digits, '-' and '.'");
      out.host = name;
      std::transform(out.host.begin(), out.host.end(), out.host.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      break;
    }
    default:
      return invalid("the URL's host is neither a name nor an IP address");
  }
  out.explicit_port = u.has_port();
  if (out.explicit_port && !is_port(u.port())) return invalid("the port is not a number from 1 to 65535");
  out.port = out.explicit_port ? std::string(u.port()) : (out.tls ? "443" : "80");
  out.has_path = !path.empty() && path != "/";
  out.has_query = u.has_query();
  out.target = (path.empty() ? std::string("/") : std::string(path)) +
               (out.has_query ? "?" + std::string(u.encoded_query()) : "");
  return out;
}

}  // namespace airlock
