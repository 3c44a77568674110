// Internal to the MCP server (mcp_server.cpp, mcp_methods.cpp): one message being answered.
#pragma once

#include "server/mcp_server/mcp_server.hpp"

namespace airlock::server {

struct McpServer::Call {
  McpContext ctx;  // a copy: the worker that answers a call outlives the transport's
  mcp::Message message;
  std::shared_ptr<const Generation> generation;  // the config it is answered under
  pipeline::Caller caller;
  std::string principal;  // who the caller is, as a session records it
  std::string revision;
  bool stateless = false;  // 2026-07-28: results carry resultType and the server's info
  std::string channel;     // where notifications/cancelled finds its calls ("": nowhere)
  bool elicits_urls = false;  // its client declared URL-mode elicitation (at initialize, or in this request's _meta)
  McpNotify notify;
  McpReplyFn reply;

  // Answers the request with `result`, as its revision wants it.
  void answer(nlohmann::json result) const;
  void fail(int http_status, int code, const std::string& text) const;
  void fail(int code, const std::string& text, nlohmann::json data) const;  // a JSON-RPC error with data
};

// params.taskId of a tasks/* request, or the call is failed (-32602) saying why; and the
// refusal's text for a task the caller does not own (or that has expired).
std::optional<std::string> task_id_of(const McpServer::Call& call);
std::string not_yours(const std::string& id);

// The server's name and version, as initialize and 2026-07-28's _meta give them.
nlohmann::json mcp_server_info();
// What the server offers (initialize, server/discover).
nlohmann::json mcp_capabilities();

}  // namespace airlock::server
