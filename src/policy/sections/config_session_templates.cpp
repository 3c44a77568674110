// The sessionTemplates section: what each session is made from (session_templates_config.hpp).
#include <filesystem>
#include <set>

#include "policy/config_reader.hpp"
#include "policy/names.hpp"

namespace airlock::policy::detail {
namespace {

namespace fs = std::filesystem;

// "/srv/datasets:/data" or "/srv/scratch:/scratch:rw": the host path (relative to the config's
// directory, existing now) and where the session sees it, absolute.
SessionDataPath read_data_path(Reader& r, const YAML::Node& n, const std::string& what) {
  const std::string text = r.string(n, what);
  std::string spec = text;
  SessionDataPath out;
  for (const char* suffix : {":rw", ":ro"})
    if (spec.size() > 3 && spec.compare(spec.size() - 3, 3, suffix) == 0) {
      out.writable = std::string_view(suffix) == ":rw";
      spec.resize(spec.size() - 3);
      break;
    }
  const auto colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    fail(n, what + ": expected HOST_PATH:PATH_INSIDE[:ro|:rw], got '" + text + "'");
  out.host_path = r.resolve(spec.substr(0, colon));
  out.path_inside = spec.substr(colon + 1);
  if (out.path_inside.front() != '/' || out.path_inside.find("..") != std::string::npos)
    fail(n, what + ": the path inside must be absolute and without '..', got '" + out.path_inside + "'");
  if (!fs::exists(out.host_path)) fail(n, what + ": " + out.host_path + " does not exist");
  return out;
}

// limits: the tier's keys, plus cpus, idleTimeout and maxLifetime.
void read_session_limits(Reader& r, const YAML::Node& n, const std::string& what, SessionTemplate& t) {
  t.limits = r.overrides(n, what, {"cpus", "idleTimeout", "maxLifetime"});
  r.field(n, "cpus", [&](const YAML::Node& v) {
    double cpus = 0;
    if (!YAML::convert<double>::decode(v, cpus) || !(cpus >= 0.01) || cpus > 1024)
      fail(v, what + ".cpus: expected a number of cores from 0.01 to 1024");
    t.cpus = cpus;
  });
  auto bounded = [&](const char* key, std::chrono::milliseconds& out) {
    r.field(n, key, [&](const YAML::Node& v) {
      const auto d = r.duration(v, what + "." + key);
      if (d < std::chrono::seconds(1) || d > kMaxSessionLifetime)
        fail(v, what + "." + key + ": expected a duration from 1s to 168h");
      out = d;
    });
  };
  bounded("idleTimeout", t.idle_timeout);
  bounded("maxLifetime", t.max_lifetime);
}

// A dotted Python module name (a.b_c.d): identifiers of ASCII letters, digits and '_'.
bool module_name(std::string_view name) {
  bool start = true;  // at the start of an identifier
  for (char c : name) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (c == '.' && !start) {
      start = true;
    } else if (letter || (!start && c >= '0' && c <= '9')) {
      start = false;
    } else {
      return false;
    }
  }
  return !start;
}

// interpreter: {start: ahead | firstCell, preload: [module, ...]}. A module is named as `import`
// names it: the interpreter imports each before it says it is ready.
void read_interpreter(Reader& r, const YAML::Node& n, const std::string& what, SessionInterpreter& out) {
  r.expect_map(n, what);
  r.only_keys(n, what, {"start", "preload"});
  r.field(n, "start", [&](const YAML::Node& v) {
    const std::string start = r.string(v, what + ".start");
    if (start != "ahead" && start != "firstCell") fail(v, what + ".start: expected ahead or firstCell, got '" + start + "'");
    out.start_ahead = start == "ahead";
  });
  r.field(n, "preload", [&](const YAML::Node& v) {
    r.items(v, what + ".preload", [&](const YAML::Node& item) {
      std::string name = r.string(item, what + ".preload");
      if (name.size() > 200 || !module_name(name))
        fail(item, what + ".preload: '" + name + "' is not a module name (as import names it: a.b.c)");
      out.preload.push_back(std::move(name));
    });
    if (out.preload.size() > kMaxInterpreterPreload)
      fail(v, what + ".preload: at most " + std::to_string(kMaxInterpreterPreload) + " modules");
  });
}

// A session's credentials are leased for it and renewed in the background, with no request at
// hand: what cannot be renewed that way is refused. An injected header is fixed when the
// session's egress proxy starts (a renewed value could not reach it); an oauth-exchange is made
// from the user's token of a request, which a renewal does not have.
void refuse_unrenewable(const YAML::Node& item, const std::string& what, std::size_t i, const CredentialSpec& c) {
  const std::string which = what + ".credentials[" + std::to_string(i) + "] (" + c.env + ")";
  if (c.inject)
    fail(item["inject"], which + ": inject is not supported for sessions: the egress proxy's header is fixed "
                                 "when the session starts, and the credential is renewed while it runs; give it as "
                                 "an environment variable (drop inject)");
  if (std::holds_alternative<OAuthExchangeCredential>(c.source))
    fail(item["oauth-exchange"], which + ": oauth-exchange is not supported for sessions: it is exchanged "
                                         "from the user's token of a request, and a session renews its "
                                         "credentials with no request at hand");
}

SessionTemplate read_template(Reader& r, const YAML::Node& n, std::size_t i, const std::string& label,
                              const std::vector<CredentialServer>& servers) {
  std::string what = "sessionTemplates[" + std::to_string(i) + "]";
  r.only_keys(n, what, {"name", "description", "risk", "limits", "network", "dataPaths", "env", "credentials", "warmPool", "validation",
                       "interpreter"});
  SessionTemplate t;
  t.where = label + ":" + std::to_string(n.Mark().line + 1);
  if (!n["name"]) r.error(n, what + ": missing name");
  r.field(n, "name", [&](const YAML::Node& v) {
    t.name = r.string(v, what + ".name");
    if (!valid_tool_name(t.name)) fail(v, what + ".name: " + kToolNameRule);
  });
  if (!t.name.empty()) what = "session template " + t.name;
  r.field(n, "description", [&](const YAML::Node& v) { t.description = r.string(v, what + ".description"); });
  r.field(n, "risk", [&](const YAML::Node& v) {
    t.risk = r.risk(v, what + ".risk");
    // A session runs on its tier's session backend (docs/sessions.md): low and medium on the
    // local sandbox, high on gVisor. No approval gates a session's creation nor its execs, so
    // a critical one, whose every tool call waits for a person's approval, is refused.
    if (t.risk == Risk::critical)
      fail(v, what + ".risk: critical is refused for sessions: a critical tool call waits for a person's "
                     "approval each time, and no approval gates a session or its execs; use high");
  });
  r.field(n, "limits", [&](const YAML::Node& v) { read_session_limits(r, v, what + ".limits", t); });
  if (t.idle_timeout > t.max_lifetime)
    r.error(n["limits"] ? n["limits"] : n, what + ".limits: idleTimeout is longer than maxLifetime");
  r.field(n, "network", [&](const YAML::Node& v) { read_network(r, v, what + ".network", t.network); });
  r.field(n, "dataPaths", [&](const YAML::Node& v) {
    std::set<std::string> inside;
    r.items(v, what + ".dataPaths", [&](const YAML::Node& item) {
      auto p = read_data_path(r, item, what + ".dataPaths");
      if (!inside.insert(p.path_inside).second) fail(item, what + ".dataPaths: " + p.path_inside + " is bound twice");
      t.data_paths.push_back(std::move(p));
    });
  });
  r.field(n, "env", [&](const YAML::Node& v) { read_env(r, v, what + ".env", t.env); });
  r.field(n, "validation", [&](const YAML::Node& v) { read_validation(r, v, what + ".validation", t.validation); });
  r.field(n, "warmPool", [&](const YAML::Node& v) {
    t.warm_pool = static_cast<unsigned>(r.unsigned_int(v, what + ".warmPool", kMaxWarmPool));
  });
  r.field(n, "interpreter", [&](const YAML::Node& v) { read_interpreter(r, v, what + ".interpreter", t.interpreter); });
  if (t.interpreter.start_ahead && t.warm_pool == 0)
    r.error(n["interpreter"], what + ".interpreter.start: ahead starts the interpreter in the warm pool's sandboxes, "
                                     "and warmPool is 0 (a session started cold starts it on its first cell)");
  r.field(n, "credentials", [&](const YAML::Node& v) {
    read_credentials(r, v, what + ".credentials", servers, t.env, t.network, t.credentials);
    for (std::size_t k = 0; k < t.credentials.size(); ++k) refuse_unrenewable(v[k], what, k, t.credentials[k]);
    for (auto& c : t.credentials) c.where = t.where;  // as a tool's
  });
  return t;
}

}  // namespace

void read_session_templates(Reader& r, const YAML::Node& n, const std::string& label,
                            const std::vector<CredentialServer>& servers, std::vector<SessionTemplate>& out) {
  std::set<std::string> names;
  std::size_t i = 0;
  r.items(n, "sessionTemplates", [&](const YAML::Node& item) {
    auto t = read_template(r, item, i++, label, servers);
    if (!t.name.empty() && !names.insert(t.name).second)
      fail(item, "sessionTemplates: '" + t.name + "' is defined twice");
    out.push_back(std::move(t));
  });
}

}  // namespace airlock::policy::detail
