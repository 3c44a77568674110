// The warm template's side of a call (libairlock_warm.so, loaded by the Python runner in
// template mode). The template, a clean process with the tool imported, calls
//
//   airlock_warm_receive(7)   blocks for the next call; 1: got one, 0: retired (EOF)
//   airlock_warm_start()      0 in the call's tool process, ready to run; in the template
//                             init's pid (or -1), the call's descriptors closed
//   airlock_warm_reap()       reaps the inits of calls that have ended
//
// A call's processes:
//   init    cloned from the template into a new user and pid namespace (pid 1 of the new one;
//           it dies with the template: PR_SET_PDEATHSIG), sharing the template's memory
//           (CLONE_VM) on a stack of its own: no copy of the template's address space is made
//           for it, nor torn down when it ends. While the template waits (a futex), it takes
//           the call's descriptors and forks the tool; then it releases the template and
//           keeps to its stack and raw system calls (nothing of glibc, which would write
//           errno or other state it shares with the template): on v1 it joins the call's
//           cgroups (on v2 it was cloned into the call's: CLONE_INTO_CGROUP, with a cgroup
//           namespace rooted there), reaps every process and reports the tool's exit, as a
//           cold sandbox's init does;
//   tool    forked by init: the one copy of the template's address space a call makes. It
//           maps its id, makes its mount, network, ipc and uts namespaces (off the template's
//           critical section), mounts the call's fresh tmpfs on the work dir, /tmp and
//           /dev/shm and a fresh /proc, brings up lo and opens the egress proxy's listeners
//           there (sent to the supervisor, which serves them for this call), on v1 joins the
//           call's cgroups (made and limited by the supervisor, which sent their `tasks`
//           files; on v2 it was born in init's, made and limited by the supervisor too),
//           sends the supervisor a pidfd of init, drops every capability, sets the rlimits, applies Landlock and
//           the seccomp filter (its listener goes to the supervisor; child.cpp's steps,
//           reused), closes the error pipe (the supervisor's "ready", as exec is for a cold
//           run) and jumps back into its copy of the template's airlock_warm_start, which
//           returns 0 to Python, which reads its input and credentials on stdin.
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "sandbox/child.hpp"
#include "sandbox/fd_passing.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/loopback.hpp"
#include "sandbox/seccomp/syscalls.hpp"
#include "sandbox/warm/warm_plan.hpp"

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

// The template and the init it is starting share this memory (CLONE_VM). Non-zero while the
// template waits for init; init sets it to 0 once it has forked the tool, and the kernel does
// when init ends before that (CLONE_CHILD_CLEARTID); both wake the template's futex.
int g_init_running = 0;
sigjmp_buf g_tool_resumes;  // airlock_warm_start's frame, where the tool process goes on

constexpr std::size_t kInitStackBytes = 256 * 1024;  // only the pages init touches are made
struct InitStack {
  pid_t init;
  void* stack;
};
std::vector<InitStack> g_stacks;  // the template's: freed when their init is reaped

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

void write_file(const char* path, const char* text, std::size_t size) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  check(fd >= 0, "open", path);
  check(::write(fd, text, size) == static_cast<ssize_t>(size), "write", path);
  ::close(fd);
}

void map_one_id(const char* path, unsigned id) {
  char line[32];
  int n = std::snprintf(line, sizeof line, "%u %u 1\n", id, id);
  write_file(path, line, static_cast<std::size_t>(n));
}

// In the new user namespace we hold every capability (until drop_privileges) and are the
// same sandbox user, mapped to ourselves.
void map_own_ids(const ChildPlan& plan) {
  write_file("/proc/self/setgroups", "deny", 4);
  map_one_id("/proc/self/uid_map", plan.uid);
  map_one_id("/proc/self/gid_map", plan.gid);
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

// The egress proxy's listeners (a networked tool) are opened here, in the call's own network
// namespace: the daemon's proxy serves them for this call only. The template's Landlock lets
// this bind their ports; the call's own, applied later, refuses every bind.
void set_up_network_and_names(const ChildPlan& plan) {
  check(::sethostname(plan.hostname.c_str(), plan.hostname.size()) == 0, "sethostname");
  check(::setdomainname("", 0) == 0, "setdomainname");
  if (LoopbackResult lo = bring_up_loopback(); lo.err != 0) fail(lo.step, nullptr, lo.err);
  child_steps::open_listeners(plan);
}

void join_call_cgroups(const ReceivedFds& fds) {
  for (std::size_t i = kCallFds; i < fds.count; ++i) {
    check(::write(fds.fds[i], "0", 1) == 1, "joining the call's cgroup (write 0 to tasks)");
    ::close(fds.fds[i]);
  }
}

// The supervisor's handle on the call: a pidfd of its init (pid 1 here; not its child).
void send_init_pidfd() {
  int init = sys::pidfd_open(1);
  check(init >= 0, "pidfd_open (init)");
  check(send_fds(kChildControlFd, 'P', &init, 1), "sending init's pidfd to the supervisor");
  ::close(init);
}

// The namespaces the tool makes for itself (init was cloned into the user and pid ones), so
// that their cost is not in the template's wait for init.
constexpr int kToolNamespaces = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;

// The tool process: the template's memory as it was when init forked, in its own copy. It
// builds the call's sandbox around itself (what a cold sandbox's child and init do before the
// program runs), installs the call's Landlock rules and seccomp filter, then jumps back into
// its copy of the template's airlock_warm_start, which returns 0 to Python. Init stays outside
// that Landlock domain and its namespaces but the user and pid ones, so the tool cannot reach
// it (ptrace's checks guard /proc/1/mem and /proc/1/fd): init shares the template's memory.
[[noreturn]] void become_tool(const ChildPlan& plan, const ReceivedFds& fds) {
  map_own_ids(plan);
  check(::unshare(kToolNamespaces) == 0, "unshare (new mount, network, ipc, uts namespaces)");
  mount_fresh_writable_dirs(plan);
  set_up_network_and_names(plan);
  check(::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0,
        "mount the call's /proc");
  join_call_cgroups(fds);
  if (plan.unshare_cgroup_ns) check(::unshare(CLONE_NEWCGROUP) == 0, "unshare cgroup namespace");
  check(::setsid() >= 0, "setsid");
  send_init_pidfd();
  child_steps::drop_privileges(plan);
  const char* step = nullptr;
  if (int err = apply_landlock(plan.landlock, &step)) fail(step, nullptr, err);
  child_steps::install_seccomp(plan);
  ::close(kChildControlFd);
  ::close(kChildStatusFd);
  ::umask(022);
  ::close(kChildErrorFd);  // ready (with init's copy closed): the supervisor's await_exec sees EOF
  siglongjmp(g_tool_resumes, 1);
}

// Init's handlers are the template's (Python's): a signal the tool sends its init must not run
// one in the template's memory. With none, pid 1 of a namespace ignores what comes from
// inside it. (The tool was forked with Python's own, which its interpreter expects.)
void drop_signal_handlers() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) (void)::sigaction(sig, &dfl, nullptr);
}

// From here on the template runs again in this memory: init keeps to its stack.
void release_template() {
  sys::errno_free_syscall(SYS_set_tid_address, 0);  // its exit writes nothing of ours any more
  __atomic_store_n(&g_init_running, 0, __ATOMIC_RELEASE);
  sys::errno_free_syscall(SYS_futex, reinterpret_cast<long>(&g_init_running), FUTEX_WAKE, 1);
}

// child_steps::report_failure in raw system calls.
void report_failure_raw(const char* step, long err) {
  ChildError report{};
  report.err = static_cast<int>(-err);
  for (std::size_t i = 0; step[i] && i + 1 < sizeof report.step; ++i) report.step[i] = step[i];
  sys::errno_free_syscall(SYS_write, kChildErrorFd, reinterpret_cast<long>(&report), sizeof report);
}

// Init joins the call's cgroups (the tool joins them for itself), so that it counts as a cold
// sandbox's init does; a failure ends the call (the pid namespace with init).
void join_call_cgroups_raw(const ReceivedFds& fds) {
  for (std::size_t i = kCallFds; i < fds.count; ++i) {
    long r = sys::errno_free_syscall(SYS_write, fds.fds[i], reinterpret_cast<long>("0"), 1);
    if (r != 1) {
      report_failure_raw("joining the call's cgroup (init: write 0 to tasks)", r < 0 ? r : -EIO);
      for (;;) sys::errno_free_syscall(SYS_exit_group, 125);
    }
    sys::errno_free_syscall(SYS_close, fds.fds[i]);
  }
}

// child_steps::reap_and_report in raw system calls.
[[noreturn]] void reap_and_report_raw(pid_t tool) {
  for (;;) {
    int status = 0;
    long pid = sys::errno_free_syscall(SYS_wait4, -1, reinterpret_cast<long>(&status), __WALL, 0);
    if (pid == -EINTR) continue;
    if (pid < 0) sys::errno_free_syscall(SYS_exit_group, 0);
    if (pid != tool) continue;
    ExitReport report{};
    report.exited = WIFEXITED(status) ? 1 : 0;
    report.code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
    sys::errno_free_syscall(SYS_write, kChildStatusFd, reinterpret_cast<long>(&report),
                            sizeof report);
    for (;;) sys::errno_free_syscall(SYS_exit_group, 0);
  }
}

// pid 1 of the call. While the template waits, it takes its descriptors and forks the tool;
// then it only joins the cgroups, reaps and reports, in raw system calls on its own stack.
int init_main(void* arg) {
  const PendingCall& call = *static_cast<const PendingCall*>(arg);
  ReceivedFds fds = call.fds;  // init's own: the template closes the PendingCall's
  arrange_call_descriptors(fds);
  check(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, "PR_SET_PDEATHSIG (init)");
  pid_t tool = ::fork();
  check(tool >= 0, "fork (tool)");
  if (tool == 0) become_tool(call.plan, fds);
  drop_signal_handlers();
  (void)::prctl(PR_SET_NAME, "airlock-init", 0, 0, 0);
  release_template();
  join_call_cgroups_raw(fds);
  for (int fd : {0, 1, 2, kChildErrorFd, kChildControlFd}) sys::errno_free_syscall(SYS_close, fd);
  reap_and_report_raw(tool);
}

// Blocks until init has forked the tool, or has ended.
void wait_for_init() {
  for (;;) {
    int running = __atomic_load_n(&g_init_running, __ATOMIC_ACQUIRE);
    if (running == 0) return;
    timespec second{1, 0};
    ::syscall(SYS_futex, &g_init_running, FUTEX_WAIT, running, &second, nullptr, 0);
  }
}

// cgroup v2: the call's leaf in the template's tree, which the template sees read-only.
int open_call_cgroup(const ChildPlan& plan) {
  const std::string leaf = std::string(kWarmCgroupTreeInSandbox) + "/" + plan.warm_cgroup;
  int fd = ::open(leaf.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

// Init straight into the call's cgroup (v2: `cgroup` >= 0) and a cgroup namespace rooted
// there, or (v1) where the template is: init and the tool then join the call's cgroups
// through their `tasks` files. Returns its pid or -errno.
long clone_init_on(PendingCall& call, void* stack, int cgroup) {
  if (cgroup < 0) {
    const int flags = CLONE_VM | CLONE_CHILD_CLEARTID | CLONE_NEWUSER | CLONE_NEWPID | SIGCHLD;
    int init = ::clone(init_main, static_cast<char*>(stack) + kInitStackBytes, flags, &call,
                       nullptr, nullptr, &g_init_running);
    return init >= 0 ? init : -errno;
  }
  sys::CloneArgs args{};
  args.flags = CLONE_VM | CLONE_CHILD_CLEARTID | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWCGROUP |
               sys::kCloneIntoCgroup;
  args.child_tid = reinterpret_cast<std::uint64_t>(&g_init_running);
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<std::uint64_t>(stack);
  args.stack_size = kInitStackBytes;
  args.cgroup = static_cast<std::uint64_t>(cgroup);
  return sys::clone3_on_stack(&args, init_main, &call);
}

// The template's side: init in fresh namespaces, nested under the template's, sharing its
// memory until it has forked the tool. Returns init's pid or -errno.
long clone_init(PendingCall& call) {
  int cgroup = -1;
  if (!call.plan.warm_cgroup.empty() && (cgroup = open_call_cgroup(call.plan)) < 0) return cgroup;
  void* stack = ::mmap(nullptr, kInitStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  long init = stack == MAP_FAILED ? -errno : 0;
  if (init == 0) {
    g_init_running = 1;
    init = clone_init_on(call, stack, cgroup);
    if (init > 0) {
      wait_for_init();  // nothing of glibc here until init has let go of it
      g_stacks.push_back({static_cast<pid_t>(init), stack});
    } else {
      g_init_running = 0;
      ::munmap(stack, kInitStackBytes);
    }
  }
  if (cgroup >= 0) ::close(cgroup);
  return init;
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
  if (sigsetjmp(g_tool_resumes, 0) != 0) return 0;  // the tool process, forked by init
  long init = clone_init(*g_call);
  if (init < 0)
    child_steps::report_failure(g_call->fds.fds[kChildErrorFd],
                                g_call->plan.warm_cgroup.empty()
                                    ? "clone (new user and pid namespaces)"
                                    : "clone3 into the call's cgroup (new user, pid and cgroup "
                                      "namespaces)",
                                nullptr, static_cast<int>(-init));
  close_received();
  return init > 0 ? static_cast<int>(init) : -1;
}

// Reaps the inits of the calls that have ended and frees their stacks. Returns how many.
extern "C" int airlock_warm_reap() {
  int reaped = 0;
  for (;;) {
    pid_t pid = ::waitpid(-1, nullptr, WNOHANG | __WALL);
    if (pid <= 0) return reaped;
    ++reaped;
    for (auto it = g_stacks.begin(); it != g_stacks.end(); ++it)
      if (it->init == pid) {
        ::munmap(it->stack, kInitStackBytes);
        g_stacks.erase(it);
        break;
      }
  }
}
