#include "server/mcp_server/mcp_tools.hpp"

#include "server/mcp_server/mcp_tasks.hpp"

namespace airlock::server {
namespace {

// MCP requires schemas of type object; a tool's arguments and its output are objects.
nlohmann::json object_schema(nlohmann::json schema) {
  if (!schema.is_object()) schema = nlohmann::json::object();
  if (!schema.contains("type")) schema["type"] = "object";
  return schema;
}

nlohmann::json text_block(std::string text) {
  return {{"type", "text"}, {"text", std::move(text)}};
}

std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A tool an MCP server provides answered a CallToolResult already: passed through.
nlohmann::json passed_through(const nlohmann::json& output) {
  nlohmann::json result = {{"content", output.value("content", nlohmann::json::array())}};
  if (output.contains("structuredContent")) result["structuredContent"] = output["structuredContent"];
  if (output.value("isError", false)) result["isError"] = true;
  return result;
}

}  // namespace

nlohmann::json mcp_tool_entry(const policy::ToolConfig& t) {
  const bool destructive = t.risk == policy::Risk::high || t.risk == policy::Risk::critical;
  nlohmann::json entry = {
      {"name", t.name},
      {"title", t.name},
      {"description", t.description},
      {"inputSchema", object_schema(t.input_schema)},
      {"annotations",
       {{"title", t.name},
        {"readOnlyHint", t.risk == policy::Risk::low},
        {"destructiveHint", destructive},
        {"openWorldHint", t.network.has_egress()}}}};
  if (t.output_schema) entry["outputSchema"] = object_schema(*t.output_schema);
  // A call that waits for a person may be a task, which an MCP-only client polls (mcp_tasks.hpp).
  if (supports_tasks(t)) entry["execution"] = {{"taskSupport", "optional"}};
  return entry;
}

// A model reads the text: a python-code error's traceback follows the message there.
std::string with_traceback(std::string message, const nlohmann::json& details) {
  auto traceback = details.is_object() ? details.find("traceback") : details.end();
  if (traceback == details.end() || !traceback->is_array()) return message;
  for (const auto& line : *traceback)
    if (line.is_string()) message += "\n" + line.get<std::string>();
  return message;
}

nlohmann::json mcp_error_result(const std::string& kind, const std::string& message, bool structured,
                                const nlohmann::json& details) {
  nlohmann::json error = {{"error", {{"kind", kind}, {"message", message}}}};
  if (details.is_object()) error["error"]["details"] = details;
  nlohmann::json result = {{"isError", true},
                           {"content", nlohmann::json::array({text_block(with_traceback(message, details))})}};
  // Clients check structuredContent against the tool's outputSchema even in an error result:
  // for a tool that has one, the typed error goes in a second text block instead.
  if (structured)
    result["structuredContent"] = std::move(error);
  else
    result["content"].push_back(text_block(dump(error)));
  return result;
}

namespace {

nlohmann::json call_result(const policy::ToolConfig* tool, const pipeline::Invocation& inv) {
  const bool structured = !(tool && tool->output_schema);
  // A tool's own error (an MCP server's isError result) is its result: passed on below.
  const bool reported = inv.error && inv.error->kind == pipeline::ErrorKind::tool_error && inv.output;
  if (inv.error && !reported)
    return mcp_error_result(std::string(inv.error->kind_name()), inv.error->message, structured, inv.error_details);
  if (inv.suspended) {
    // A call waiting for a human (a critical tool's approval): an error naming the approval
    // and the invocation, which the client polls at GET /v1/invocations/{id}?wait=30s. (An
    // MCP task is the protocol's later form of this.)
    const auto& data = inv.suspended->data;
    const auto approval = data.is_object() ? data.value("approval", nlohmann::json::object()) : nlohmann::json::object();
    const std::string kind = inv.suspended->stage == "approval" ? "pending_approval" : "suspended";
    std::string message = "invocation " + inv.id + " is waiting: " + inv.suspended->reason;
    if (approval.contains("id"))
      message += "; approval " + approval.value("id", "") + " at " + approval.value("url", "");
    message += " (poll GET /v1/invocations/" + inv.id + "?wait=30s for its outcome)";
    auto result = mcp_error_result(kind, message, structured);
    if (structured) {
      result["structuredContent"]["invocationId"] = inv.id;
      if (!approval.empty()) result["structuredContent"]["error"]["approval"] = approval;
    }
    return result;
  }
  const nlohmann::json output = inv.output ? *inv.output : nlohmann::json::object();
  if (tool && tool->mcp) return passed_through(output);
  return {{"content", nlohmann::json::array({text_block(dump(output))})}, {"structuredContent", output}};
}

}  // namespace

nlohmann::json mcp_call_result(const policy::ToolConfig* tool, const pipeline::Invocation& inv) {
  auto result = call_result(tool, inv);
  // The invocation's id, as POST /v1/tools/{name}/invoke answers it: its row at
  // GET /v1/invocations/{id}, its audit record.
  if (!inv.id.empty()) result["_meta"][kInvocationIdMeta] = inv.id;
  return result;
}

}  // namespace airlock::server
