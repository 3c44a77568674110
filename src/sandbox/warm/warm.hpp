// A warm template: one clean, initialised process per tool (Python started, the runner and
// the tool's module imported, holding no input and no credential) in a sandbox of its own,
// which forks one child per call. Each child enters fresh namespaces, its own cgroup (made
// and limited here, from outside, before the hand-over), a fresh tmpfs for its work dir,
// /tmp and /dev/shm, installs the same Landlock rules and seccomp filter as a cold run, and
// only then gets its input and credentials; it serves exactly one call and is destroyed.
// docs/warm-start.md has the design and its trade-offs.
//
//   auto t = WarmTemplate::launch(spec);        // on the thread that will call wait()
//   auto call = (*t)->start_call(call_spec);    // any thread: a Sandbox, as launch() gives
//   Outcome o = (*call)->wait();
//   (*t)->retire();  (*t)->wait();              // the template exits when it reads EOF
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::sandbox {

// The byte the template writes on its control socket once its tool is imported.
inline constexpr char kWarmTemplateReady = 'R';

// libairlock_warm.so, which the template loads (bound read-only at
// kWarmLibraryInSandbox): the installed one, else the one in the build tree; "" if none.
std::string warm_library_path();
inline constexpr const char* kWarmLibraryInSandbox = "/airlock-warm/libairlock_warm.so";

class WarmTemplate {
 public:
  // Launches `spec` (the template program, e.g. the runner in template mode) with a control
  // socket as its descriptor 7, and waits up to `ready_timeout` for its ready byte. Ties the
  // template to the calling thread, as Sandbox::launch does.
  static Result<std::unique_ptr<WarmTemplate>> launch(Spec spec,
                                                      std::chrono::milliseconds ready_timeout);

  // One call in a fresh child; its argv, binds and env are the template's, the rest the
  // call's own (Sandbox::start_warm_call). Thread-safe.
  Result<std::unique_ptr<Sandbox>> start_call(const Spec& call);

  // Whether the template has ended (its end of the control socket is closed, which its exit
  // does at once): the children it prepared are being killed with it (PR_SET_PDEATHSIG).
  bool has_ended() const;

  // No more calls: the template exits at its next read of the control socket.
  void retire();
  void kill();
  // Supervises the template until it has ended (on the launching thread).
  Outcome wait();

 private:
  WarmTemplate(std::unique_ptr<Sandbox> sandbox, UniqueFd control);
  std::unique_ptr<Sandbox> sandbox_;
  UniqueFd control_;
  std::shared_ptr<WarmCgroupTree> cgroup_tree_;  // v2: where its calls' cgroups are made
  std::mutex send_mu_;
};

}  // namespace airlock::sandbox
