#include "validate/module_probe.hpp"

#include "sandbox/sandbox.hpp"

namespace airlock::validate {

Result<ExportTable> probe_module_exports(const ParseWorkerConfig& config,
                                         const std::set<std::string>& modules) {
  if (modules.empty()) return ExportTable{};
  std::vector<std::string> args = {"exports"};
  args.insert(args.end(), modules.begin(), modules.end());
  ParseWorkerConfig probe = config;
  probe.lifetime = std::chrono::milliseconds(20'000);
  sandbox::Spec spec = parser_sandbox_spec(probe, args);
  spec.limits.pids = 16;  // some modules start threads on import
  sandbox::Outcome outcome = sandbox::run(spec);
  if (outcome.verdict != sandbox::Verdict::ok)
    return Error::make("parse_failed", "introspecting the allowed modules failed (" +
                                           std::string(sandbox::verdict_name(outcome.verdict)) +
                                           "): " + outcome.message + " " +
                                           outcome.stderr_data.substr(0, 500));
  auto newline = outcome.stdout_data.find('\n');
  if (newline == std::string::npos)
    return Error::make("parse_failed", "introspecting the allowed modules gave no reply");
  Json reply = Json::parse(outcome.stdout_data.substr(newline + 1), nullptr, false);
  if (reply.is_discarded())
    return Error::make("parse_failed", "introspecting the allowed modules gave malformed JSON");
  return parse_exports(reply);
}

}  // namespace airlock::validate
