// airlock validate [--policy FILE] [--allow-import MOD]... [--allow-host H]...
//                  [--format text|json|sarif] FILE|-
// Exit 0 accept, 1 reject, 2 usage or internal error.
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/commands.hpp"
#include "validate/report_format.hpp"
#include "validate/validate.hpp"

namespace airlock::cli {
namespace {

struct ValidateOptions {
  std::string policy_file;
  std::vector<std::string> allow_imports;
  std::vector<std::string> allow_hosts;
  std::string format = "text";
  std::string file;
};

int fail_usage(const std::string& message) {
  std::cerr << "airlock validate: " << message << "\n";
  return 2;
}

bool read_source(const std::string& file, std::string& out) {
  if (file == "-") {
    out.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return true;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  std::stringstream buffer;
  buffer << in.rdbuf();
  out = buffer.str();
  return true;
}

// Internal failures (the worker could not run at all) are exit 2, not a verdict on the code.
bool is_internal_failure(const validate::Report& report) {
  for (const auto& f : report.findings)
    if (f.rule == "parse-failed" && f.line == 0) return true;
  return false;
}

int validate_command(const ValidateOptions& o) {
  if (o.format != "text" && o.format != "json" && o.format != "sarif")
    return fail_usage("--format: expected text, json or sarif");
  validate::Policy policy;
  if (!o.policy_file.empty()) {
    auto loaded = validate::load_policy_file(o.policy_file);
    if (!loaded) return fail_usage(loaded.error().message);
    policy = std::move(*loaded);
  }
  for (const auto& m : o.allow_imports) policy.allowed_imports.insert(m);
  if (!o.allow_hosts.empty()) {
    std::vector<std::string> hosts = policy.allowed_hosts.entries();
    hosts.insert(hosts.end(), o.allow_hosts.begin(), o.allow_hosts.end());
    auto allowlist = validate::HostAllowlist::parse(hosts);
    if (!allowlist) return fail_usage("--allow-host: " + allowlist.error().message);
    policy.allowed_hosts = std::move(*allowlist);
  }
  std::string source;
  if (!read_source(o.file, source)) return fail_usage(o.file + ": cannot be read");

  validate::Report report = validate::check(source, policy);
  std::string name = o.file == "-" ? "<stdin>" : o.file;
  if (o.format == "json") std::cout << validate::to_json(report).dump(2) << "\n";
  else if (o.format == "sarif") std::cout << validate::to_sarif(report, name).dump(2) << "\n";
  else std::cout << validate::to_text(report, name);
  if (is_internal_failure(report)) {
    std::cerr << "airlock validate: the validator could not run; see the parse-failed finding\n";
    return 2;
  }
  return report.verdict == validate::Verdict::accept ? 0 : 1;
}

}  // namespace

void add_validate_command(CLI::App& app, ExitStatus& status) {
  auto opts = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand(kValidateCommand.name, kValidateCommand.summary);
  cmd->add_option("--policy", opts->policy_file, "Validation policy (YAML or JSON; docs/validate.md)");
  cmd->add_option("--allow-import", opts->allow_imports, "Also allow importing MOD (repeatable)")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--allow-host", opts->allow_hosts,
                  "Also allow the host H: name, *.domain, IP or CIDR (repeatable)")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--format", opts->format, "text (default), json or sarif");
  cmd->add_option("file", opts->file, "The Python file, or - for standard input")->required();
  cmd->callback([opts, &status] { status.code = validate_command(*opts); });
}

}  // namespace airlock::cli
