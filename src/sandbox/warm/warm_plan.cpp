#include "sandbox/warm/warm_plan.hpp"

#include <nlohmann/json.hpp>

#include "sandbox/seccomp/seccomp_policy.hpp"

namespace airlock::sandbox {

std::string encode_warm_call_plan(const ChildPlan& plan) {
  nlohmann::json rlimits = nlohmann::json::array();
  for (const auto& l : plan.rlimits)
    rlimits.push_back({l.resource, l.value.rlim_cur, l.value.rlim_max});
  nlohmann::json paths = nlohmann::json::array();
  for (const auto& p : plan.landlock.paths) paths.push_back({p.path, p.access, p.is_directory});
  return nlohmann::json{{"workdir", plan.workdir},
                        {"tmpfs", plan.root_options},
                        {"hostname", plan.hostname},
                        {"uid", plan.uid},
                        {"gid", plan.gid},
                        {"last_cap", plan.last_cap},
                        {"cgroup_ns", plan.unshare_cgroup_ns},
                        {"cgroup", plan.warm_cgroup},
                        {"listeners", plan.listeners},
                        {"rlimits", rlimits},
                        {"landlock",
                         {{"abi", plan.landlock.abi},
                          {"fs", plan.landlock.handled_fs},
                          {"net", plan.landlock.handled_net},
                          {"scoped", plan.landlock.scoped},
                          {"paths", paths},
                          {"ports", plan.landlock.connect_ports}}}}
      .dump();
}

Status decode_warm_call_plan(const std::string& text, ChildPlan& plan) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return Error::make("setup_error", "the warm call's plan is not JSON");
  try {
    plan.workdir = j.at("workdir").get<std::string>();
    plan.root_options = j.at("tmpfs").get<std::string>();
    plan.hostname = j.at("hostname").get<std::string>();
    plan.uid = j.at("uid").get<unsigned>();
    plan.gid = j.at("gid").get<unsigned>();
    plan.last_cap = j.at("last_cap").get<int>();
    plan.unshare_cgroup_ns = j.at("cgroup_ns").get<bool>();
    plan.warm_cgroup = j.at("cgroup").get<std::string>();
    // A leaf's name, nothing that would resolve elsewhere in the tree.
    if (plan.warm_cgroup.find_first_of("/.") != std::string::npos)
      return Error::make("setup_error", "the warm call's cgroup is not a leaf's name");
    plan.listeners = j.at("listeners").get<std::vector<std::uint16_t>>();
    if (plan.listeners.size() > 64) return Error::make("setup_error", "the warm call's plan has too many listeners");
    for (const auto& l : j.at("rlimits"))
      plan.rlimits.push_back({l.at(0).get<int>(), rlimit{l.at(1).get<rlim_t>(), l.at(2).get<rlim_t>()}});
    const auto& ll = j.at("landlock");
    plan.landlock.abi = ll.at("abi").get<int>();
    plan.landlock.handled_fs = ll.at("fs").get<std::uint64_t>();
    plan.landlock.handled_net = ll.at("net").get<std::uint64_t>();
    plan.landlock.scoped = ll.at("scoped").get<std::uint64_t>();
    for (const auto& p : ll.at("paths"))
      plan.landlock.paths.push_back(
          {p.at(0).get<std::string>(), p.at(1).get<std::uint64_t>(), p.at(2).get<bool>()});
    plan.landlock.connect_ports = ll.at("ports").get<std::vector<std::uint16_t>>();
  } catch (const nlohmann::json::exception& e) {
    return Error::make("setup_error", std::string("the warm call's plan: ") + e.what());
  }
  plan.seccomp_notify = &seccomp_program().instructions;
  plan.seccomp_kill = kill_on_violation(seccomp_program());
  return {};
}

}  // namespace airlock::sandbox
