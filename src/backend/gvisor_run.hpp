// One runsc process running one bundle (docs/gvisor.md, "How a call runs"): started in the
// run's cgroup and in a network namespace of its own whose only interface is loopback, where
// the egress proxy's listeners are made before runsc starts (runsc runs with --network=host,
// so gVisor's sockets are the namespace's: the listeners and nothing else; a session without
// egress rules asks for --network=none, GvisorLaunch). Not root: the
// namespace is owned by a user namespace of its own and runsc runs with --rootless.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "backend/runsc_command.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"

namespace airlock::backend {

struct GvisorRunPaths {
  std::string bundle;      // holds config.json and rootfs
  std::string state_root;  // runsc --root
  std::string stdin_file;  // the program's stdin, as a file (not with OutputMode::caller)
  std::string container_id;
};

// How runsc starts the bundle. By default `runsc --network=host run`: gVisor's sockets are
// the run's namespace's (the egress proxy's listeners). `network_none`: runsc's own empty
// network (--network=none), which runsc can checkpoint (it refuses a sandbox on hostinet).
// `restore_image`: `runsc restore --image-path` of a checkpoint instead of `run`.
struct GvisorLaunch {
  bool network_none = false;
  std::string restore_image;
};

class GvisorRun {
 public:
  // Starts runsc; returns once it has been exec'd. `cgroup` must outlive the run. With
  // spec.output_mode == OutputMode::caller the program's stdin, stdout and stderr are pipes
  // the caller takes (take_stdin, take_stdout, take_stderr) and wait() reads none of them
  // (a long-lived server's, backend/gvisor_stdio_session.hpp); else stdin is
  // paths.stdin_file and wait() collects stdout and stderr.
  static Result<std::unique_ptr<GvisorRun>> launch(const RunscInvocation& runsc,
                                                   const GvisorRunPaths& paths,
                                                   const sandbox::Spec& spec,
                                                   const sandbox::SandboxCgroup& cgroup,
                                                   const GvisorLaunch& how = {});
  ~GvisorRun();
  GvisorRun(const GvisorRun&) = delete;
  GvisorRun& operator=(const GvisorRun&) = delete;

  // Listening sockets on the namespace's 127.0.0.1, one per spec.network.loopback_listeners.
  std::vector<UniqueFd> take_listeners();
  // OutputMode::caller: the write end of stdin, the read ends of stdout and stderr (once).
  UniqueFd take_stdin() { return std::move(stdin_w_); }
  UniqueFd take_stdout() { return std::move(out_.fd); }
  UniqueFd take_stderr() { return std::move(err_.fd); }
  // Supervises until runsc has ended (collecting output, enforcing the wall time, the CPU
  // budget and the output cap), and judges the run. Call on the thread that launched it.
  sandbox::Outcome wait();
  // Ends the run from any thread (reported as signaled by SIGKILL, "stopped by ...").
  void kill();
  pid_t pid() const { return pid_; }  // runsc's, in the run's network namespace

 private:
  struct Stream {
    UniqueFd fd;
    std::string data;
    std::uint64_t discarded = 0;
    bool open = true;
  };
  GvisorRun(const sandbox::Spec& spec, const sandbox::SandboxCgroup& cgroup);
  void read_stream(Stream& s);
  Status open_stdio(const GvisorRunPaths& paths, UniqueFd& in_r, UniqueFd& out_w, UniqueFd& err_w);
  void kill_everything();
  bool over_cpu_budget() const;
  sandbox::Outcome judge_outcome(int wait_status);

  sandbox::Spec spec_;
  const sandbox::SandboxCgroup& cgroup_;
  pid_t pid_ = -1;
  UniqueFd pidfd_, wake_, stdin_w_;
  Stream out_, err_;
  std::vector<UniqueFd> listeners_;
  std::chrono::steady_clock::time_point started_;
  std::atomic<bool> killed_by_caller_{false};
  bool timed_out_ = false, cpu_exceeded_ = false, output_killed_ = false, reaped_ = false;
};

}  // namespace airlock::backend
