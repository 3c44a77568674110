// The backends the risk tiers run on, made once at the daemon's start from tiers.<risk>.backend
// (docs/backends.md): low and medium default to the local sandbox, high and critical to gVisor
// where runsc works here. A backend the config names that cannot work here is a start-up
// error naming the fix; a default one that cannot leaves its tiers unavailable, with why.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/local.hpp"
#include "common/result.hpp"
#include "egress/policy.hpp"
#include "policy/config.hpp"

namespace airlock::server {

// What every backend is made with.
struct BackendServices {
  backend::RunningSandboxes* registry = nullptr;
  // The daemon's own endpoints: never an egress target (filled in at bind, before serving).
  std::shared_ptr<const std::vector<egress::Endpoint>> forbidden;
  std::string data_dir;   // storage.dataDir: where a backend keeps its state (gvisor/, ...)
  std::string runner_dir; // holds airlock_runner.py
};

class TierBackends {
 public:
  static Result<std::unique_ptr<TierBackends>> create(const policy::Config& config,
                                                      const BackendServices& services);

  backend::Backend& local() { return *local_; }
  backend::SessionBackend& sessions() { return *local_; }  // the local tiers' sessions (docs/sessions.md)
  // The session backend of `risk`'s tier (docs/sessions.md): the local sandbox's where the tier
  // runs locally, gVisor's where it runs on gVisor, a pod per session where it runs on
  // Kubernetes (KubernetesSessionBackend); or why none (its backend is unavailable, or runs
  // no sessions).
  Result<backend::SessionBackend*> sessions(policy::Risk risk) const;
  // The tiers that run on another backend than `local`, and those no backend runs, with why.
  const std::map<policy::Risk, backend::Backend*>& tiers() const { return tiers_; }
  const std::map<policy::Risk, std::string>& unavailable() const { return unavailable_; }
  // One line per tier for the start-up log: "high: gvisor (platform ptrace)".
  std::vector<std::string> describe() const;
  // Every backend stops its runs in flight (the daemon's drain ran out).
  void shutdown();
  // A dead replica's invocation: every backend removes what is left of it (its pods).
  Status abandon(const std::string& invocation_id);

 private:
  std::unique_ptr<backend::LocalBackend> local_;
  std::vector<std::unique_ptr<backend::Backend>> owned_;  // gvisor, kubernetes
  // Each tier's session backend, or why it has none.
  std::map<policy::Risk, backend::SessionBackend*> session_tiers_;
  std::map<policy::Risk, std::string> sessions_unavailable_;
  std::map<backend::Backend*, std::unique_ptr<backend::SessionBackend>> owned_sessions_;
  void add_sessions(policy::Risk risk, policy::BackendKind kind, backend::Backend* made);
  std::map<policy::Risk, backend::Backend*> tiers_;
  std::map<policy::Risk, std::string> unavailable_;
  std::vector<std::string> description_;
};

// Made by server/tiers/tier_backend_gvisor.cpp and server/tier_backend_kubernetes.cpp. An error
// says what does not work here and the fix ("runsc: not found: install the runsc package, or
// set tiers.high.backend").
Result<std::unique_ptr<backend::Backend>> make_gvisor_backend(const policy::GvisorConfig& config,
                                                              const BackendServices& services);
Result<std::unique_ptr<backend::Backend>> make_kubernetes_backend(
    const policy::KubernetesConfig& config, const BackendServices& services);

}  // namespace airlock::server
