// A server's listing into registry tools. A tool is admitted only when every check passes,
// in this order: tools.allow, the name rule, its schemas (bounded, compiled), then its pin.
// Only a tool that would be admitted is pinned: a listing refused for another reason leaves
// no trace in the pins, and a pin change is recorded only for a version an admin could approve.
#include "mcp/catalog.hpp"

#include <algorithm>
#include <map>

#include "common/digest.hpp"
#include "common/utf8_truncate.hpp"
#include "mcp/content_tools.hpp"
#include "mcp/listed_schema.hpp"
#include "policy/names.hpp"

namespace airlock::mcp {
namespace {

constexpr std::size_t kMaxDescriptionBytes = 4 * 1024;
constexpr std::size_t kMaxRemoteNameBytes = 128;  // MCP's own bound on a tool name
constexpr std::size_t kMaxToolsPerListing = 1000;
constexpr std::size_t kMaxQuotedNameBytes = 80;  // of a refused name, in a message

// A name the server chose, safe in a message: as it is when it follows the name rule, else
// JSON-quoted (no line breaks, no escapes) and short.
std::string quoted(const std::string& name) {
  if (policy::valid_tool_name(name) && name.size() <= kMaxRemoteNameBytes) return name;
  return nlohmann::json(truncate_utf8(name, kMaxQuotedNameBytes))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool allowed(const policy::McpServerConfig& server, const std::string& name) {
  if (server.tools_allow.empty()) return true;
  return std::any_of(server.tools_allow.begin(), server.tools_allow.end(),
                     [&](const std::string& glob) { return policy::glob_match(glob, name); });
}

// "" when the name is usable, else why not.
std::string name_problem(const std::string& server, const ListedTool& tool) {
  if (tool.name.empty() || tool.name.size() > kMaxRemoteNameBytes ||
      !policy::valid_tool_name(server + "." + tool.name))
    return "tool " + server + "." + quoted(tool.name) +
           ": the name does not follow the tool name rule (" + policy::kToolNameRule + ", 1 to " +
           std::to_string(kMaxRemoteNameBytes) + " bytes)";
  if (reserved_tool_name(tool.name))
    return "tool " + server + "." + tool.name + ": the name is Airlock's own (it reads the server's resources or prompts)";
  return "";
}

Status compile_schemas(const ListedTool& listed, const std::string& name, policy::ToolConfig& t) {
  auto input = compile_listed_schema(listed.input_schema);
  if (!input)
    return Error::make("invalid_schema",
                       "tool " + name + ": inputSchema: " + input.error().message);
  t.input_check = *input;
  t.input_schema = listed.input_schema;
  if (!listed.output_schema) return {};
  auto output = compile_listed_schema(*listed.output_schema);
  if (!output)
    return Error::make("invalid_schema",
                       "tool " + name + ": outputSchema: " + output.error().message);
  t.output_check = *output;
  t.output_schema = listed.output_schema;
  return {};
}

// The registry's tool, before its pin is looked at; an error is one line of `refused`.
Result<policy::ToolConfig> make_tool(const policy::McpServerConfig& server,
                                     const ListedTool& listed) {
  policy::ToolConfig t;
  t.name = server.name + "." + listed.name;
  if (auto s = compile_schemas(listed, t.name, t); !s) return s.error();
  t.description = truncate_utf8(listed.description, kMaxDescriptionBytes);
  auto override_risk = server.risk_overrides.find(listed.name);
  t.risk = override_risk != server.risk_overrides.end() ? override_risk->second : server.risk;
  t.where = server.where;  // network stays empty: the server's own sandbox has its egress rules
  return t;
}

// Empty: admitted (pinned now or before). Otherwise why not (the listing is kept pending).
Result<std::string> compare_with_pin(const std::string& server, const ListedTool& listed,
                                     const std::string& sha, PinStore& pins) {
  auto pin = pins.get(server, listed.name);
  if (!pin) {
    auto created = pins.pin_if_new(server, listed.name, sha);
    if (!created) return created.error();
    if (*created) return std::string();
    pin = pins.get(server, listed.name);  // pinned meanwhile by another listing
    if (!pin)
      return Error::make("storage",
                         "tool pins: the pin of " + server + "." + listed.name + " vanished");
  }
  if (pin->sha256 == sha) return std::string();
  if (auto s = pins.record_pending(server, listed.name, sha, pinned_json(listed)); !s)
    return s.error();
  return "tool " + server + "." + listed.name + " changed since it was pinned on " +
         pin->pinned_at + " (pinned " + pin->sha256 + ", listed now " + sha +
         "): disabled until approved: airlock mcp pins approve " + server + " " + listed.name +
         " --sha256 " + sha;
}

// Names listed more than once: which of them a call would reach is the server's choice, so none.
std::map<std::string, int> name_counts(const std::vector<ListedTool>& listing) {
  std::map<std::string, int> counts;
  for (const auto& t : listing) ++counts[t.name];
  return counts;
}

// One tool through every check; an error is the store's (it fails the whole listing).
Status admit_one(const policy::McpServerConfig& server, const ListedTool& listed, int times_listed,
                 PinStore& pins, Admission& out) {
  auto refuse = [&](std::string why) {
    out.refused.push_back(std::move(why));
    return Status{};
  };
  const std::string name = server.name + "." + listed.name;
  if (!allowed(server, listed.name))
    return refuse("tool " + server.name + "." + quoted(listed.name) +
                  ": not allowed by mcp server " + server.name + "'s tools.allow");
  if (auto problem = name_problem(server.name, listed); !problem.empty()) return refuse(problem);
  if (times_listed > 1)
    return refuse("tool " + name + ": listed " + std::to_string(times_listed) +
                  " times by the server");
  auto tool = make_tool(server, listed);
  if (!tool) return refuse(tool.error().message);
  const std::string sha = pin_sha256(listed);
  auto refusal = compare_with_pin(server.name, listed, sha, pins);
  if (!refusal) return refusal.error();
  if (!refusal->empty()) return refuse(*refusal);
  tool->mcp = policy::McpToolSource{server.name, listed.name, sha, ""};
  out.tools.push_back(std::move(*tool));
  return {};
}

}  // namespace

Result<Admission> admit_listing(const policy::McpServerConfig& server,
                                const std::vector<ListedTool>& listing, PinStore& pins) {
  Admission out;
  const auto counts = name_counts(listing);
  const std::size_t considered = std::min(listing.size(), kMaxToolsPerListing);
  for (std::size_t i = 0; i < considered; ++i) {
    try {
      if (auto s = admit_one(server, listing[i], counts.at(listing[i].name), pins, out); !s)
        return s.error();
    } catch (const nlohmann::json::exception&) {  // text that is not UTF-8 cannot be hashed
      out.refused.push_back("tool " + server.name + "." + quoted(listing[i].name) +
                            ": not valid UTF-8");
    }
  }
  if (listing.size() > considered)
    out.refused.push_back(
        std::to_string(listing.size() - considered) + " more tools of mcp server " + server.name +
        ": not admitted, a server lists at most " + std::to_string(kMaxToolsPerListing));
  return out;
}

Status check_pin(const std::string& server, const ListedTool& tool, PinStore& pins) {
  const std::string name = server + "." + tool.name;
  auto pin = pins.get(server, tool.name);
  if (!pin) return Error::make("tool_disabled", "tool " + name + " is not pinned");
  std::string sha;
  try {
    sha = pin_sha256(tool);
  } catch (const nlohmann::json::exception&) {
    return Error::make("tool_disabled", "tool " + name + " is not valid UTF-8");
  }
  if (sha != pin->sha256)
    return Error::make("tool_disabled", "tool " + name + " changed since it was pinned on " +
                                            pin->pinned_at +
                                            ": disabled until approved (airlock mcp pins approve " +
                                            server + " " + tool.name + ")");
  return {};
}

policy::Config with_mcp_tools(const policy::Config& config,
                              const std::vector<policy::ToolConfig>& tools) {
  policy::Config out = config;
  if (tools.empty()) return out;
  std::vector<std::pair<std::string, std::string>> covered;  // (name, pin), sorted
  for (const auto& t : tools) {
    if (out.find_tool(t.name)) continue;  // the first of a name wins; the loader refuses a clash
    out.tools.push_back(t);
    covered.emplace_back(t.name, t.mcp ? t.mcp->pin_sha256 : "");
  }
  std::sort(covered.begin(), covered.end());
  std::string text = config.version + "\n";
  for (const auto& [name, pin] : covered) text += name + " " + pin + "\n";
  out.version = sha256_hex(text);
  return out;
}

}  // namespace airlock::mcp
