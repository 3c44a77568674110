#include "pipeline/decision_basis.hpp"

#include "access/decide.hpp"
#include "pipeline/stages/approval.hpp"

namespace airlock::pipeline {
namespace {

using nlohmann::json;

// definitions[section][name], or null.
json definition(const policy::Config& config, const char* section, const std::string& name) {
  const json& d = config.definitions;
  if (!d.contains(section) || !d[section].is_object() || !d[section].contains(name)) return nullptr;
  return d[section][name];
}

// Without its definitions (a configuration built in code) a tool's part is the whole file's
// version: fail closed, as before the basis was kept by parts.
json tool_part(const policy::Config& config, const policy::ToolConfig& tool) {
  if (tool.mcp)
    return {{"mcp_server", definition(config, "mcpServers", tool.mcp->server)},
            {"remote_name", tool.mcp->remote_name},
            {"pin_sha256", tool.mcp->pin_sha256},
            {"risk", policy::risk_name(tool.risk)}};
  json entry = definition(config, "tools", tool.name);
  if (entry.is_null()) return {{"config_version", config.version}};
  return entry;
}

json tier_part(const policy::Config& config, const policy::ToolConfig& tool) {
  const std::string risk(policy::risk_name(tool.risk));
  const json& tiers = config.definitions.contains("tiers") ? config.definitions["tiers"] : json();
  return {{"risk", risk}, {"tier", tiers.is_object() && tiers.contains(risk) ? tiers[risk] : json()}};
}

json access_part(const policy::Config& config, const Invocation& inv) {
  const auto decided = access::decide(config, inv.actor ? &*inv.actor : nullptr,
                                      inv.subject ? &*inv.subject : nullptr, policy::Action::invoke, inv.tool_name);
  json part = {{"allowed", decided.allowed}, {"rule", decided.rule}, {"principal", nullptr},
               {"roles", json::object()}, {"issuer", nullptr}};
  if (inv.actor) part["principal"] = definition(config, "principals", inv.actor->principal);
  if (inv.subject) {
    for (const auto& role : access::roles_of(config, *inv.subject))
      part["roles"][role] = definition(config, "roles", role);
    part["issuer"] = definition(config, "issuers", inv.subject->issuer);
  }
  return part;
}

json credentials_part(const policy::Config& config, const policy::ToolConfig& tool) {
  json servers = json::object();
  for (const auto& c : tool.credentials)
    if (const auto* p = std::get_if<policy::PostgresCredential>(&c.source))
      servers[p->server] = definition(config, "credentialServers", p->server);
  return servers;
}

const std::vector<std::pair<std::string, std::string>>& part_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"tool", "the tool's definition"},
      {"tier", "its risk tier"},
      {"access", "the access rules that let it through"},
      {"credentials", "the credential servers it uses"},
      {"dlp", "the DLP policy"}};
  return names;
}

}  // namespace

Result<json> decision_basis(const policy::Config& config, const Invocation& inv) {
  const policy::ToolConfig* tool = config.find_tool(inv.tool_name);
  json parts = {{"tool", nullptr}, {"tier", nullptr}, {"credentials", nullptr},
                {"access", access_part(config, inv)},
                {"dlp", config.definitions.contains("dlp") ? config.definitions["dlp"] : json()}};
  if (tool) {
    parts["tool"] = tool_part(config, *tool);
    parts["tier"] = tier_part(config, *tool);
    parts["credentials"] = credentials_part(config, *tool);
  }
  json basis = json::object();
  for (const auto& [name, part] : parts.items()) {
    auto digest = canonical_sha256(part);
    if (!digest) return Error::make("decision_basis", "the " + name + " part: " + digest.error().message);
    basis[name] = std::move(*digest);
  }
  return basis;
}

std::vector<std::string> changed_parts(const json& kept, const json& now) {
  std::vector<std::string> changed;
  for (const auto& [part, words] : part_names()) {
    const bool same = kept.is_object() && now.is_object() && kept.contains(part) && now.contains(part) &&
                      kept[part] == now[part];
    if (!same) changed.push_back(words);
  }
  return changed;
}

Result<std::string> basis_sha256(const json& basis) { return canonical_sha256(basis); }

}  // namespace airlock::pipeline
