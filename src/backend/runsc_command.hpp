// Running runsc itself for a short command (`do` for the platform probe, `delete --force` for
// cleanup), bounded: past its timeout the command's whole process group is SIGKILLed and
// reaped (a kvm probe can hang in a VM).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace airlock::backend {

// The runsc global flags every call of one backend shares.
struct RunscInvocation {
  std::string runsc;     // absolute path
  std::string platform;  // ptrace, systrap, kvm
  bool rootless = false; // not root: --rootless (runsc makes its own user namespace)
  // The flags before the subcommand, for a state root (--root).
  std::vector<std::string> global_args(const std::string& state_root) const;
};

struct CommandResult {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;   // -1 unless it exited
  std::string output;   // stdout and stderr, up to 64 KiB
};

// Reads a command's output pipe to EOF or the deadline, keeping the first 64 KiB in `out`; true
// when the deadline passed first.
bool read_output_until(int fd, std::chrono::steady_clock::time_point deadline, std::string& out);

CommandResult run_bounded(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// Removes a container of a state root whatever its state: `runsc delete --force` kills its
// sandbox and gofer and removes its state files.
CommandResult force_delete(const RunscInvocation& runsc, const std::string& state_root,
                           const std::string& container_id);

}  // namespace airlock::backend
