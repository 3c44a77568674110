// The local sandbox: run one command in fresh namespaces with limits, and report exactly
// what happened. See docs/sandbox.md for the layers and their order.
//
//   auto outcome = airlock::sandbox::run(spec);
//
// or, when the caller needs the sandbox while it runs (the egress proxy, a warm worker):
//
//   auto sandbox = Sandbox::launch(spec);      // set up and exec'd, or an Error
//   auto listeners = sandbox->take_listeners();
//   Outcome outcome = sandbox->wait();          // supervises until everything has ended
//
// wait() must be called on the thread that called launch(): the sandbox is tied to that
// thread's life (PR_SET_PDEATHSIG), so it cannot outlive its supervisor.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"

namespace airlock::sandbox {

class WarmCgroupTree;  // sandbox/cgroup.hpp

// CPU time its processes have used so far, from the sandbox's cgroup.
struct CpuTime {
  std::uint64_t user_ns = 0;
  std::uint64_t sys_ns = 0;
};

// Launches and waits. Refuses loopback listeners: nobody would accept on them (see launch).
Outcome run(const Spec& spec);

// Checks a Spec without running anything (paths, limits, argv). run() and launch() call it.
Status validate_spec(const Spec& spec);

// Why this host cannot run warm calls (Sandbox::start_warm_call refuses them), or nothing.
std::optional<std::string> warm_calls_unsupported();

// Whether two Specs make the same sandbox: everything the child's plan and its cgroup's limits
// come from (argv, env, binds, work dir, host name, network, the limits but the wall clock and
// the output cap). What differs may only be the supervisor's: input, clock, output handling.
bool same_sandbox(const Spec& a, const Spec& b);

class Sandbox {
 public:
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // Returns once the command has been exec'd inside the sandbox; setup failures come back as
  // an Error whose code is "setup_error" and whose message names the step and errno.
  static Result<std::unique_ptr<Sandbox>> launch(const Spec& spec);
  // A call in a child of a warm template (sandbox/warm/warm.hpp): `template_fd` is its control
  // socket, `send_mu` serialises what is sent on it. Returns once the child is ready (fresh
  // namespaces, cgroup, tmpfs, Landlock and seccomp in place); the Spec's stdin, limits and
  // output handling apply as for launch(). Its argv, binds and env are the template's.
  // On cgroup v2 the call's cgroup is made in `cgroup_tree`, its template's (warm_cgroup_tree).
  static Result<std::unique_ptr<Sandbox>> start_warm_call(
      int template_fd, std::mutex& send_mu, const Spec& spec,
      const std::shared_ptr<WarmCgroupTree>& cgroup_tree = nullptr);
  // A warm template's cgroup tree on v2 (its calls' cgroups are made in it), else null. Read
  // it on the launching thread, before wait().
  std::shared_ptr<WarmCgroupTree> warm_cgroup_tree() const;
  // A warm call started ahead of demand, without its input (a prepared child, warm.hpp),
  // gets its call: `call`, which must make the same sandbox (same_sandbox) as the Spec it was
  // started with, replaces that Spec (its input, wall clock, CPU budget, output handling), and
  // the call's clock, CPU and memory peak count from here. Refused, once handed over, or if
  // the child ended or tripped its filter while it waited (it is then of no use: destroy it).
  Status hand_over(const Spec& call);

  // Listening sockets on the sandbox's 127.0.0.1, one per Spec::network.loopback_listeners.
  std::vector<UniqueFd> take_listeners();
  // OutputMode::caller: the write end of the child's stdin and the read end of its stdout.
  UniqueFd take_stdin();
  UniqueFd take_stdout();
  // OutputMode::caller, optional: the read end of its stderr. Taken before wait(), stderr is
  // the caller's to read (a long-lived server's log, read as it comes) and is not collected.
  UniqueFd take_stderr();

  // Supervises until the sandbox's processes have all ended; then removes everything.
  Outcome wait();
  // Ends the run from any thread (wait() reports it as signaled by SIGKILL).
  void kill();
  pid_t pid() const;
  // What its processes have used of the CPU so far (its cgroup's counters): for a long-lived
  // sandbox whose calls are charged as they end (an MCP server). Null without cgroup CPU
  // accounting, or once its cgroup is gone. Any thread, until wait() has returned.
  std::optional<CpuTime> cpu_used() const;
  // Freezes or thaws every process in it (its cgroup's freezer; Limits::freezable on v1):
  // a session's pause. Any thread, until wait() has returned.
  Status freeze(bool frozen) const;

  struct State;

 private:
  explicit Sandbox(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace airlock::sandbox
