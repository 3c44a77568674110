// The server and dlp sections, and the HOST:PORT of server.listen.
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/http_url.hpp"
#include "netrules/address.hpp"
#include "policy/config_reader.hpp"

namespace airlock::policy {
namespace {

std::optional<std::uint16_t> port_number(std::string_view s) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  unsigned long v = std::stoul(std::string(s));
  if (v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

}  // namespace

Result<ListenAddress> parse_listen(std::string_view text) {
  std::string_view host, port;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos || text.substr(close + 1, 1) != ":")
      return Error::make("config", "expected [IPv6]:PORT, got '" + std::string(text) + "'");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return Error::make("config", "expected HOST:PORT, got '" + std::string(text) + "'");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return Error::make("config", "an IPv6 address goes in brackets ([::1]:8750), got '" +
                                       std::string(text) + "'");
  }
  if (!netrules::parse_ip_strict(host))
    return Error::make("config", "'" + std::string(host) +
                                     "' is not an IP address (names are not resolved; for this "
                                     "machine only, use 127.0.0.1 or [::1])");
  auto number = port_number(port);
  if (!number)
    return Error::make("config",
                       "port '" + std::string(port) + "' is not a number from 0 to 65535");
  return ListenAddress{std::string(host), *number};
}

Result<std::string> advertised_url(const ServerConfig& server, std::uint16_t port) {
  if (!server.advertise_url.empty()) return server.advertise_url;
  const std::string& host = server.listen_host;
  if (host == "0.0.0.0" || host == "::")
    return Error::make("config", "server.listen (" + host +
                                     ") is a wildcard address: set server.advertiseUrl, the http[s]://HOST:PORT "
                                     "the other replicas reach this one at");
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(server.tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

std::optional<std::string> advertise_url_problem(const ServerConfig& server) {
  auto url = parse_http_url(server.advertise_url);
  if (!url || url->has_path || url->has_query)
    return "'" + server.advertise_url + "' is not http[s]://HOST:PORT (" +
           (url ? std::string("no path or query") : url.error().message) + ")";
  if (url->tls != server.tls.has_value())
    return server.tls ? "https://, as server.tls is set" : "http://, as server.tls is not set";
  return std::nullopt;
}

namespace detail {

namespace fs = std::filesystem;

namespace {

// A PEM file of server.tls: it must be there and readable now, not at the first handshake.
// Whether it holds a usable certificate or key is checked when the daemon starts (and by
// `airlock serve --check`), with OpenSSL.
std::string readable_file(Reader& r, const YAML::Node& v, const std::string& what) {
  std::string path = r.path(v, what);
  if (!fs::is_regular_file(path)) fail(v, what + ": " + path + " is not a file");
  if (!std::ifstream(path, std::ios::binary)) fail(v, what + ": " + path + " cannot be read");
  return path;
}

TlsConfig read_tls(Reader& r, const YAML::Node& n) {
  r.only_keys(n, "server.tls", {"certFile", "keyFile", "clientCAFile", "replicaCAFile", "replicaServerName"});
  TlsConfig tls;
  for (const char* required : {"certFile", "keyFile"})
    if (!n[required]) r.error(n, std::string("server.tls: missing ") + required);
  r.field(n, "certFile", [&](const YAML::Node& v) {
    tls.cert_file = readable_file(r, v, "server.tls.certFile");
  });
  r.field(n, "keyFile", [&](const YAML::Node& v) {
    tls.key_file = readable_file(r, v, "server.tls.keyFile");
  });
  r.field(n, "clientCAFile", [&](const YAML::Node& v) {
    tls.client_ca_file = readable_file(r, v, "server.tls.clientCAFile");
  });
  r.field(n, "replicaCAFile", [&](const YAML::Node& v) {
    tls.replica_ca_file = readable_file(r, v, "server.tls.replicaCAFile");
  });
  r.field(n, "replicaServerName", [&](const YAML::Node& v) {
    tls.replica_server_name = r.string(v, "server.tls.replicaServerName");
    if (tls.replica_server_name.empty() || tls.replica_server_name.find_first_of("/:@ ") != std::string::npos)
      fail(v, "server.tls.replicaServerName: a host name or an IP address, as the replicas' certificates name it");
  });
  return tls;
}

bool is_http_url(std::string_view s) {
  return s.starts_with("http://") || s.starts_with("https://");
}

// An origin as browsers send it: scheme://host[:port], nothing after.
bool is_origin(std::string_view s) {
  if (!is_http_url(s)) return false;
  auto rest = s.substr(s.find("://") + 3);
  return !rest.empty() && rest.find_first_of("/?#") == std::string_view::npos;
}

McpEndpointConfig read_mcp_endpoint(Reader& r, const YAML::Node& n) {
  r.only_keys(n, "server.mcp", {"enabled", "allowedOrigins", "resource", "firstListingWait", "toolsPageSize"});
  McpEndpointConfig mcp;
  r.field(n, "enabled", [&](const YAML::Node& v) { mcp.enabled = r.boolean(v, "server.mcp.enabled"); });
  r.field(n, "allowedOrigins", [&](const YAML::Node& v) {
    mcp.allowed_origins = r.strings(v, "server.mcp.allowedOrigins");
    for (const auto& o : mcp.allowed_origins)
      if (!is_origin(o))
        fail(v, "server.mcp.allowedOrigins: '" + o + "' is not an origin (scheme://host[:port], as browsers send it)");
  });
  r.field(n, "resource", [&](const YAML::Node& v) {
    mcp.resource = r.string(v, "server.mcp.resource");
    const auto rest = std::string_view(mcp.resource).substr(std::min(mcp.resource.size(), mcp.resource.find("://") + 3));
    if (!is_http_url(mcp.resource) || rest.empty() || rest.starts_with('/') || mcp.resource.find('#') != std::string::npos)
      fail(v, "server.mcp.resource: '" + mcp.resource + "' is not an absolute http(s) URL without a fragment");
  });
  r.field(n, "firstListingWait", [&](const YAML::Node& v) {
    mcp.first_listing_wait = r.duration(v, "server.mcp.firstListingWait");
    if (mcp.first_listing_wait > std::chrono::minutes(10)) fail(v, "server.mcp.firstListingWait: at most 10m");
  });
  r.field(n, "toolsPageSize", [&](const YAML::Node& v) {
    mcp.tools_page_size = r.unsigned_int(v, "server.mcp.toolsPageSize", 1000);
    if (mcp.tools_page_size == 0) fail(v, "server.mcp.toolsPageSize: at least 1");
  });
  return mcp;
}

}  // namespace

void read_server(Reader& r, const YAML::Node& n, ServerConfig& s) {
  r.only_keys(
      n, "server",
      {"listen", "maxBodyBytes", "maxConcurrentInvocations", "queueLength", "queueTimeout", "drainTimeout",
       "readTimeout", "maxJsonDepth", "tls", "mcp", "maxWarmTemplates", "maxMcpServerInstances", "advertiseUrl"});
  r.field(n, "listen", [&](const YAML::Node& v) {
    auto listen = parse_listen(r.string(v, "server.listen"));
    if (!listen) fail(v, "server.listen: " + listen.error().message);
    s.listen_host = listen->host;
    s.listen_port = listen->port;
  });
  r.field(n, "maxBodyBytes",
          [&](const YAML::Node& v) { s.max_body_bytes = r.size(v, "server.maxBodyBytes"); });
  r.field(n, "maxConcurrentInvocations", [&](const YAML::Node& v) {
    const std::string what = "server.maxConcurrentInvocations";
    s.max_concurrent_invocations = static_cast<unsigned>(r.unsigned_int(v, what, 4096));
    if (s.max_concurrent_invocations == 0) fail(v, what + ": must be at least 1");
  });
  r.field(n, "queueLength", [&](const YAML::Node& v) {
    s.queue_length = static_cast<unsigned>(r.unsigned_int(v, "server.queueLength", 1 << 20));
  });
  r.field(n, "queueTimeout",
          [&](const YAML::Node& v) { s.queue_timeout = r.duration(v, "server.queueTimeout"); });
  r.field(n, "drainTimeout",
          [&](const YAML::Node& v) { s.drain_timeout = r.duration(v, "server.drainTimeout"); });
  r.field(n, "readTimeout",
          [&](const YAML::Node& v) { s.read_timeout = r.duration(v, "server.readTimeout"); });
  r.field(n, "maxJsonDepth", [&](const YAML::Node& v) {
    s.max_json_depth = r.unsigned_int(v, "server.maxJsonDepth", 256);
    if (s.max_json_depth == 0) fail(v, "server.maxJsonDepth: must be at least 1");
  });
  r.field(n, "maxWarmTemplates", [&](const YAML::Node& v) {
    s.max_warm_templates =
        static_cast<unsigned>(r.unsigned_int(v, "server.maxWarmTemplates", kMaxWarmTemplates));
  });
  r.field(n, "maxMcpServerInstances", [&](const YAML::Node& v) {
    s.max_mcp_server_instances = static_cast<unsigned>(r.unsigned_int(v, "server.maxMcpServerInstances", 4096));
    if (s.max_mcp_server_instances == 0) fail(v, "server.maxMcpServerInstances: must be at least 1");
  });
  r.field(n, "tls", [&](const YAML::Node& v) { s.tls = read_tls(r, v); });
  r.field(n, "mcp", [&](const YAML::Node& v) { s.mcp = read_mcp_endpoint(r, v); });
  r.field(n, "advertiseUrl", [&](const YAML::Node& v) {  // after tls: its scheme follows it
    s.advertise_url = r.string(v, "server.advertiseUrl");
    if (auto wrong = advertise_url_problem(s)) fail(v, "server.advertiseUrl: " + *wrong);
  });
}

void read_dlp(Reader& r, const YAML::Node& n, std::string& policy) {
  r.only_keys(n, "dlp", {"policy"});
  r.field(n, "policy", [&](const YAML::Node& v) {
    policy = r.path(v, "dlp.policy");
    if (!fs::is_regular_file(policy)) fail(v, "dlp.policy: " + policy + " is not a file");
  });
}

}  // namespace detail
}  // namespace airlock::policy
