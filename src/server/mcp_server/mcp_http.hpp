// MCP's Streamable HTTP transport at /mcp (docs/mcp-server.md), and the OAuth protected
// resource metadata (RFC 9728) that tells a client which issuers' tokens /mcp takes.
//   POST /mcp    one JSON-RPC message; answered application/json, or text/event-stream when
//                a tools/call asked for progress, and for a subscriptions/listen (2026-07-28)
//   GET /mcp     a session's stream of the notifications the server starts (tools/list_changed)
//   DELETE /mcp  ends the session named by Mcp-Session-Id
//   GET /.well-known/oauth-protected-resource[/mcp]
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"
#include "server/mcp_server/mcp_server.hpp"

namespace airlock::server {

class McpHttp {
 public:
  McpHttp(std::shared_ptr<McpServer> server, const GenerationSlot* generation)
      : server_(std::move(server)), generation_(generation) {}

  // /mcp, once the Api has routed it here.
  void handle(const HttpRequest& request, std::function<void(HttpResponse)> reply) const;
  // The RFC 9728 document.
  HttpResponse resource_metadata(const HttpRequest& request) const;

 private:
  void post(const HttpRequest& request, const policy::Config& config, std::function<void(HttpResponse)> reply) const;
  void get(const HttpRequest& request, const policy::Config& config, std::function<void(HttpResponse)> reply) const;

  std::shared_ptr<McpServer> server_;
  const GenerationSlot* generation_;
};

// /mcp, /.well-known/oauth-protected-resource and /.well-known/oauth-protected-resource/mcp.
bool is_mcp_path(const std::vector<std::string>& parts);
bool is_resource_metadata_path(const std::vector<std::string>& parts);

// The resource identifier of /mcp: server.mcp.resource, else the request's own origin + /mcp.
std::string mcp_resource(const policy::Config& config, const HttpRequest& request);

}  // namespace airlock::server
