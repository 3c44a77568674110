// webhooks: name -> {url, secret, events, tools, timeout, retry} (policy/sections/webhooks_config.hpp,
// docs/webhooks.md). The secret is read here, when the configuration is loaded: a missing
// variable or an unreadable file is an error of the configuration, not of a later delivery.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "common/http_url.hpp"
#include "policy/config_reader.hpp"
#include "policy/names.hpp"

namespace airlock::policy {

bool WebhookConfig::wants(std::string_view event) const {
  return std::find(events.begin(), events.end(), event) != events.end();
}

bool WebhookConfig::covers(std::string_view tool) const {
  if (tools.empty()) return true;
  return std::any_of(tools.begin(), tools.end(), [&](const std::string& p) { return glob_match(p, tool); });
}

namespace detail {
namespace {

// The shortest first wait before a retry: a failing receiver is not hammered.
constexpr std::chrono::milliseconds kMinRetry{100};

// https://host[:port][/path], or http:// to a loopback address (a receiver on this host), read
// by the parser the sender uses (common/http_url.hpp): both see the same host.
std::string webhook_url(Reader& r, const YAML::Node& v, const std::string& what) {
  const std::string url = r.string(v, what);
  if (!url.starts_with("https://") && !url.starts_with("http://"))
    fail(v, what + ": expected an https:// URL, got '" + url + "'");
  if (url.find('@') != std::string::npos) fail(v, what + ": no user information in the URL (the secret signs)");
  auto parsed = parse_http_url(url);
  if (!parsed) fail(v, what + ": " + parsed.error().message);
  if (!parsed->tls && !parsed->is_loopback())
    fail(v, what + ": plain http:// only to a loopback address (127.0.0.0/8, [::1], localhost); use https:// for " +
                parsed->host);
  return url;
}

// One line of a file, without its line end.
std::string read_secret_file(const YAML::Node& v, const std::string& what, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(v, what + ": cannot read " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// {env: VARIABLE} or {file: path}: the value itself is never in the configuration.
void read_secret(Reader& r, const YAML::Node& n, const std::string& what, WebhookConfig& out) {
  r.only_keys(n, what, {"env", "file"});
  if (static_cast<bool>(n["env"]) == static_cast<bool>(n["file"]))
    fail(n, what + ": expected exactly one of env (a variable's name) or file (a path)");
  if (n["env"]) {
    const std::string name = r.string(n["env"], what + ".env");
    if (!is_variable_name(name)) fail(n["env"], what + ".env: '" + name + "' is not a valid variable name");
    const char* value = std::getenv(name.c_str());
    if (!value) fail(n["env"], what + ".env: the variable " + name + " is not set");
    out.secret = value;
    out.secret_source = "env " + name;
  } else {
    const std::string path = r.path(n["file"], what + ".file");
    out.secret = read_secret_file(n["file"], what + ".file", path);
    out.secret_source = "file " + path;
  }
  if (out.secret.size() < kMinWebhookSecretBytes)
    fail(n, what + ": the secret (" + out.secret_source + ") is shorter than " +
                std::to_string(kMinWebhookSecretBytes) + " bytes");
}

void read_events(Reader& r, const YAML::Node& v, const std::string& what, WebhookConfig& out) {
  out.events = r.strings(v, what);
  if (out.events.empty()) fail(v, what + ": expected at least one event");
  for (const auto& e : out.events)
    if (e != kEventApprovalRequested && e != kEventInvocationCompleted)
      fail(v, what + ": unknown event '" + e + "' (expected approval.requested or invocation.completed)");
}

void read_retry(Reader& r, const YAML::Node& n, const std::string& what, WebhookRetry& out) {
  r.only_keys(n, what, {"initial", "max", "giveUpAfter", "attempts"});
  r.field(n, "initial", [&](const YAML::Node& v) {
    out.initial = r.duration(v, what + ".initial");
    if (out.initial < kMinRetry) fail(v, what + ".initial: at least 100ms");
  });
  r.field(n, "max", [&](const YAML::Node& v) { out.max = r.duration(v, what + ".max"); });
  r.field(n, "giveUpAfter", [&](const YAML::Node& v) {
    out.give_up_after = r.duration(v, what + ".giveUpAfter");
    if (out.give_up_after > std::chrono::hours(24 * 7)) fail(v, what + ".giveUpAfter: at most 7d");
  });
  r.field(n, "attempts", [&](const YAML::Node& v) {
    out.attempts = static_cast<std::uint32_t>(r.unsigned_int(v, what + ".attempts", 100000));
  });
  if (out.max < out.initial) r.error(n, what + ": max is shorter than initial");
}

WebhookConfig read_webhook(Reader& r, const YAML::Node& key, const YAML::Node& n, const std::string& label) {
  WebhookConfig w;
  w.name = r.string(key, "webhooks");
  if (!valid_tool_name(w.name)) fail(key, "webhooks: '" + w.name + "' is not a valid name: " + kToolNameRule);
  const std::string what = "webhooks." + w.name;
  w.where = label + ":" + std::to_string(key.Mark().line + 1);
  r.only_keys(n, what, {"url", "secret", "events", "tools", "timeout", "retry"});
  for (const char* required : {"url", "secret", "events"})
    if (!n[required]) r.error(n, what + ": missing " + required);
  r.field(n, "url", [&](const YAML::Node& v) { w.url = webhook_url(r, v, what + ".url"); });
  r.field(n, "secret", [&](const YAML::Node& v) { read_secret(r, v, what + ".secret", w); });
  r.field(n, "events", [&](const YAML::Node& v) { read_events(r, v, what + ".events", w); });
  r.field(n, "tools", [&](const YAML::Node& v) {
    w.tools = r.strings(v, what + ".tools");
    if (w.tools.empty()) fail(v, what + ".tools: an empty list covers no tool (leave it out for every tool)");
  });
  r.field(n, "timeout", [&](const YAML::Node& v) {
    w.timeout = r.duration(v, what + ".timeout");
    if (w.timeout > kMaxWebhookTimeout) fail(v, what + ".timeout: at most 60s");
  });
  r.field(n, "retry", [&](const YAML::Node& v) { read_retry(r, v, what + ".retry", w.retry); });
  return w;
}

}  // namespace

void read_webhooks(Reader& r, const YAML::Node& n, const std::string& label, std::vector<WebhookConfig>& out) {
  r.expect_map(n, "webhooks");
  for (const auto& kv : n)
    r.guard([&] {
      r.expect_map(kv.second, "webhooks." + kv.first.as<std::string>());
      out.push_back(read_webhook(r, kv.first, kv.second, label));
    });
}

}  // namespace detail
}  // namespace airlock::policy
