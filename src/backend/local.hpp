// The local backend: a sandbox plus its egress proxy. This is how every layer above runs a
// Spec locally: sandbox::run() alone has no network beyond loopback and refuses egress rules.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/session_backend.hpp"
#include "backend/session_pool.hpp"
#include "backend/warm_pool.hpp"
#include "egress/policy.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/spec.hpp"

namespace airlock::backend {

class SandboxEgress;  // backend/sandbox_egress.hpp

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

// Registers a running sandbox with a registry (may be null) for as long as it lives.
class SandboxRegistration {
 public:
  SandboxRegistration(RunningSandboxes* registry, sandbox::Sandbox* s)
      : registry_(registry), sandbox_(s) {
    if (registry_) registry_->add(sandbox_);
  }
  ~SandboxRegistration() {
    if (registry_) registry_->remove(sandbox_);
  }
  SandboxRegistration(const SandboxRegistration&) = delete;
  SandboxRegistration& operator=(const SandboxRegistration&) = delete;

 private:
  RunningSandboxes* registry_;
  sandbox::Sandbox* sandbox_;
};

struct LocalRunOptions {
  std::string rule_set = "the sandbox's egress rules";  // named in denial messages
  std::vector<egress::Endpoint> forbidden;  // never reachable (the daemon's own endpoints)
  RunningSandboxes* registry = nullptr;
  CancelSignal* cancel = nullptr;  // stops the run when cancelled
};

// Runs the spec with the egress rules. With rules, the proxy listens inside the sandbox on
// 127.0.0.1:3128 (HTTP and SOCKS5) and on each forward's port, and RunResult::egress records
// every attempt. The spec runs with those listeners (and the proxy's environment) added.
// With header injections (rules.inject) the proxy makes a per-run CA, and the run trusts it
// through a CA bundle bound at /etc/airlock/ca-certificates.crt (backend/ca_bundle.hpp) and
// SSL_CERT_FILE and its kin; the bundle's file is removed when the run ends.
RunResult run_local(const sandbox::Spec& spec, const egress::EgressRules& rules = {},
                    const LocalRunOptions& options = {});

// The sandbox Spec a request runs as locally (its egress rules go to the proxy): mounts
// become read-only or writable binds, credentials join the environment, stdin is fed as
// bytes, output is collected and a stream that passes the cap stops the run.
sandbox::Spec local_spec(const RunRequest& request);

// Backend on the local sandbox (run_local). Every run is registered with `registry` (when
// set) and refuses the endpoints in `forbidden` (the daemon fills them in once it has bound
// them, before it serves).
// A request with RunRequest::warm forks from its tool's warm template when one is ready
// (at most `max_warm_templates` run at once), and runs cold, saying why, otherwise.
// It also runs sessions (session_backend.hpp; local_session_backend.cpp), registered and
// refused the same endpoints.
// How long a session sandbox started ahead of demand waits to be taken before it is replaced
// (SessionPool's max_age).
inline constexpr std::chrono::minutes kReadySessionMaxAge{10};

class LocalBackend : public Backend, public SessionBackend {
 public:
  LocalBackend(RunningSandboxes* registry,
               std::shared_ptr<const std::vector<egress::Endpoint>> forbidden,
               unsigned max_warm_templates = 0);
  RunResult run(const RunRequest& request, const RunContext& context) override;
  std::string_view name() const override { return "local"; }
  bool stopping() const override { return registry_ && registry_->stopping(); }
  void shutdown() override;
  WarmPool* warm_pool() { return warm_.get(); }
  Result<std::unique_ptr<Session>> start_session(const RunRequest& request, const RunContext& context) override;
  void keep_ready(std::vector<ReadySessions> wanted) override;
  SessionPoolStats session_pool_stats() const { return ready_sessions_.stats(); }

 private:
  Result<std::unique_ptr<Session>> start_new_session(const RunRequest& request, const RunContext& context);
  // One for the warm pool: started, and its first exec done (see local_session_backend.cpp).
  Result<std::unique_ptr<Session>> start_ready_session(const ReadySessions& wanted);
  RunResult run_cold(const RunRequest& request, const RunContext& context);
  std::optional<RunResult> run_warm(const RunRequest& request, const RunContext& context,
                                    std::string& why_cold);
  // A warm call's proxy, or null for a call without egress.
  Result<std::unique_ptr<SandboxEgress>> call_egress(const egress::EgressRules& rules,
                                                     const std::string& rule_set) const;
  RunningSandboxes* registry_;
  std::shared_ptr<const std::vector<egress::Endpoint>> forbidden_;
  std::unique_ptr<WarmPool> warm_;
  SessionPool ready_sessions_;  // last: its thread, which starts sessions here, ends first
};

// The template a warm request's calls fork from: the request's Spec with the template's
// argv, the warm library bound in, no credentials and no input, and the headroom a process
// needs whose children are every call's (pids: each call's processes count in its user
// namespace too). With egress rules, shaped as its calls are (SandboxEgress::behind_proxy).
Result<sandbox::Spec> warm_template_spec(const RunRequest& request);
// One warm call: the request's Spec (binds and limits as a cold run's) behind its proxy, its
// credentials and arguments on stdin as the runner's template mode reads them.
Result<sandbox::Spec> warm_call_spec(const RunRequest& request);

}  // namespace airlock::backend
