// The sandbox child: everything between clone3() and execve(). The supervisor prepares a
// ChildPlan (all strings, paths and arrays) so the child only makes syscalls: it must not
// allocate or take locks, since it is a raw clone of a possibly multi-threaded process.
#pragma once

#include <linux/filter.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/landlock.hpp"

namespace airlock::sandbox {

// File descriptor numbers inside the child after it has arranged its descriptors.
inline constexpr int kChildErrorFd = 3;    // setup failures go here; CLOEXEC, EOF = exec'd
inline constexpr int kChildControlFd = 4;  // SCM_RIGHTS to the supervisor (listeners, seccomp)
inline constexpr int kChildStatusFd = 5;   // init reports the program's wait status here
inline constexpr int kChildGoFd = 6;  // the supervisor writes a byte when the id maps are
                                      // written; closed: it went away
// ChildPlan::inherit_fd, when set, kept at exec; from here (or the next) on all are closed.
inline constexpr int kChildInheritedFd = 7;

// A tree of the host's mounts cloned with open_tree() before anything is hidden.
struct TreeSource {
  std::string host_path;
  std::uint64_t attr_set;  // MOUNT_ATTR_* applied to the whole cloned tree
};

struct MountStep {
  enum class Kind {
    make_dir,        // path, mode
    make_symlink,    // path -> text
    write_file,      // path, mode, text
    attach_tree,     // sources[source] onto path (created on our tmpfs if missing)
    mount_proc,      // path
    bind_local,      // text (a path inside the new root) onto path
    mount_devpts,    // a new devpts instance on path, with the options in text
  };
  Kind kind;
  std::string path;  // relative to the new root, no leading '/'
  std::string text;
  unsigned mode = 0755;
  unsigned long flags = 0;
  int source = -1;
  bool is_directory = true;  // attach_tree: the kind of mount point to create
};

struct ChildError {
  int err;
  char step[240];
};

struct ExitReport {  // written by the sandbox's init: how the program ended
  int exited;        // 1: exit code; 0: killed by signal
  int code;          // exit code or signal number
};

struct ChildPlan {
  // Descriptors as the supervisor holds them (moved to the numbers above in the child).
  int stdin_fd, stdout_fd, stderr_fd, error_fd, control_fd, status_fd, go_fd;
  // v1 cgroups: the supervisor creates them while the child builds its root, and sends each
  // hierarchy's `tasks` file (opened for writing) in a 'C' record on the control socket. The
  // child writes "0" into each before it drops its privileges and starts the program.
  static constexpr int kMaxCgroupJoinFds = 5;  // memory, pids, cpuacct; cpu (Limits::cpus), freezer (a session)
  bool join_cgroups_from_control = false;

  bool unshare_cgroup_ns = false;  // v1: joined after clone, so its namespace comes after
  // A warm call on cgroup v2: its leaf in the template's tree, which the template clones the
  // call's init into (warm_child.cpp). Empty otherwise.
  std::string warm_cgroup;
  bool root_mode = false;          // supervisor is root: clear supplementary groups
  unsigned uid = 0, gid = 0;       // inside the sandbox
  int last_cap = 40;

  std::string staging;  // where the new root tmpfs is mounted before pivot_root
  std::string root_options;
  std::vector<TreeSource> sources;
  std::vector<MountStep> steps;
  std::string workdir;  // absolute, inside
  std::string hostname;

  std::vector<std::uint16_t> listeners;
  // --tty: open a pty pair in the new devpts instance, hand the master to the supervisor,
  // make the slave 0-2; the program makes it its controlling terminal.
  bool tty = false;
  unsigned short tty_rows = 24, tty_columns = 80;
  std::string tty_ptmx;  // inside, after pivot_root (also a session's: its terminals' ptys)
  struct Limit {
    int resource;
    rlimit value;
  };
  std::vector<Limit> rlimits;
  LandlockPlan landlock;
  const std::vector<sock_filter>* seccomp_notify = nullptr;  // violations to the supervisor
  std::vector<sock_filter> seccomp_kill;                     // fallback without a listener

  // The stack the network namespace helper and then the program start on (CLONE_VM). Not
  // zeroed: the supervisor never touches it, so it costs the child only the pages it uses.
  static constexpr std::size_t kProgramStackBytes = 64 * 1024;
  std::unique_ptr<char[]> program_stack;
  char* program_stack_top() const { return program_stack.get() + kProgramStackBytes; }
  std::vector<std::string> exec_candidates;  // argv[0] resolved against PATH
  std::vector<char*> argv;                    // NULL-terminated, pointing into owned strings
  std::vector<char*> envp;
  std::vector<std::string> argv_storage, envp_storage;

  mutable std::vector<int> source_fds;  // filled in the child

  // A warm template (sandbox/warm/warm.hpp): `inherit_fd` (a host descriptor, not owned) reaches
  // the program as kChildInheritedFd, and the program runs under a policy of its own: the
  // call's Landlock TCP and scope rules without filesystem rules, the call's filter without
  // the rows its calls' set-up breaks (namespaces, mount), since each call it forks must still
  // mount its fresh /tmp and work dir and make its namespaces; every call installs the
  // call's full rules and filter on top before it gets its input (warm_child.cpp).
  int inherit_fd = -1;
  bool warm_template = false;
  // A session (Spec::session_control_fd): `inherit_fd` is the control socket and the init
  // serves execs on it (session/session_init.hpp) instead of starting argv.
  bool session = false;
};

[[noreturn]] void child_main(const ChildPlan& plan);

// Steps of child_main that the warm call child (warm_child.cpp) runs too, in a fork of a
// template instead of a clone of the supervisor.
namespace child_steps {
void set_error_fd(int fd);  // where fail() reports
// Writes the ChildError fail() writes, to `fd`, and returns.
void report_failure(int fd, const char* step, const char* detail, int err);
[[noreturn]] void fail(const char* step, const char* detail, int err);
void check(bool ok, const char* step, const char* detail = nullptr);
// Listening sockets on 127.0.0.1 for plan.listeners (the egress proxy's), sent on
// kChildControlFd ('L'); in the network namespace the caller is in, before its Landlock.
void open_listeners(const ChildPlan& plan);
// Capabilities, no_new_privs, rlimits.
void drop_privileges(const ChildPlan& plan);
// The notify filter, its listener sent on kChildControlFd ('S'); the kill filter without one.
void install_seccomp(const ChildPlan& plan);
// pid 1's loop: reaps every process until `program` ends, writes its ExitReport on
// kChildStatusFd, exits.
[[noreturn]] void reap_and_report(pid_t program);
}  // namespace child_steps

}  // namespace airlock::sandbox
