// The HTTP API, without the sockets: a request in, a response out (docs/daemon.md and
// src/server/api/openapi.json). Tests and the fuzz target call it directly.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/pipeline.hpp"
#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"
#include "server/http/http_message.hpp"

namespace airlock::server {

class TokenIntrospection;
class McpServer;
class McpHttp;
namespace console {
class Console;
}

class Api {
 public:
  explicit Api(ApiServices services);
  // `reply` is called exactly once, perhaps later and from a worker thread.
  void handle(const HttpRequest& request, std::function<void(HttpResponse)> reply) const;
  // handle() as the HTTP server's handler (this Api outlives the server).
  RequestHandler handler() const;
  // The MCP server behind /mcp, for the other transport (`airlock mcp`, stdio).
  McpServer& mcp() const { return *mcp_; }
  // The web console behind /console (its sessions, for tests).
  console::Console& console() const { return *console_; }

 private:
  void invoke(const HttpRequest& request, const std::string& tool, std::function<void(HttpResponse)> reply) const;
  void token(const HttpRequest& request, std::function<void(HttpResponse)> reply) const;
  void verify_audit(std::function<void(HttpResponse)> reply) const;
  void invocation(const std::string& target, const std::string& id, const pipeline::Caller& caller, bool reads_all,
                  std::function<void(HttpResponse)> reply) const;
  void handle_mcp(const HttpRequest& request, const std::vector<std::string>& parts,
                  std::function<void(HttpResponse)> reply) const;
  void handle_v1(const HttpRequest& request, const std::vector<std::string>& parts,
                 std::function<void(HttpResponse)> reply) const;
  void list_tools(const pipeline::Caller& caller, std::function<void(HttpResponse)> reply) const;

  ApiServices s_;
  std::shared_ptr<const TokenIntrospection> introspection_;  // POST /v1/token/{introspect,revoke}
  std::shared_ptr<McpServer> mcp_;
  std::shared_ptr<const McpHttp> mcp_http_;  // /mcp and /.well-known/oauth-protected-resource
  std::shared_ptr<console::Console> console_;  // /console (server/console/console.hpp)
};

// Runs one request through the same parser as the server and this Api, without sockets
// (server/http/http_server.hpp, handle_raw_request): for the fuzz target and tests.
std::string handle_raw_request(const Api& api, const std::string& bytes, std::uint64_t max_body_bytes);

// The OpenAPI 3.1 document the server serves at /openapi.json.
const std::string& openapi_document();

}  // namespace airlock::server
