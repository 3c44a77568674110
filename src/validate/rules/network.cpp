// Network destinations named in the code, checked against the policy's allowed hosts with the
// egress layer's matching (netrules), ports included where the code names one:
//   network-host-not-allowed     a literal host (and port) that the allowlist does not match
//   network-url-invalid          a literal URL that is not plain http(s)://host[:port]/...
//   network-dynamic-destination  a destination that is not a literal (warn or reject, policy)
#include <cctype>

#include "netrules/host_port.hpp"
#include "validate/rules/rules.hpp"

namespace airlock::validate::rules {
namespace {

enum class DestinationKind { url, host, address_tuple };

struct DestinationFunction {
  std::string_view name;
  DestinationKind kind;
  std::size_t position;
  std::string_view keyword;
  // The port argument of a host function (none: its port is not checked).
  std::optional<std::size_t> port_position = std::nullopt;
  std::string_view port_keyword = "";
};

const std::vector<DestinationFunction>& destination_functions() {
  static const std::vector<DestinationFunction> kTable = {
      {"urllib.request.urlopen", DestinationKind::url, 0, "url"},
      {"urllib.request.Request", DestinationKind::url, 0, "url"},
      {"urllib.request.urlretrieve", DestinationKind::url, 0, "url"},
      {"http.client.HTTPConnection", DestinationKind::host, 0, "host", 1, "port"},
      {"http.client.HTTPSConnection", DestinationKind::host, 0, "host", 1, "port"},
      {"requests.get", DestinationKind::url, 0, "url"},
      {"requests.post", DestinationKind::url, 0, "url"},
      {"requests.put", DestinationKind::url, 0, "url"},
      {"requests.patch", DestinationKind::url, 0, "url"},
      {"requests.delete", DestinationKind::url, 0, "url"},
      {"requests.head", DestinationKind::url, 0, "url"},
      {"requests.options", DestinationKind::url, 0, "url"},
      {"requests.request", DestinationKind::url, 1, "url"},
      {"requests.api.*", DestinationKind::url, 0, "url"},
      {"httpx.get", DestinationKind::url, 0, "url"},
      {"httpx.post", DestinationKind::url, 0, "url"},
      {"httpx.put", DestinationKind::url, 0, "url"},
      {"httpx.patch", DestinationKind::url, 0, "url"},
      {"httpx.delete", DestinationKind::url, 0, "url"},
      {"httpx.head", DestinationKind::url, 0, "url"},
      {"httpx.options", DestinationKind::url, 0, "url"},
      {"httpx.stream", DestinationKind::url, 1, "url"},
      {"httpx.request", DestinationKind::url, 1, "url"},
      {"aiohttp.request", DestinationKind::url, 1, "url"},
      {"socket.create_connection", DestinationKind::address_tuple, 0, "address"},
      {"socket.getaddrinfo", DestinationKind::host, 0, "host", 1, "port"},
      {"socket.gethostbyname", DestinationKind::host, 0, "hostname"},
      {"socket.gethostbyname_ex", DestinationKind::host, 0, "hostname"},
      {"smtplib.SMTP", DestinationKind::host, 0, "host", 1, "port"},
      {"smtplib.SMTP_SSL", DestinationKind::host, 0, "host", 1, "port"},
      {"smtplib.LMTP", DestinationKind::host, 0, "host", 1, "port"},
      {"ftplib.FTP", DestinationKind::host, 0, "host"},
      {"ftplib.FTP_TLS", DestinationKind::host, 0, "host"},
      {"telnetlib.Telnet", DestinationKind::host, 0, "host", 1, "port"},
      {"poplib.POP3", DestinationKind::host, 0, "host", 1, "port"},
      {"poplib.POP3_SSL", DestinationKind::host, 0, "host", 1, "port"},
      {"imaplib.IMAP4", DestinationKind::host, 0, "host", 1, "port"},
      {"imaplib.IMAP4_SSL", DestinationKind::host, 0, "host", 1, "port"},
      {"xmlrpc.client.ServerProxy", DestinationKind::url, 0, "uri"},
  };
  return kTable;
}

// Client objects whose base_url keyword names the destination.
const std::vector<std::string_view>& client_constructors() {
  static const std::vector<std::string_view> kNames = {
      "httpx.Client", "httpx.AsyncClient", "aiohttp.ClientSession"};
  return kNames;
}

struct ParsedUrl {
  bool ok = false;
  std::string host;
  std::optional<std::uint16_t> port;  // as written, else the scheme's
  std::string problem;
};

// Controls, spaces and backslashes, where URL parsers disagree. Non-ASCII is not among them:
// an IDN host is compared in punycode, as egress compares it.
bool has_unsafe_characters(std::string_view text) {
  for (unsigned char c : text)
    if (c <= 0x20 || c == 0x7f || c == '\\') return true;
  return false;
}

// A port argument: an int literal (or a name bound once to one), or a string of digits.
std::optional<std::uint16_t> literal_port(const Node& node, const Analysis& analysis) {
  if (!node) return std::nullopt;
  Node value = single_value(analysis.facts(), node);
  if (value.is("Constant") && value.constant_kind() == "int")
    return netrules::parse_port(value.constant_text());
  if (auto text = analysis.literal_string(node)) return netrules::parse_port(*text);
  return std::nullopt;
}

// scheme://host[:port][/...]; http and https only, no userinfo.
ParsedUrl parse_url(std::string_view url, bool complete) {
  ParsedUrl out;
  auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    out.problem = "no scheme://";
    return out;
  }
  std::string scheme;
  for (char c : url.substr(0, scheme_end)) scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "http" && scheme != "https") {
    out.problem = "scheme " + scheme + " (only http and https)";
    return out;
  }
  auto rest = url.substr(scheme_end + 3);
  auto authority_end = rest.find_first_of("/?#");
  if (authority_end == std::string_view::npos && !complete) {
    out.problem = "the host is not fully literal";
    return out;
  }
  auto authority = rest.substr(0, authority_end);
  if (has_unsafe_characters(authority)) {
    out.problem = "spaces, backslashes or control characters in the host";
    return out;
  }
  if (authority.find('@') != std::string_view::npos) {
    out.problem = "credentials (user@) in the URL";
    return out;
  }
  auto split = netrules::split_host_port(authority);
  if (!split) {
    out.problem = authority.find(']') == std::string_view::npos ? "unterminated [IPv6] host"
                                                                : "text after the [IPv6] host";
    return out;
  }
  const std::string& host = split->host;
  out.port = scheme == "https" ? 443 : 80;
  if (split->port && !split->port->empty()) {  // "host:" is the default port
    if (split->port->find_first_not_of("0123456789") != std::string::npos) {
      out.problem = "a port that is not a number";
      return out;
    }
    out.port = netrules::parse_port(*split->port);
    if (!out.port) {
      out.problem = "a port outside 1-65535";
      return out;
    }
  }
  if (host.empty()) {
    out.problem = "no host";
    return out;
  }
  out.ok = true;
  out.host = host;
  return out;
}

class DestinationCheck {
 public:
  DestinationCheck(const Node& call, Analysis& analysis, std::string how)
      : call_(call), analysis_(analysis), how_(std::move(how)) {}

  void url(const Node& node) {
    if (!node) return;
    // urlopen(Request("https://...")), also through a name bound once to the Request: the
    // Request call is checked itself.
    Node value = single_value(analysis_.facts(), node);
    if (value.is("Call") && callee_matches(value, analysis_, "urllib.request.Request")) return;
    auto whole = analysis_.literal_string(node);
    std::string text = whole ? *whole : analysis_.literal_prefix(node);
    if (text.find("://") == std::string::npos) {
      dynamic();
      return;
    }
    auto parsed = parse_url(text, whole.has_value());
    if (!parsed.ok) {
      if (parsed.problem == "the host is not fully literal") dynamic();
      else analysis_.report(call_, "network-url-invalid", how_ + ": URL with " + parsed.problem);
      return;
    }
    host_name(parsed.host, parsed.port);
  }

  // `port`: the port argument beside the host, if the function has one.
  void host(const Node& node, const Node& port = {}) {
    if (!node) return;
    auto text = analysis_.literal_string(node);
    if (!text) {
      dynamic();
      return;
    }
    // "host:port" is accepted by http.client (and smtplib).
    auto split = netrules::split_host_port(*text);
    std::optional<std::uint16_t> written_port;
    bool port_ok = true;
    if (split && split->port && !split->port->empty()) {
      written_port = netrules::parse_port(*split->port);
      port_ok = written_port.has_value();
    }
    if (!split || !port_ok || has_unsafe_characters(split->host) ||
        split->host.find('@') != std::string::npos) {
      analysis_.report(call_, "network-url-invalid",
                       how_ + ": host \"" + *text + "\" is not a plain host name");
      return;
    }
    host_name(split->host, written_port ? written_port : literal_port(port, analysis_));
  }

  void address_tuple(const Node& node) {
    if (!node) return;
    if (!node.is("Tuple") || node.children("elts").empty()) {
      dynamic();
      return;
    }
    auto elements = node.children("elts");
    host(elements.front(), elements.size() > 1 ? elements[1] : Node());
  }

 private:
  // `port`: the one the code connects to, when it says (nullopt: the host alone decides).
  void host_name(const std::string& host, std::optional<std::uint16_t> port) {
    const HostAllowlist& allowed = analysis_.policy().allowed_hosts;
    if (allowed.allows(host, port)) return;
    std::string what = port && allowed.allows(host)
                           ? "port " + std::to_string(*port) + " of host " + host
                           : "host " + host;
    analysis_.report(call_, "network-host-not-allowed",
                     how_ + ": " + what + " is not in the policy's allowed hosts");
  }

  void dynamic() {
    auto severity = analysis_.policy().effective_non_literal_destination() ==
                            NonLiteralDestination::reject
                        ? Severity::error
                        : Severity::warning;
    analysis_.report(call_, "network-dynamic-destination",
                     how_ + ": the destination is not a literal, so it cannot be checked "
                            "against the allowed hosts",
                     severity);
  }

  const Node& call_;
  Analysis& analysis_;
  std::string how_;
};

void check_known_functions(const Node& call, Analysis& analysis) {
  for (const auto& r : analysis.resolve(call.child("func"))) {
    for (const auto& fn : destination_functions()) {
      if (!name_matches(fn.name, r.name)) continue;
      DestinationCheck check(call, analysis, r.spelled);
      if (Analysis::has_starred_arguments(call) &&
          !Analysis::argument(call, fn.position, fn.keyword)) {
        analysis.report(call, "network-dynamic-destination",
                        r.spelled + " with unpacked arguments: the destination cannot be seen",
                        analysis.policy().effective_non_literal_destination() ==
                                NonLiteralDestination::reject
                            ? Severity::error
                            : Severity::warning);
        return;
      }
      auto destination = Analysis::argument(call, fn.position, fn.keyword);
      if (!destination) return;
      switch (fn.kind) {
        case DestinationKind::url: check.url(destination); break;
        case DestinationKind::host:
          check.host(destination, fn.port_position
                                      ? Analysis::argument(call, *fn.port_position, fn.port_keyword)
                                      : Node());
          break;
        case DestinationKind::address_tuple: check.address_tuple(destination); break;
      }
      return;
    }
    for (auto name : client_constructors()) {
      if (r.name != name) continue;
      auto base = Analysis::argument(call, 99, "base_url");
      if (base) DestinationCheck(call, analysis, r.spelled).url(base);
      return;
    }
  }
}

// Methods of clients and sockets: a literal destination is checked whatever the receiver (a
// session's .get("https://...")); a computed one only when the program imports socket.
void check_methods(const Node& call, Analysis& analysis) {
  auto func = call.child("func");
  if (!func.is("Attribute")) return;
  for (const auto& r : analysis.resolve(func.child("value")))
    if (r.kind != Resolved::Kind::object) return;  // module functions are checked above
  auto method = func.text("attr");
  std::string how = "." + std::string(method) + "()";
  static const std::set<std::string, std::less<>> kUrlMethods = {
      "get", "post", "put", "patch", "delete", "head", "options", "request", "stream",
      "urlopen", "open", "fetch", "ws_connect"};
  if (kUrlMethods.count(method) > 0) {
    std::size_t position = (method == "request" || method == "stream") ? 1 : 0;
    auto url = Analysis::argument(call, position, "url");
    auto text = analysis.literal_prefix(url);
    if (text.find("://") != std::string::npos) DestinationCheck(call, analysis, how).url(url);
    return;
  }
  if (method == "connect" || method == "connect_ex" || method == "sendto") {
    auto address = Analysis::argument(call, method == "sendto" ? 1 : 0);
    if (address.is("Tuple") && !address.children("elts").empty() &&
        analysis.literal_string(address.children("elts").front()))
      DestinationCheck(call, analysis, how).address_tuple(address);
    else if (analysis.program_imports("socket"))
      DestinationCheck(call, analysis, how).address_tuple(address);
  }
}

}  // namespace

void check_network(const Node& node, Analysis& analysis) {
  if (!node.is("Call")) return;
  check_known_functions(node, analysis);
  check_methods(node, analysis);
}

}  // namespace airlock::validate::rules
