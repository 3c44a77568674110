#include "validate/host_allowlist.hpp"

namespace airlock::validate {
namespace {

Error bad_entry(const std::string& entry, const std::string& why) {
  return Error::make("invalid_argument", "host entry \"" + entry + "\": " + why);
}

}  // namespace

Result<HostAllowlist> HostAllowlist::parse(const std::vector<std::string>& entries) {
  HostAllowlist list;
  for (const auto& entry : entries) {
    auto text = netrules::parse_rule_text(entry, std::nullopt);  // no port: any port
    if (!text) return bad_entry(entry, text.error().message);
    auto rule = netrules::compile_host_rule(text->host, text->port);
    if (!rule) return bad_entry(entry, rule.error().message);
    list.entries_.push_back(entry);
    list.rules_.push_back(std::move(*rule));
  }
  return list;
}

Status HostAllowlist::add(const std::string& host, std::optional<std::uint16_t> port) {
  auto rule = netrules::compile_host_rule(host, port);
  std::string host_text = host.find(':') == std::string::npos ? host : "[" + host + "]";
  std::string entry = host_text + ":" + (port ? std::to_string(*port) : "*");
  if (!rule) return bad_entry(entry, rule.error().message);
  entries_.push_back(entry);
  rules_.push_back(std::move(*rule));
  return Status::success();
}

bool HostAllowlist::allows(std::string_view host, std::optional<std::uint16_t> port) const {
  auto destination = netrules::classify_destination(host);
  if (!destination) return false;  // not a host name nor an address: nothing matches it
  for (const auto& rule : rules_)
    if (netrules::matches(rule, *destination, port)) return true;
  return false;
}

}  // namespace airlock::validate
