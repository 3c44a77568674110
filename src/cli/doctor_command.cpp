// airlock doctor: which sandbox mechanisms work here, and what happens without the others.
#include <unistd.h>

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

// Sessions on the gvisor backend need root (backend/gvisor_session.cpp): under runsc
// --rootless only the sandbox's root maps to this user, so the session's user could not write
// its workspace.
sandbox::MechanismCheck gvisor_sessions_check(bool runsc_works) {
  const char* name = "gvisor sessions";
  if (!runsc_works)
    return {name, false, "no usable runsc (the gvisor platform line)",
            "session templates on a gvisor tier are refused (tier_unavailable)", false};
  if (::geteuid() != 0)
    return {name, false,
            "not root: under runsc --rootless the session's user (1000) could not write its workspace",
            "session templates on a gvisor tier are refused (tier_unavailable); gVisor tool calls still run", false};
  return {name, true, "root: a runsc sandbox per session, its workspace a tmpfs capped at the tier's disk", "",
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
    checks.push_back(gvisor_sessions_check(checks.back().works));
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
