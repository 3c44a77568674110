#include "server/mcp_server/mcp_session_tools.hpp"

#include "access/decide.hpp"
#include "common/base64.hpp"
#include "common/utf8.hpp"
#include "server/mcp_server/mcp_protocol.hpp"
#include "server/mcp_server/mcp_tools.hpp"
#include "server/sessions/session_code.hpp"
#include "server/sessions/session_exec.hpp"
#include "server/sessions/session_files.hpp"
#include "server/sessions/sessions_api.hpp"

namespace airlock::server {
namespace {

using nlohmann::json;

constexpr const char* kCreate = "session_create";
constexpr const char* kExec = "session_exec";
constexpr const char* kCode = "session_code";
constexpr const char* kWrite = "session_write_file";
constexpr const char* kRead = "session_read_file";
constexpr const char* kEnd = "session_end";
constexpr std::size_t kMaxReadBytes = 1u << 20;  // session_read_file answers a file up to this whole

// The templates `caller` may create sessions of, in the config's order.
std::vector<const policy::SessionTemplate*> creatable(const policy::Config& config, const pipeline::Caller& caller) {
  std::vector<const policy::SessionTemplate*> out;
  if (!may_use_sessions(caller)) return out;
  const access::Actor* actor = caller.actor ? &*caller.actor : nullptr;
  const access::Subject* subject = caller.subject ? &*caller.subject : nullptr;
  for (const auto& t : config.session_templates)
    if (access::decide(config, actor, subject, policy::Action::create_session, t.name).allowed) out.push_back(&t);
  return out;
}

json session_property() {
  return {{"type", "string"},
          {"description",
           "The id of a session of yours (session_create answers it). Left out: this MCP session's workspace, "
           "created on first use and ended when the MCP session ends."}};
}

json object_schema(json properties, json required) {
  properties["session"] = session_property();
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
          {"additionalProperties", false}};
}

json duration_property(const std::string& what) {
  return {{"type", "string"}, {"description", what + ": a duration such as \"30s\" or \"10m\""}};
}

json create_schema(const std::vector<const policy::SessionTemplate*>& templates) {
  json names = json::array();
  std::string described = "The session's template:";
  for (const auto* t : templates) {
    names.push_back(t->name);
    described += " " + t->name + (t->description.empty() ? "" : " (" + t->description + ")") + ";";
  }
  json tmpl = {{"type", "string"}, {"enum", names}, {"description", described}};
  if (templates.size() == 1) tmpl["default"] = templates.front()->name;
  json properties = {{"template", tmpl},
                     {"idleTimeout", duration_property("How long it may stay idle before it ends, at most the template's")},
                     {"labels", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}}};
  return {{"type", "object"}, {"properties", properties},
          {"required", templates.size() == 1 ? json::array() : json::array({"template"})},
          {"additionalProperties", false}};
}

json tool(const char* name, const std::string& title, const std::string& description, json schema, json hints) {
  hints["title"] = title;
  return {{"name", name}, {"title", title}, {"description", description}, {"inputSchema", std::move(schema)},
          {"annotations", std::move(hints)}};
}

json hints(bool read_only, bool destructive, bool open_world) {
  return {{"readOnlyHint", read_only}, {"destructiveHint", destructive}, {"openWorldHint", open_world}};
}

// Every entry, before those the config's own tools shadow are left out.
std::vector<json> all_entries(const std::vector<const policy::SessionTemplate*>& templates) {
  bool egress = false;
  for (const auto* t : templates) egress = egress || t->network.has_egress();
  const json code = {{"type", "string"}, {"description", "Python to run"}};
  const json command = {
      {"anyOf", json::array({{{"type", "string"}}, {{"type", "array"}, {"items", {{"type", "string"}}}, {"minItems", 1}}})},
      {"description", "A shell line (run by /bin/sh -c) or a list of arguments"}};
  const json path = {{"type", "string"}, {"description", "A path relative to the workspace (/work); one ending in '/' is a directory"}};
  return {
      tool(kCreate, "Create a session",
           "Starts a sandboxed workspace (a session) and answers its id. The first one an MCP session creates is "
           "its default workspace; each one it creates ends when the MCP session ends.",
           create_schema(templates), hints(false, false, egress)),
      tool(kExec, "Run a command in a session",
           "Runs a command in the session's sandbox and answers its exit code, stdout and stderr. Files in /work "
           "and what runs in the background stay between commands.",
           object_schema({{"command", command},
                          {"stdin", {{"type", "string"}}},
                          {"cwd", {{"type", "string"}, {"description", "An absolute directory inside the session"}}},
                          {"env", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
                          {"timeout", duration_property("The command's timeout")}},
                         json::array({"command"})),
           hints(false, false, egress)),
      tool(kCode, "Run Python in a session",
           "Runs a cell of Python in the session's persistent interpreter: variables, imports and files stay "
           "between cells. Answers stdout, stderr, the last expression's value, the error with its traceback, "
           "and figures as PNG images.",
           object_schema({{"code", code}, {"timeout", duration_property("The cell's timeout")}}, json::array({"code"})),
           hints(false, false, egress)),
      tool(kWrite, "Write a file in a session",
           "Writes a file in the session's workspace (parents are made), replacing it whole.",
           object_schema({{"path", path},
                          {"content", {{"type", "string"}}},
                          {"encoding", {{"type", "string"}, {"enum", json::array({"utf-8", "base64"})}, {"default", "utf-8"}}}},
                         json::array({"path", "content"})),
           hints(false, false, false)),
      tool(kRead, "Read a file in a session",
           "Reads a file of the session's workspace (up to 1 MiB; UTF-8 text as it is, other bytes in base64), "
           "or lists a directory.",
           object_schema({{"path", path}}, json::array({"path"})), hints(true, false, false)),
      tool(kEnd, "End a session",
           "Ends the session: every process in it stops and its files are gone.", object_schema(json::object(), json::array()),
           hints(false, true, false)),
  };
}

// ---- answers ----

json text_block(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

// A refusal by its error code; "quota_exceeded:<quota>" names the quota.
json refusal(const Error& e) {
  const auto colon = e.code.find(':');
  auto result = mcp_error_result(e.code.substr(0, colon), e.message);
  if (colon != std::string::npos) result["structuredContent"]["error"]["quota"] = e.code.substr(colon + 1);
  return result;
}

json refusal(const std::string& code, const std::string& message) { return refusal(Error::make(code, message)); }

json answer(std::string text, json structured, bool is_error = false) {
  json result = {{"content", json::array({text_block(std::move(text))})}, {"structuredContent", std::move(structured)}};
  if (is_error) result["isError"] = true;
  if (result["structuredContent"].contains("invocation_id"))
    result["_meta"][kInvocationIdMeta] = result["structuredContent"]["invocation_id"];
  return result;
}

void add_section(std::string& text, const std::string& name, const std::string& body) {
  if (body.empty()) return;
  if (!text.empty()) text += "\n";
  text += name + ":\n" + body;
  if (text.back() != '\n') text += "\n";
}

json exec_result(json exit) {
  const std::string verdict = exit.value("verdict", "");
  std::string text = "verdict: " + verdict;
  if (exit["exit_code"].is_number()) text += ", exit code " + std::to_string(exit["exit_code"].get<int>());
  if (exit["signal"].is_string()) text += ", signal " + exit["signal"].get<std::string>();
  text += "\n";
  add_section(text, "message", exit.value("message", ""));
  add_section(text, "stdout", exit.value("stdout", ""));
  add_section(text, "stderr", exit.value("stderr", ""));
  // A command that exits non-zero ran: its exit is the answer. Anything else did not finish.
  return answer(text, std::move(exit), verdict != "ok" && verdict != "exit_nonzero");
}

// A cell as a model reads it: its output, its value or its error with the traceback, then its
// figures as image blocks; the whole answer in structuredContent.
json cell_result(json cell) {
  const std::string verdict = cell.value("verdict", "");
  std::string text;
  if (verdict != "ok" && verdict != "exception") text = "verdict: " + verdict + "\n";
  add_section(text, "message", cell.value("message", ""));
  add_section(text, "stdout", cell.value("stdout", ""));
  add_section(text, "stderr", cell.value("stderr", ""));
  if (cell.contains("result")) add_section(text, "result", cell["result"].value("repr", ""));
  if (cell.contains("error")) {
    const auto& e = cell["error"];
    std::string error = e.value("name", "") + ": " + e.value("value", "") + "\n";
    for (const auto& line : e.value("traceback", json::array()))
      if (line.is_string()) error += line.get<std::string>() + "\n";
    add_section(text, "error", error);
  }
  if (text.empty()) text = "verdict: ok (no output, no value)\n";
  auto result = answer(text, cell, verdict != "ok");
  for (const auto& image : cell.value("images", json::array()))
    result["content"].push_back({{"type", "image"}, {"data", image.value("data", "")}, {"mimeType", image.value("type", "")}});
  return result;
}

json read_result(const std::string& path, FileRead read) {
  json redactions = json::array();
  for (const auto& d : read.redactions) redactions.push_back({{"detector", d}});
  if (read.listing) {
    std::string text = "'" + (path.empty() ? std::string(".") : path) + "' is a directory:\n";
    for (const auto& e : (*read.listing)["entries"])
      text += e.value("name", "") + (e.value("type", "") == "directory" ? "/" : "") + "  " + e.value("type", "") + " " +
              std::to_string(e.value("size", std::uint64_t{0})) + " bytes\n";
    return answer(text, *read.listing);
  }
  json file = {{"path", path}, {"type", "file"}, {"size", read.bytes.size()}, {"redactions", redactions}};
  if (is_valid_utf8(read.bytes)) {
    file["encoding"] = "utf-8";
    file["content"] = read.bytes;
    return answer(read.bytes, file);
  }
  file["encoding"] = "base64";
  file["content"] = base64_encode(read.bytes);
  return answer("'" + path + "' is " + std::to_string(read.bytes.size()) + " bytes, not UTF-8 text; base64:\n" +
                    file["content"].get<std::string>(),
                file);
}

// ---- arguments ----

// A string argument: nullopt when absent; an error when it is there and not a string.
Result<std::optional<std::string>> string_argument(const json& args, const char* name) {
  auto it = args.find(name);
  if (it == args.end()) return std::optional<std::string>();
  if (!it->is_string()) return Error::make("invalid_input", std::string(name) + ": a string");
  return std::optional<std::string>(it->get<std::string>());
}

// The arguments with only `allowed` (and session) in them; an unknown one is refused by name.
Status only(const json& args, std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : args.items()) {
    bool known = key == "session";
    for (const char* a : allowed) known = known || key == a;
    if (!known) return Error::make("invalid_input", "'" + key + "' is not an argument of this tool");
  }
  return {};
}

json without_session(json args) {
  args.erase("session");
  return args;
}

// ---- the session a call is for ----

// A session for a caller that named none: the first template (in the config's order) it may
// create.
Result<std::shared_ptr<LiveSession>> create(const SessionToolCall& c, SessionService::CreateRequest request) {
  auto made = create_session(c.services, *c.services.sessions, *c.generation, c.caller, std::move(request));
  if (!made) return made.error();
  if (c.mcp_session.empty()) return made;
  // Kept by the MCP session, to end with it; gone meanwhile: it ends now.
  if (!c.mcp_sessions->add_workspace(c.mcp_session, mcp_principal(c.caller), *made)) {
    c.services.sessions->end(*made, "mcp_session_ended", "its MCP session ended as it was created");
    return Error::make("not_found", "the MCP session ended");
  }
  return made;
}

Result<std::shared_ptr<LiveSession>> default_workspace(const SessionToolCall& c, bool make) {
  if (c.mcp_session.empty())
    return Error::make("invalid_input",
                       "session: required without an MCP session (a stateless request): create one with session_create "
                       "and name its id");
  const std::string principal = mcp_principal(c.caller);
  if (auto ws = c.mcp_sessions->workspace(c.mcp_session, principal)) return ws;
  if (!make) return Error::make("not_found", "this MCP session has no workspace");
  const auto templates = creatable(*c.generation->config, c.caller);
  if (templates.empty()) return Error::make("forbidden", "you may create a session of no template");
  SessionService::CreateRequest request;
  request.template_name = templates.front()->name;
  auto made = create(c, std::move(request));
  if (!made) return made;
  // Two first calls at once each made one: the one kept first is the workspace, the other ends.
  auto kept = c.mcp_sessions->workspace(c.mcp_session, principal);
  if (kept && kept != *made) {
    c.services.sessions->end(*made, "mcp_session_ended", "another call made this MCP session's workspace first");
    return kept;
  }
  return made;
}

// The session named by `session`, the caller's own only, or the MCP session's workspace.
Result<std::shared_ptr<LiveSession>> target(const SessionToolCall& c, bool make) {
  auto named = string_argument(c.arguments, "session");
  if (!named) return named.error();
  if (!*named) return default_workspace(c, make);
  auto found = c.services.sessions->find(**named, c.caller, false);
  if (!found) return Error::make("not_found", "no session " + **named + " of yours");
  return found;
}

// ---- the tools ----

json create_tool(const SessionToolCall& c) {
  if (auto known = only(c.arguments, {"template", "idleTimeout", "labels"}); !known) return refusal(known.error());
  if (c.arguments.contains("session")) return refusal("invalid_input", "'session' is not an argument of session_create");
  json args = c.arguments;
  if (!args.contains("template")) {
    const auto templates = creatable(*c.generation->config, c.caller);
    if (templates.size() != 1)
      return refusal("invalid_input", "template: required (you may create sessions of " +
                                          std::to_string(templates.size()) + " templates)");
    args["template"] = templates.front()->name;
  }
  auto request = parse_create_request(args.dump());
  if (!request) return refusal(request.error());
  auto made = create(c, std::move(*request));
  if (!made) return refusal(made.error());
  json session = (*made)->to_json();
  const bool is_default =
      !c.mcp_session.empty() && c.mcp_sessions->workspace(c.mcp_session, mcp_principal(c.caller)) == *made;
  session["default"] = is_default;
  return answer("session " + (*made)->id + " (template " + (*made)->template_name + ") is running" +
                    (is_default ? "; it is this MCP session's workspace: calls without `session` use it" : "") + "\n",
                session);
}

ExecRun::Context context(const SessionToolCall& c, std::shared_ptr<LiveSession> session) {
  return {std::move(session), c.caller, c.generation, c.services.quotas, c.services.sessions->audit(),
          c.services.sessions->new_id()()};
}

json exec_tool(const SessionToolCall& c, std::shared_ptr<LiveSession> session) {
  auto request = parse_exec_request(without_session(c.arguments).dump());
  if (!request) return refusal(request.error());
  auto exit = run_exec_whole(context(c, session), std::move(*request));
  if (!exit) return refusal(exit.error());
  (*exit)["session"] = session->id;
  return exec_result(std::move(*exit));
}

json code_tool(const SessionToolCall& c, std::shared_ptr<LiveSession> session) {
  auto request = parse_code_request(without_session(c.arguments).dump());
  if (!request) return refusal(request.error());
  auto cell = run_code_cell(context(c, session), *request);
  if (!cell) return refusal(cell.error());
  (*cell)["session"] = session->id;
  return cell_result(std::move(*cell));
}

json write_tool(const SessionToolCall& c, LiveSession& session) {
  if (auto known = only(c.arguments, {"path", "content", "encoding"}); !known) return refusal(known.error());
  auto path = string_argument(c.arguments, "path");
  auto content = string_argument(c.arguments, "content");
  auto encoding = string_argument(c.arguments, "encoding");
  for (const auto* a : {&path, &content, &encoding})
    if (!*a) return refusal(a->error());
  if (!*path || !*content) return refusal("invalid_input", std::string(*path ? "content" : "path") + ": missing");
  std::string bytes = std::move(**content);
  if (*encoding && **encoding == "base64") {
    auto decoded = mcp_protocol::base64_decode(bytes);
    if (!decoded) return refusal("invalid_input", "content: not base64 (encoding: base64)");
    bytes = std::move(*decoded);
  } else if (*encoding && **encoding != "utf-8") {
    return refusal("invalid_input", "encoding: utf-8 or base64, not '" + **encoding + "'");
  }
  auto where = workspace_target(**path);
  if (!where) return refusal(where.error());
  auto written = write_session_file(*c.services.sessions, session, *c.generation, *where, std::move(bytes));
  if (!written) return refusal(written.error());
  (*written)["session"] = session.id;
  return answer("wrote '" + (*written)["path"].get<std::string>() + "' (" +
                    std::to_string((*written)["size"].get<std::uint64_t>()) + " bytes)\n",
                *written);
}

json read_tool(const SessionToolCall& c, LiveSession& session) {
  if (auto known = only(c.arguments, {"path"}); !known) return refusal(known.error());
  auto path = string_argument(c.arguments, "path");
  if (!path) return refusal(path.error());
  if (!*path) return refusal("invalid_input", "path: missing");
  auto where = workspace_target(**path);
  if (!where) return refusal(where.error());
  auto read = read_session_file(*c.services.sessions, session, *c.generation, where->path, kMaxReadBytes);
  if (!read) return refusal(read.error());
  return read_result(where->path, std::move(*read));
}

json end_tool(const SessionToolCall& c, const std::shared_ptr<LiveSession>& session) {
  if (auto known = only(c.arguments, {}); !known) return refusal(known.error());
  c.services.sessions->end(session, "deleted", "ended by its owner (MCP session_end)");
  return answer("session " + session->id + " has ended\n", session->to_json());
}

}  // namespace

bool is_session_tool(std::string_view name) {
  for (const char* t : {kCreate, kExec, kCode, kWrite, kRead, kEnd})
    if (name == t) return true;
  return false;
}

json session_tool_entries(const policy::Config& config, const pipeline::Caller& caller) {
  json out = json::array();
  const auto templates = creatable(config, caller);
  if (templates.empty()) return out;
  for (auto& entry : all_entries(templates))
    if (!config.find_tool(entry["name"].get<std::string>())) out.push_back(std::move(entry));
  return out;
}

json call_session_tool(const SessionToolCall& c) {
  if (!c.arguments.is_object()) return refusal("invalid_input", "the arguments must be a JSON object");
  if (auto may = may_use_sessions(c.caller); !may) return refusal(may.error());
  if (c.name == kCreate) return create_tool(c);
  // Exec, code and write make the workspace on first use; reading or ending one that is not
  // there would make one to no purpose.
  const bool make = c.name == kExec || c.name == kCode || c.name == kWrite;
  auto session = target(c, make);
  if (!session) return refusal(session.error());
  if (c.name == kExec) return exec_tool(c, *session);
  if (c.name == kCode) return code_tool(c, *session);
  if (c.name == kWrite) return write_tool(c, **session);
  if (c.name == kRead) return read_tool(c, **session);
  return end_tool(c, *session);
}

}  // namespace airlock::server
