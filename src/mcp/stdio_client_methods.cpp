// The MCP methods of StdioClient (initialize, tools/list, tools/call, the content listings,
// resources/read, prompts/get) and the reader's handling of what the server sends.
#include <algorithm>
#include <array>

#include "mcp/stdio_client.hpp"
#include "mcp/stdio_client_impl.hpp"

namespace airlock::mcp {
namespace {

Error method_failed(const std::string& message) {
  return Error::make("tool_server_failed", message);
}

// A JSON-RPC error answer, as the methods' callers see it.
Error refused(const std::string& method, const Error& e) {
  return method_failed("the server answered " + method + " with an error: " + e.message);
}

Result<pipeline::McpToolResult> parse_call_result(const nlohmann::json& r) {
  auto bad = [](const std::string& why) {
    return method_failed("protocol error: the tools/call result " + why);
  };
  if (!r.is_object()) return bad("is not an object");
  pipeline::McpToolResult out;
  if (auto c = r.find("content"); c != r.end()) {
    if (!c->is_array()) return bad("has a \"content\" that is not an array");
    out.content = *c;
  }
  if (auto s = r.find("structuredContent"); s != r.end() && !s->is_null()) {
    if (!s->is_object()) return bad("has a \"structuredContent\" that is not an object");
    out.structured_content = *s;
  }
  if (auto e = r.find("isError"); e != r.end() && !e->is_null()) {
    if (!e->is_boolean()) return bad("has an \"isError\" that is not a boolean");
    out.is_error = e->get<bool>();
  }
  return out;
}

}  // namespace

bool accepted_server_protocol_version(const std::string& version) {
  static constexpr std::array<const char*, 3> kAccepted = {"2025-11-25", "2025-06-18",
                                                           "2025-03-26"};
  return std::any_of(kAccepted.begin(), kAccepted.end(),
                     [&](const char* v) { return version == v; });
}

Result<std::string> StdioClient::initialize(std::chrono::milliseconds timeout) {
  // No client capabilities: Airlock offers the server no roots, sampling or elicitation.
  nlohmann::json params = {{"protocolVersion", kClientProtocolVersion},
                           {"capabilities", nlohmann::json::object()},
                           {"clientInfo", {{"name", "airlock"}, {"version", "1"}}}};
  auto r = impl_->request("initialize", std::move(params), {timeout, nullptr, {}});
  if (!r) return r.error().code == "rpc_error" ? refused("initialize", r.error()) : r.error();
  const auto& result = *r;
  auto v = result.is_object() ? result.find("protocolVersion") : result.end();
  if (!result.is_object() || v == result.end() || !v->is_string())
    return method_failed("protocol error: the initialize result has no protocolVersion");
  const std::string version = v->get<std::string>();
  if (!accepted_server_protocol_version(version))
    return method_failed("the server speaks MCP revision \"" + version.substr(0, 40) +
                         "\"; Airlock speaks 2025-11-25, 2025-06-18 and 2025-03-26");
  if (auto c = result.find("capabilities"); c != result.end() && c->is_object()) {
    std::lock_guard lock(impl_->mu);
    impl_->server_capabilities = *c;
  }
  if (auto sent = impl_->send(make_notification("notifications/initialized", nullptr)); !sent)
    return sent.error();
  return version;
}

Result<std::vector<ListedTool>> StdioClient::list_tools(std::chrono::milliseconds timeout) {
  auto items = list_items("tools/list", "tools", timeout);
  if (!items) return items.error();
  auto parsed = parse_tools_list({{"tools", std::move(*items)}});
  if (!parsed) return method_failed("protocol error: tools/list: " + parsed.error().message);
  return parsed;
}

Result<pipeline::McpToolResult> StdioClient::call_tool(const ToolCallRequest& request) {
  nlohmann::json params = {{"name", request.name}, {"arguments", request.arguments}};
  auto r = impl_->request("tools/call", std::move(params),
                          {request.timeout, request.cancel, request.progress});
  if (r) return parse_call_result(*r);
  if (r.error().code != "rpc_error") return r.error();
  // The server refused the call (unknown tool, bad arguments): its answer, not its failure.
  pipeline::McpToolResult refusal;
  refusal.is_error = true;
  refusal.content = nlohmann::json::array(
      {{{"type", "text"}, {"text", "the server refused the call: " + r.error().message}}});
  return refusal;
}

nlohmann::json StdioClient::capabilities() const {
  std::lock_guard lock(impl_->mu);
  return impl_->server_capabilities;
}

Result<nlohmann::json> StdioClient::list_items(const std::string& method, const std::string& items_key,
                                               std::chrono::milliseconds timeout) {
  const auto& o = impl_->options;
  auto items = nlohmann::json::array();
  std::optional<std::string> cursor;
  for (std::size_t page = 0;; ++page) {
    if (page == o.max_list_pages)
      return method_failed("the server's " + method + " has more than " + std::to_string(o.max_list_pages) +
                           " pages; refused");
    nlohmann::json params = nlohmann::json::object();
    if (cursor) params["cursor"] = *cursor;
    auto r = impl_->request(method, std::move(params), {timeout, nullptr, {}});
    if (!r) return r.error().code == "rpc_error" ? refused(method, r.error()) : r.error();
    auto listed = r->is_object() ? r->find(items_key) : r->end();
    if (!r->is_object() || listed == r->end() || !listed->is_array())
      return method_failed("protocol error: the " + method + " result has no \"" + items_key + "\" array");
    for (auto& item : *listed) items.push_back(std::move(item));
    if (items.size() > o.max_tools)
      return method_failed("the server's " + method + " lists more than " + std::to_string(o.max_tools) + " " +
                           items_key + "; refused");
    auto next = r->find("nextCursor");
    if (next == r->end() || next->is_null()) return items;
    if (!next->is_string()) return method_failed("protocol error: " + method + " nextCursor is not a string");
    cursor = next->get<std::string>();
  }
}

Result<pipeline::McpToolResult> StdioClient::call_method(const std::string& method, const ToolCallRequest& request) {
  auto r = impl_->request(method, request.arguments, {request.timeout, request.cancel, request.progress});
  pipeline::McpToolResult out;
  if (!r) {
    if (r.error().code != "rpc_error") return r.error();
    out.is_error = true;
    out.content = nlohmann::json::array(
        {{{"type", "text"}, {"text", "the server refused " + method + ": " + r.error().message}}});
    return out;
  }
  if (!r->is_object()) return method_failed("protocol error: the " + method + " result is not an object");
  out.method_result = std::move(*r);
  return out;
}

// The reader thread's part: one line, one message.
Status StdioClient::Impl::handle_line(const std::string& line) {
  auto value = parse_json_bounded(line, options.max_json_depth);
  if (!value)
    return method_failed("protocol error: the server wrote a line that is not acceptable JSON (" +
                         value.error().message + ")");
  auto m = parse_message(*value);
  if (!m) return method_failed("protocol error: not a JSON-RPC message: " + m.error().message);
  switch (m->kind) {
    case Message::Kind::response:
    case Message::Kind::error_response: on_response(*m); break;
    case Message::Kind::request: on_server_request(*m); break;
    case Message::Kind::notification: on_notification(*m); break;
  }
  return {};
}

// Answers to ids we did not send (or gave up on) are ignored.
void StdioClient::Impl::on_response(const Message& m) {
  if (!m.id.is_number_integer()) return;
  std::lock_guard lock(mu);
  auto it = pending.find(m.id.get<std::int64_t>());
  if (it == pending.end() || it->second->outcome) return;
  if (m.kind == Message::Kind::response) {
    it->second->outcome = m.result;
  } else {
    const auto msg = m.error["message"].get<std::string>().substr(0, 1000);
    it->second->outcome =
        Error::make("rpc_error", msg + " (JSON-RPC error " + std::to_string(m.error["code"].get<long long>()) + ")");
  }
  cv.notify_all();
}

// ping is answered. roots/list, sampling and elicitation are refused: Airlock does not relay a
// third-party server's requests to the end user (nobody is there to answer or approve them),
// and it offered none of those capabilities in initialize.
void StdioClient::Impl::on_server_request(const Message& m) {
  if (m.method == "ping") {
    (void)send(make_result(m.id, nlohmann::json::object()));
    return;
  }
  (void)send(make_error(m.id, rpc_error::method_not_found,
                        "Airlock does not relay " + m.method.substr(0, 100) +
                            " to the end user"));
}

void StdioClient::Impl::on_notification(const Message& m) {
  if (m.method == "notifications/tools/list_changed") {
    if (options.on_tools_changed) options.on_tools_changed();
    return;
  }
  if (m.method != "notifications/progress" || !m.params.is_object()) return;
  const auto& p = m.params;
  auto token = p.find("progressToken");
  auto value = p.find("progress");
  if (token == p.end() || !token->is_string() || value == p.end() || !value->is_number()) return;
  pipeline::Progress progress;
  progress.progress = value->get<double>();
  if (auto t = p.find("total"); t != p.end() && t->is_number()) progress.total = t->get<double>();
  if (auto s = p.find("message"); s != p.end() && s->is_string())
    progress.message = s->get<std::string>().substr(0, 1000);
  std::function<void(const pipeline::Progress&)> callback;
  {
    std::lock_guard lock(mu);
    auto it = by_progress_token.find(token->get<std::string>());
    if (it == by_progress_token.end()) return;
    callback = it->second->progress;
  }
  if (callback) callback(progress);
}

}  // namespace airlock::mcp
