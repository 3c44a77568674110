// Sessions on the kubernetes backend (issue #37): a session is one pod, the hardened pod of
// the tier's tool calls (pod_objects: non-root, read-only root, every capability dropped,
// seccomp RuntimeDefault, no service-account token; its own NetworkPolicy and Secret),
// whose entry process only idles, living until the session ends. Each exec, the terminal
// and the file operations go through the API server's pods/exec (pod_exec.hpp); files as
// tar streams, as `kubectl cp` does. docs/kubernetes.md, "Sessions".
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "backend/kubernetes/kubernetes_backend.hpp"
#include "backend/kubernetes/pod_exec.hpp"
#include "backend/session_backend.hpp"

namespace airlock::backend::kubernetes {

// The session pod's entry process: it idles, and ends at SIGTERM.
inline constexpr const char* kSessionIdleScript = "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done";
// Each exec goes through this wrapper: it writes its pid to $0 (for signal()), enters $1 and
// becomes the command.
inline constexpr const char* kExecWrapper = "echo $$ >\"$0\" && cd \"$1\" && shift && exec \"$@\"";
// signal(): kill -$0 the pid in the file $1.
inline constexpr const char* kExecKiller = "kill -\"$0\" \"$(cat \"$1\")\"";
inline constexpr const char* kReasonAborted = "aborted";
// The container's own CPU counter, as its cgroup shows it from inside the pod (the runtime
// mounts the container's cgroup at /sys/fs/cgroup): cgroup v2's cpu.stat (user_usec,
// system_usec) or, on a node with cgroup v1, cpuacct.stat (user, system, in USER_HZ ticks).
// Both are read by one `cat` after each exec: whichever exists is printed.
inline constexpr const char* kCgroupV2CpuStat = "/sys/fs/cgroup/cpu.stat";
inline constexpr const char* kCgroupV1CpuacctStat = "/sys/fs/cgroup/cpuacct/cpuacct.stat";

struct SessionPodOptions {
  // How long a new pod may take to be scheduled, pulled and Running.
  std::chrono::milliseconds start_timeout{120'000};
  // Offered to pods/exec, in order.
  std::vector<std::string> exec_protocols = {kExecProtocolV5, kExecProtocolV4};
};

class KubernetesSessionBackend : public SessionBackend {
 public:
  // The tier's endpoint and options (the same as its KubernetesBackend's).
  KubernetesSessionBackend(KubeEndpoint endpoint, KubernetesOptions options, SessionPodOptions session = {});
  ~KubernetesSessionBackend() override;

  // The pod (gated until its Secret and NetworkPolicy exist), then Running; or a
  // setup_error naming the step. request.limits.wall_time is the session's whole life: the
  // pod's activeDeadlineSeconds, and the session deletes it then.
  Result<std::unique_ptr<Session>> start_session(const RunRequest& request, const RunContext& context) override;

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

// The counter in `cat`'s output of kCgroupV2CpuStat or kCgroupV1CpuacctStat; nullopt when
// neither file's pair of lines is there, whole and numeric.
std::optional<sandbox::CpuTime> parse_cgroup_cpu(const std::string& text);

// One file as a ustar stream for `tar -x` (header, bytes, padding, the two end blocks); a
// name over 100 bytes split into the header's prefix and name.
Result<std::string> ustar_archive(const std::string& name, const std::string& content);

}  // namespace airlock::backend::kubernetes
