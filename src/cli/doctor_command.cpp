// airlock doctor: which sandbox mechanisms work here, and what happens without the others.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "backend/runsc_platform.hpp"
#include "sandbox/doctor.hpp"

namespace airlock::cli {
namespace {

// The gVisor platform the gvisor backend would use here (tiers.<risk>.backend: gvisor with
// its default runsc and platform): not required by the local sandbox.
sandbox::MechanismCheck gvisor_check() {
  auto found = backend::detect_runsc_platform("runsc", "");
  if (!found)
    return {"gvisor platform", false, found.error().message,
            "risk tiers on the gvisor backend (high, critical by default) are unavailable", false};
  std::string tried;
  for (const auto& t : found->tried) tried += (tried.empty() ? "" : "; ") + t;
  return {"gvisor platform", true, found->platform + " (" + found->runsc + "; " + tried + ")", "",
          false};
}

}  // namespace

void add_doctor_command(CLI::App& app, ExitStatus& status) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("doctor", "Check the kernel mechanisms the sandbox uses");
  cmd->add_flag("--json", *json, "Print the checks as JSON");
  cmd->callback([json, &status] {
    auto checks = sandbox::check_mechanisms();
    checks.push_back(gvisor_check());
    bool usable = true;
    for (const auto& c : checks) usable &= (c.works || !c.required);
    if (*json) {
      auto out = nlohmann::json::array();
      for (const auto& c : checks)
        out.push_back({{"name", c.name}, {"works", c.works}, {"detail", c.detail},
                       {"without", c.without}, {"required", c.required}});
      std::cout << nlohmann::json{{"usable", usable}, {"checks", out}}.dump(2) << "\n";
    } else {
      for (const auto& c : checks) {
        std::cout << (c.works ? "  ok    " : (c.required ? "  FAIL  " : "  warn  ")) << c.name
                  << ": " << c.detail << "\n";
        if (!c.works) std::cout << "        without it: " << c.without << "\n";
      }
      std::cout << (usable ? "The sandbox can run here.\n"
                           : "The sandbox cannot run here: fix the FAIL lines above.\n");
    }
    status.code = usable ? 0 : 1;
  });
}

}  // namespace airlock::cli
