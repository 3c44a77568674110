// sessionTemplates: what a session is made from (docs/sessions.md). A session is one long-lived
// sandbox for an agent's stateful work; its template gives it a tier (by risk, as a tool's),
// limits over the tier's, its egress rules, data paths, environment and credentials, and how
// long it may stay idle and live at most.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egress/rules.hpp"
#include "policy/limit_overrides.hpp"
#include "policy/risk.hpp"
#include "policy/sections/credentials_config.hpp"
#include "policy/sections/validation_config.hpp"

namespace airlock::policy {

// The longest a session may live (maxLifetime), and stay idle (idleTimeout), whatever a
// template says: a session is work of hours, not a service.
inline constexpr std::chrono::hours kMaxSessionLifetime{7 * 24};
// The most sandboxes a template may keep started ahead of demand (warmPool).
inline constexpr unsigned kMaxWarmPool = 32;

// dataPaths: "/srv/datasets:/data" (read-only) or "/srv/scratch:/scratch:rw".
struct SessionDataPath {
  std::string host_path;    // absolute, existed at load
  std::string path_inside;  // absolute
  bool writable = false;
};

// interpreter: how the code interpreter of POST /v1/sessions/{id}/code starts.
struct SessionInterpreter {
  // Started with each ready sandbox of the warm pool (a creation that takes one gets its
  // interpreter up and its modules imported) rather than on the session's first cell.
  bool start_ahead = false;
  std::vector<std::string> preload;  // modules imported before the first cell (dotted names)
};
inline constexpr std::size_t kMaxInterpreterPreload = 32;

struct SessionTemplate {
  std::string name;
  std::string description;
  Risk risk = Risk::low;
  // Over the tier's limits: memory, pids, disk, openFiles, output (each exec's, per stream),
  // timeout (an exec's when it names none), cpuTime (the whole session's).
  LimitOverrides limits;
  std::optional<double> cpus;                       // CPU bandwidth, in cores
  std::chrono::milliseconds idle_timeout{15 * 60 * 1000};
  std::chrono::milliseconds max_lifetime{8 * 3600 * 1000};
  egress::EgressRules network;
  std::vector<SessionDataPath> data_paths;
  std::map<std::string, std::string> env;
  std::vector<CredentialSpec> credentials;  // leased for the session, revoked at its end
  // Sandboxes of this template kept started ahead of demand: a creation takes one (its start
  // off the request's path) and the next is started in the background. 0: each starts cold.
  unsigned warm_pool = 0;
  // What its code cells may do (POST /v1/sessions/{id}/code), checked before each runs.
  ValidationConfig validation;
  SessionInterpreter interpreter;
  std::string where;                        // "file:line" of its definition
};

}  // namespace airlock::policy
