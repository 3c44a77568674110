// The local backend: a sandbox plus its egress proxy. This is how every layer above runs a
// Spec: sandbox::run() alone has no network beyond loopback and refuses egress rules.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "egress/policy.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/spec.hpp"

namespace airlock::backend {

// The sandboxes running right now, for a daemon that must count them and stop them all.
class RunningSandboxes {
 public:
  void add(sandbox::Sandbox* s);
  void remove(sandbox::Sandbox* s);
  std::size_t count() const;
  // Stops every running sandbox (their runs end as signaled, "stopped by its supervisor"),
  // and every one started from now on.
  void kill_all();
  bool stopping() const;

 private:
  mutable std::mutex mu_;
  std::set<sandbox::Sandbox*> running_;
  bool stopping_ = false;
};

struct LocalRunOptions {
  std::string rule_set = "the sandbox's egress rules";  // named in denial messages
  std::vector<egress::Endpoint> forbidden;  // never reachable (the daemon's own endpoints)
  RunningSandboxes* registry = nullptr;
};

// Runs the spec; with egress rules, the proxy listens inside the sandbox on 127.0.0.1:3128
// (HTTP and SOCKS5) and on each forward's port, and Outcome::egress records every attempt.
sandbox::Outcome run_local(sandbox::Spec spec, const LocalRunOptions& options = {});

}  // namespace airlock::backend
