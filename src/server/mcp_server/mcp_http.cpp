#include "server/mcp_server/mcp_http.hpp"

#include <random>

#include "server/mcp_server/mcp_sse.hpp"

namespace airlock::server {
namespace {

std::string header(const HttpRequest& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A JSON-RPC error as the whole answer of a request refused before it reached the server.
HttpResponse rpc_refusal(int status, int code, const std::string& message) {
  return json_response(status, mcp::make_error(nullptr, code, message));
}

// scheme://authority of an absolute URL.
std::string origin_of(const std::string& url) {
  const auto authority = url.find("://");
  if (authority == std::string::npos) return url;
  return url.substr(0, url.find_first_of("/?#", authority + 3));
}

bool origin_allowed(const policy::Config& config, const std::string& origin) {
  const auto& mcp = config.server.mcp;
  for (const auto& allowed : mcp.allowed_origins)
    if (lower(allowed) == lower(origin)) return true;
  return !mcp.resource.empty() && lower(origin_of(mcp.resource)) == lower(origin);
}

std::string www_authenticate(const policy::Config& config, const HttpRequest& r) {
  return "Bearer resource_metadata=\"" + origin_of(mcp_resource(config, r)) +
         "/.well-known/oauth-protected-resource/mcp\"";
}

// Accept must allow both answers a POST may get; Content-Type must be JSON.
std::optional<HttpResponse> check_post_headers(const HttpRequest& r) {
  const std::string accept = lower(header(r, "accept"));
  const bool any = accept.find("*/*") != std::string::npos;
  if (!any && (accept.find("application/json") == std::string::npos ||
               accept.find("text/event-stream") == std::string::npos))
    return rpc_refusal(406, mcp::rpc_error::invalid_request,
                       "Not Acceptable: the Accept header must list application/json and text/event-stream");
  const std::string type = lower(header(r, "content-type"));
  if (type.substr(0, type.find(';')).find("application/json") != 0)
    return rpc_refusal(415, mcp::rpc_error::invalid_request,
                       "Unsupported Media Type: the Content-Type must be application/json");
  return std::nullopt;
}

HttpResponse plain_answer(const McpReply& reply) {
  HttpResponse resp;
  resp.status = reply.http_status;
  if (reply.message) resp.body = reply.message->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!reply.session_id.empty()) resp.headers.emplace_back("Mcp-Session-Id", reply.session_id);
  return resp;
}

std::string request_channel() {
  std::random_device random;
  return "http-" + std::to_string(random()) + "-" + std::to_string(random());
}

}  // namespace

bool is_mcp_path(const std::vector<std::string>& parts) { return parts.size() == 1 && parts[0] == "mcp"; }

bool is_resource_metadata_path(const std::vector<std::string>& parts) {
  return parts.size() >= 2 && parts.size() <= 3 && parts[0] == ".well-known" &&
         parts[1] == "oauth-protected-resource" && (parts.size() == 2 || parts[2] == "mcp");
}

std::string mcp_resource(const policy::Config& config, const HttpRequest& r) {
  if (!config.server.mcp.resource.empty()) return config.server.mcp.resource;
  const std::string host = header(r, "host");
  return std::string(config.server.tls ? "https://" : "http://") +
         (host.empty() ? config.server.listen_host + ":" + std::to_string(config.server.listen_port) : host) + "/mcp";
}

HttpResponse McpHttp::resource_metadata(const HttpRequest& r) const {
  const auto generation = generation_->load();
  const auto& config = *generation->config;
  auto issuers = nlohmann::json::array();
  for (const auto& issuer : config.identity.issuers) issuers.push_back(issuer.issuer);
  return json_response(200, {{"resource", mcp_resource(config, r)},
                             {"authorization_servers", issuers},
                             {"bearer_methods_supported", {"header"}},
                             {"resource_name", "Airlock"}});
}

void McpHttp::handle(const HttpRequest& r, std::function<void(HttpResponse)> reply) const {
  const auto generation = generation_->load();
  const auto& config = *generation->config;
  // DNS rebinding: a browser's page may not reach the server under another origin's name.
  if (const std::string origin = header(r, "origin"); !origin.empty() && !origin_allowed(config, origin))
    return reply(rpc_refusal(403, mcp::rpc_error::invalid_request, "Forbidden: origin " + origin + " is not allowed"));
  if (r.method == "POST") return post(r, config, std::move(reply));
  if (r.method == "DELETE") {
    const std::string id = header(r, "mcp-session-id");
    if (id.empty()) return reply(rpc_refusal(400, mcp::rpc_error::invalid_request, "Bad Request: no Mcp-Session-Id header"));
    McpContext ctx{r.headers, r.client_certificate, r.peer, true, {}};
    const int status = server_->end_session(ctx, id);
    HttpResponse resp = status == 204 ? HttpResponse{204, "application/json", {}, {}, {}, {}}
                        : status == 401 ? rpc_refusal(401, mcp::rpc_error::invalid_request, "unauthenticated")
                                        : rpc_refusal(404, -32001, "Session not found: no session " + id + " of yours");
    if (status == 401) resp.headers.emplace_back("WWW-Authenticate", www_authenticate(config, r));
    return reply(std::move(resp));
  }
  if (r.method == "GET") return get(r, config, std::move(reply));
  auto resp = rpc_refusal(405, mcp::rpc_error::invalid_request, "Method Not Allowed: use POST, GET or DELETE");
  resp.headers.emplace_back("Allow", "GET, POST, DELETE");
  reply(std::move(resp));
}

// GET: the session's stream of notifications the server starts (tools/list_changed), kept
// open with keep-alive comments until the session ends, the client leaves, or the daemon stops.
void McpHttp::get(const HttpRequest& r, const policy::Config& config, std::function<void(HttpResponse)> reply) const {
  const std::string accept = lower(header(r, "accept"));
  if (accept.find("text/event-stream") == std::string::npos && accept.find("*/*") == std::string::npos)
    return reply(rpc_refusal(406, mcp::rpc_error::invalid_request,
                             "Not Acceptable: the Accept header must list text/event-stream"));
  const std::string id = header(r, "mcp-session-id");
  if (id.empty())
    return reply(rpc_refusal(400, mcp::rpc_error::invalid_request,
                             "Bad Request: no Mcp-Session-Id header; a stream belongs to a session (send initialize first)"));
  auto stream = std::make_shared<McpEventStream>(reply, [server = server_, id] { server->forget_session_stream(id); });
  McpContext ctx{r.headers, r.client_certificate, r.peer, true, {}};
  auto refused = server_->listen_session(
      ctx, id, [stream](const nlohmann::json& n) { stream->notify(n); }, [stream] { stream->close(); });
  if (!refused) return stream->open();
  auto resp = plain_answer(*refused);
  if (refused->http_status == 401) resp.headers.emplace_back("WWW-Authenticate", www_authenticate(config, r));
  reply(std::move(resp));
}

void McpHttp::post(const HttpRequest& r, const policy::Config& config, std::function<void(HttpResponse)> reply) const {
  if (auto refused = check_post_headers(r)) return reply(std::move(*refused));
  auto parsed = server_->parse(r.body);
  if (auto* refused = std::get_if<McpReply>(&parsed)) return reply(plain_answer(*refused));
  const auto& message = std::get<nlohmann::json>(parsed);
  McpContext ctx{r.headers, r.client_certificate, r.peer, true, {}};
  const std::string auth = www_authenticate(config, r);
  auto finish_plain = [auth](const McpReply& answer) {
    auto resp = plain_answer(answer);
    if (answer.http_status == 401) resp.headers.emplace_back("WWW-Authenticate", auth);
    return resp;
  };
  if (!McpServer::streams(message))
    return server_->handle(ctx, message, [](const nlohmann::json&) {},
                           [reply, finish_plain](McpReply answer) { reply(finish_plain(answer)); });
  // Progress, or a subscription: a stream once the first notification comes. A session's call
  // is cancelled by its session id; a stateless one by a channel of its own. Leaving the stream
  // cancels it.
  const std::string session = header(r, "mcp-session-id");
  ctx.channel = request_channel();
  const std::string channel = session.empty() ? ctx.channel : session;
  auto gone = [server = server_, channel, id = message.value("id", nlohmann::json())] { server->cancel(channel, id); };
  auto stream = std::make_shared<McpEventStream>(reply, gone);
  server_->handle(
      ctx, message, [stream](const nlohmann::json& n) { stream->notify(n); },
      [stream, finish_plain](McpReply answer) {
        stream->finish(answer.message.value_or(nlohmann::json()), finish_plain(answer));
      });
}

}  // namespace airlock::server
