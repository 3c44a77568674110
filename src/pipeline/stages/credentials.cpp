#include "pipeline/stages/credentials.hpp"

#include <cstdio>

#include "common/split.hpp"
#include "creds/wipe.hpp"
#include "dlp/credential_redaction.hpp"

namespace airlock::pipeline {

std::optional<std::vector<std::string>> user_token_scopes(const Subject& user) {
  if (auto s = user.claims.find("scope"); s != user.claims.end() && s->is_string())
    return split_nonempty(s->get<std::string>(), ' ');
  auto scp = user.claims.find("scp");
  if (scp == user.claims.end()) return std::nullopt;
  if (scp->is_string()) return split_nonempty(scp->get<std::string>(), ' ');
  std::vector<std::string> out;
  if (scp->is_array())
    for (const auto& v : *scp)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

namespace {

// Whose call it is: the invocation, its agent and the user it acts for (a tool's leases and an
// MCP server instance's alike).
creds::LeaseContext caller_context(const Invocation& inv) {
  creds::LeaseContext c;
  c.invocation_id = inv.id;
  c.agent = inv.principal_name();
  if (inv.subject) {
    c.user_issuer = inv.subject->issuer;
    c.user_sub = inv.subject->sub;
    c.user_scopes = user_token_scopes(*inv.subject);
  }
  c.user_token = inv.user_token;
  return c;
}

creds::LeaseContext context_for(const Invocation& inv, const policy::ToolConfig& tool) {
  creds::LeaseContext c = caller_context(inv);
  c.tool = tool.name;
  c.max_ttl = std::chrono::ceil<std::chrono::seconds>(inv.limits.wall_time) + kCredentialMargin;
  for (const auto& f : tool.network.forwards) c.forwards.push_back({f.listen_port, f.host, f.port});
  return c;
}

std::string substituted(std::string text, const std::string& env, const std::string& value) {
  const std::string variable = "${" + env + "}";
  for (std::size_t at = text.find(variable); at != std::string::npos; at = text.find(variable, at + value.size()))
    text.replace(at, variable.size(), value);
  return text;
}

InvocationError lease_error(const Error& e) {
  if (e.code == "credential_denied") return deny(ErrorKind::credential_denied, "a credential of this tool: " + e.message);
  return fail(ErrorKind::credential_unavailable, "a credential of this tool could not be made: " + e.message);
}

// Every use: in the run's environment or its header, fingerprinted for the audit record.
void hand_over(Invocation& inv, const policy::CredentialSpec& spec, const creds::Leased& leased,
               const std::function<std::string(std::string_view)>& fingerprint) {
  inv.credential_leases.push_back({leased.lease, fingerprint(leased.value)});
  if (!spec.inject) {
    inv.credentials.push_back({spec.env, leased.value});
    return;
  }
  const auto& h = *spec.inject;
  inv.injections.push_back({h.host, h.port, h.header, substituted(h.value_template, spec.env, leased.value)});
  inv.credentials.push_back({spec.env, injection_placeholder(spec.env)});
}

// After the run: nothing of the values stays in the invocation's memory.
void forget_values(Invocation& inv) {
  for (auto& c : inv.credentials) creds::wipe_secret(c.value);
  for (auto& h : inv.injections) creds::wipe_secret(h.value);
  if (inv.request) {
    for (auto& c : inv.request->credentials) creds::wipe_secret(c.value);
    for (auto& h : inv.request->egress.inject) creds::wipe_secret(h.value);
  }
  creds::wipe_secret(inv.user_token);
}

}  // namespace

std::string injection_placeholder(const std::string& env) { return "airlock-injected-by-egress-proxy:" + env; }

Result<std::unique_ptr<CredentialsStage>> CredentialsStage::create(
    std::shared_ptr<creds::Broker> broker, std::function<std::string(std::string_view)> fingerprint) {
  auto scanner = dlp::make_credential_scanner();
  if (!scanner) return scanner.error();
  auto stage = std::unique_ptr<CredentialsStage>(new CredentialsStage());
  stage->broker_ = std::move(broker);
  stage->fingerprint_ = std::move(fingerprint);
  stage->literal_scanner_ = std::move(*scanner);
  return stage;
}

StageResult CredentialsStage::run(Invocation& inv, StageContext& ctx) {
  const policy::ToolConfig* tool = ctx.tool(inv);
  if (tool && tool->mcp) return arm_server_credentials(inv, ctx, *tool);
  if (!tool || tool->credentials.empty()) return StageResult::next();
  if (!broker_) return fail(ErrorKind::credential_unavailable, "this tool has credentials, and no credential broker runs here");
  creds::LeaseContext context = context_for(inv, *tool);
  auto leased = broker_->lease(tool->credentials, context);
  creds::wipe_secret(context.user_token);
  if (!leased) return lease_error(leased.error());
  auto held = std::make_shared<std::vector<creds::Leased>>(std::move(*leased));
  std::vector<std::string> values;
  for (const auto& l : *held) values.push_back(l.value);
  // Registered before anything else can fail: the leases are revoked however the call ends.
  ctx.defer("revoke credentials", [broker = broker_, scanner = literal_scanner_, held,
                                   values = std::move(values)](Invocation& ended) mutable -> Status {
    Status redacted = redact_credentials(ended, *scanner, values);
    forget_values(ended);
    for (auto& v : values) creds::wipe_secret(v);
    Status revoked = broker->revoke(*held);
    return redacted ? revoked : redacted;
  });
  for (std::size_t i = 0; i < held->size(); ++i) {
    // A value this short would be found everywhere in the output: it cannot be kept out of it.
    if ((*held)[i].value.size() < 4)
      return fail(ErrorKind::credential_unavailable,
                  tool->credentials[i].env + ": the value is shorter than 4 bytes, too short to redact from the output");
    hand_over(inv, tool->credentials[i], (*held)[i], fingerprint_);
  }
  return StageResult::next();
}

McpServerCredentials::~McpServerCredentials() {
  if (revoke) revoke();
  for (auto& v : values) creds::wipe_secret(v);
  creds::wipe_secrets(env);
  for (auto& h : inject) creds::wipe_secret(h.value);
}

namespace {

// An instance lives on past the call that started it: its leases ask for the longest life a
// credential may have, and each credential's own ttl decides; the gateway starts a new
// instance (new leases) before the earliest runs out.
creds::LeaseContext context_for_server(const Invocation& inv, const policy::McpServerConfig& server) {
  creds::LeaseContext c = caller_context(inv);
  c.tool = "mcp server " + server.name;
  c.max_ttl = policy::kMaxCredentialTtl;
  for (const auto& f : server.network.forwards) c.forwards.push_back({f.listen_port, f.host, f.port});
  return c;
}

Result<std::shared_ptr<McpServerCredentials>> lease_for_server(
    const std::shared_ptr<creds::Broker>& broker, const std::vector<policy::CredentialSpec>& specs,
    creds::LeaseContext context, const std::function<std::string(std::string_view)>& fingerprint) {
  context.now = creds::Clock::now();
  auto leased = broker->lease(specs, context);
  creds::wipe_secret(context.user_token);
  if (!leased) return leased.error();
  auto held = std::make_shared<std::vector<creds::Leased>>(std::move(*leased));
  auto out = std::make_shared<McpServerCredentials>();
  // From here the leases end with `out`, however this ends.
  out->revoke = [broker, held] {
    if (auto revoked = broker->revoke(*held); !revoked)
      std::fprintf(stderr, "airlock: revoking an MCP server's credentials: %s\n", revoked.error().message.c_str());
  };
  for (std::size_t i = 0; i < held->size(); ++i) {
    const auto& spec = specs[i];
    const auto& l = (*held)[i];
    if (l.value.size() < 4)
      return Error::make("credential_unavailable", spec.env + ": the value is shorter than 4 bytes, too short to redact from the output");
    out->values.push_back(l.value);
    out->uses.push_back({l.lease, fingerprint(l.value)});
    out->expires_at = std::min(out->expires_at, l.lease.expires_at);
    if (!spec.inject) {
      out->env[spec.env] = l.value;
      continue;
    }
    const auto& h = *spec.inject;
    out->inject.push_back({h.host, h.port, h.header, substituted(h.value_template, spec.env, l.value)});
    out->env[spec.env] = injection_placeholder(spec.env);
  }
  return out;
}

}  // namespace

StageResult CredentialsStage::arm_server_credentials(Invocation& inv, StageContext& ctx,
                                                     const policy::ToolConfig& tool) {
  const policy::McpServerConfig* server = ctx.config().find_mcp_server(tool.mcp->server);
  if (!server || server->credentials.empty()) return StageResult::next();
  if (!broker_)
    return fail(ErrorKind::credential_unavailable, "this tool's MCP server has credentials, and no credential broker runs here");
  auto context = std::make_shared<creds::LeaseContext>(context_for_server(inv, *server));
  inv.lease_server_credentials = [broker = broker_, specs = server->credentials, context,
                                  fingerprint = fingerprint_] {
    return lease_for_server(broker, specs, *context, fingerprint);
  };
  ctx.defer("redact the MCP server's credentials", [scanner = literal_scanner_, context](Invocation& ended) -> Status {
    creds::wipe_secret(context->user_token);
    ended.lease_server_credentials = nullptr;
    Status redacted = redact_credentials(ended, *scanner, ended.server_credential_values);
    for (auto& v : ended.server_credential_values) creds::wipe_secret(v);
    ended.server_credential_values.clear();
    return redacted;
  });
  return StageResult::next();
}

Status redact_credentials(Invocation& inv, const dlp::Scanner& scanner, const std::vector<std::string>& values) {
  if (values.empty()) return {};
  auto literals = dlp::LiteralSet::compile(values);
  if (!literals) return Error::make("internal", "the credentials could not be prepared for redaction");
  const dlp::ScanOptions bytes{&*literals, dlp::JsonMode::off};
  const dlp::ScanOptions json{&*literals, dlp::JsonMode::automatic};
  bool in_output = false, in_log = false;
  if (inv.output) {
    std::string text = inv.output->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (dlp::redact_credential_text(text, scanner, json)) {
      in_output = true;
      auto replaced = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (replaced.is_discarded()) {
        inv.output.reset();
        if (!inv.error) inv.error = fail(ErrorKind::internal, "redacting the credentials from the result did not leave valid JSON, so it is withheld");
      } else {
        inv.output = std::move(replaced);
      }
    }
  }
  if (inv.redacted_output) in_output |= dlp::redact_credential_text(*inv.redacted_output, scanner, json);
  in_log |= dlp::redact_credential_text(inv.tool_log, scanner, bytes);
  for (auto& note : inv.notes) in_log |= dlp::redact_credential_text(note, scanner, bytes);
  if (inv.error) dlp::redact_credential_text(inv.error->message, scanner, bytes);
  if (inv.outcome) {
    in_output |= dlp::redact_credential_text(inv.outcome->stdout_data, scanner, bytes);
    in_log |= dlp::redact_credential_text(inv.outcome->stderr_data, scanner, bytes);
    dlp::redact_credential_text(inv.outcome->message, scanner, bytes);
  }
  if (in_output) inv.redactions.push_back({"credential", "output"});
  if (in_log) inv.redactions.push_back({"credential", "log"});
  return {};
}

}  // namespace airlock::pipeline
