// The warm template's side of a call (libairlock_warm.so, loaded by the Python runner in
// template mode). The template, a clean process with the tool imported, calls
//
//   airlock_warm_receive(7)   blocks for the next call; 1: got one, 0: retired (EOF)
//   airlock_warm_start()      0 in the call's tool process, ready to run; in the template
//                             init's pid (or -1), the call's descriptors closed
//
// A call's processes:
//   init    cloned from the template into new user, mount, network, ipc, uts and pid
//           namespaces (pid 1 of the new one; it dies with the template: PR_SET_PDEATHSIG);
//           maps its id, mounts the call's fresh tmpfs on the work dir, /tmp and /dev/shm and
//           a fresh /proc, brings up lo, joins the call's cgroup (made and
//           limited by the supervisor, which sent its `tasks` files), drops every capability,
//           sets the rlimits, applies Landlock and the seccomp filter (its listener and a
//           pidfd of itself go to the supervisor), forks the tool process and reaps, as a
//           cold sandbox's init does (child.cpp's steps, reused);
//   tool    closes the error pipe (the supervisor's "ready", as exec is for a cold run) and
//           returns to Python, which reads its input and credentials on stdin.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sandbox/child.hpp"
#include "sandbox/fd_passing.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/loopback.hpp"
#include "sandbox/syscalls.hpp"
#include "sandbox/warm_plan.hpp"

namespace airlock::sandbox {
namespace {

using child_steps::check;
using child_steps::fail;

// The order of the descriptors in a call record ('W'): the child's numbers 0-5, then the
// cgroup `tasks` files.
constexpr std::size_t kCallFds = 6;

struct PendingCall {
  ChildPlan plan{};
  ReceivedFds fds;
};

PendingCall* g_call = nullptr;  // between receive and release / enter

void close_received() {
  if (!g_call) return;
  for (std::size_t i = 0; i < g_call->fds.count; ++i) ::close(g_call->fds.fds[i]);
  delete g_call;
  g_call = nullptr;
}

// The call's pipes onto 0-5, its cgroup files above them, everything else closed (the
// template's own descriptors: its control socket and stdio).
void arrange_call_descriptors(ReceivedFds& fds) {
  int temp[kMaxPassedFds];
  for (std::size_t i = 0; i < fds.count; ++i) {
    temp[i] = ::fcntl(fds.fds[i], F_DUPFD_CLOEXEC, 64 + static_cast<int>(kMaxPassedFds));
    if (temp[i] < 0) sys::raw_exit(125);  // no error pipe yet
  }
  for (std::size_t i = 0; i < fds.count; ++i) {
    int target = static_cast<int>(i);
    if (::dup3(temp[i], target, target >= kChildErrorFd ? O_CLOEXEC : 0) < 0) sys::raw_exit(125);
    fds.fds[i] = target;
  }
  child_steps::set_error_fd(kChildErrorFd);
  check(::close_range(static_cast<unsigned>(fds.count), ~0U, 0) == 0, "close_range");
}

void write_file(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  check(fd >= 0, "open", path);
  check(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()), "write", path);
  ::close(fd);
}

// In the new user namespace we hold every capability (until drop_privileges) and are the
// same sandbox user, mapped to ourselves.
void map_own_ids(const ChildPlan& plan) {
  write_file("/proc/self/setgroups", "deny");
  write_file("/proc/self/uid_map",
             std::to_string(plan.uid) + " " + std::to_string(plan.uid) + " 1\n");
  write_file("/proc/self/gid_map",
             std::to_string(plan.gid) + " " + std::to_string(plan.gid) + " 1\n");
}

// One fresh tmpfs of the call's --disk size; the work dir, /tmp and /dev/shm become its
// directories, hiding the template's (which nothing can unmount from here: they are locked).
void mount_fresh_writable_dirs(const ChildPlan& plan) {
  check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0, "make mounts private");
  check(::mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, plan.root_options.c_str()) == 0,
        "mount the call's tmpfs");
  struct Dir {
    const char* name;
    std::string dest;
    unsigned mode;
  };
  const Dir dirs[] = {{"/tmp/work", plan.workdir, 0755},
                      {"/tmp/shm", "/dev/shm", 01777},
                      {"/tmp/tmp", "/tmp", 01777}};  // last: it covers the staging tmpfs
  ::umask(0);
  for (const auto& d : dirs) {
    check(::mkdir(d.name, d.mode) == 0, "mkdir", d.name);
    check(::mount(d.name, d.dest.c_str(), nullptr, MS_BIND, nullptr) == 0, "bind",
          d.dest.c_str());
  }
  check(::chdir(plan.workdir.c_str()) == 0, "chdir", plan.workdir.c_str());
}

void set_up_network_and_names(const ChildPlan& plan) {
  check(::sethostname(plan.hostname.c_str(), plan.hostname.size()) == 0, "sethostname");
  check(::setdomainname("", 0) == 0, "setdomainname");
  if (LoopbackResult lo = bring_up_loopback(); lo.err != 0) fail(lo.step, nullptr, lo.err);
}

void join_call_cgroups(const ReceivedFds& fds) {
  for (std::size_t i = kCallFds; i < fds.count; ++i) {
    check(::write(fds.fds[i], "0", 1) == 1, "joining the call's cgroup (write 0 to tasks)");
    ::close(fds.fds[i]);
  }
}

// The supervisor's handle on the call: init's pidfd (init is not its child).
void send_own_pidfd() {
  int self = sys::pidfd_open(::getpid());
  check(self >= 0, "pidfd_open (init)");
  check(send_fds(kChildControlFd, 'P', &self, 1), "sending init's pidfd to the supervisor");
  ::close(self);
}

// pid 1 of the call: everything a cold sandbox's child and init do before the program runs.
void become_init(PendingCall& call) {
  const ChildPlan& plan = call.plan;
  arrange_call_descriptors(call.fds);
  check(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, "PR_SET_PDEATHSIG (init)");
  map_own_ids(plan);
  mount_fresh_writable_dirs(plan);
  set_up_network_and_names(plan);
  check(::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0,
        "mount the call's /proc");
  join_call_cgroups(call.fds);
  if (plan.unshare_cgroup_ns) check(::unshare(CLONE_NEWCGROUP) == 0, "unshare cgroup namespace");
  check(::setsid() >= 0, "setsid");
  send_own_pidfd();
  child_steps::drop_privileges(plan);
  const char* step = nullptr;
  if (int err = apply_landlock(plan.landlock, &step)) fail(step, nullptr, err);
  child_steps::install_seccomp(plan);
  ::close(kChildControlFd);
}

// The template's side: init in fresh namespaces, nested under the template's. A raw clone
// of a single-threaded process (the template), so the child may allocate.
long clone_init() {
  sys::CloneArgs args{};
  args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
               CLONE_NEWPID;
  args.exit_signal = SIGCHLD;  // the template reaps it
  return sys::clone3(&args);
}

}  // namespace
}  // namespace airlock::sandbox

using namespace airlock::sandbox;

// Blocks for the next call: a record with its plan, then one with its descriptors.
extern "C" int airlock_warm_receive(int control_fd) {
  close_received();
  std::string text(1 << 16, '\0');
  ssize_t n;
  do n = ::recv(control_fd, text.data(), text.size(), 0);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return n == 0 ? 0 : -1;
  text.resize(static_cast<std::size_t>(n));
  auto call = new PendingCall;
  if (receive_fds(control_fd, call->fds, 0) != 1 || call->fds.tag != 'W' ||
      call->fds.truncated || call->fds.count < kCallFds) {
    g_call = call;
    close_received();
    return -1;
  }
  g_call = call;
  if (!decode_warm_call_plan(text, call->plan)) {
    // The supervisor sees the error pipe close without "ready": it reports a setup error.
    close_received();
    return -1;
  }
  return 1;
}

// Returns 0 in the call's tool process; init never returns; in the template, init's pid or -1
// (the supervisor then reads why on the call's error pipe).
extern "C" int airlock_warm_start() {
  if (!g_call) return -1;
  PendingCall& call = *g_call;
  long init = clone_init();
  if (init != 0) {
    if (init < 0)
      child_steps::report_failure(call.fds.fds[kChildErrorFd],
                                  "clone3 (new user, mount, network, ipc, uts, pid namespaces)",
                                  nullptr, errno);
    close_received();
    return init > 0 ? static_cast<int>(init) : -1;
  }
  become_init(call);
  pid_t tool = ::fork();
  check(tool >= 0, "fork (tool)");
  if (tool == 0) {
    ::close(kChildStatusFd);
    ::umask(022);
    ::close(kChildErrorFd);  // ready: the supervisor's await_exec sees EOF
    return 0;
  }
  for (int fd : {0, 1, 2, kChildErrorFd}) ::close(fd);
  (void)::prctl(PR_SET_NAME, "airlock-init", 0, 0, 0);
  (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  child_steps::reap_and_report(tool);
}
