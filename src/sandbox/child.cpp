// The sandbox child, from clone3() to execve(). Only syscalls and stack memory here: this is
// a raw clone of a possibly multi-threaded process, so malloc, stdio and glibc's credential
// wrappers (which signal every thread they believe exists) are off limits.
#include "sandbox/child.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sandbox/fd_passing.hpp"
#include "sandbox/host_args.hpp"
#include "sandbox/loopback.hpp"
#include "sandbox/seccomp/syscalls.hpp"
#include "sandbox/session/session_init.hpp"

#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT (1 << 0)
#define SECBIT_NOROOT_LOCKED (1 << 1)
#define SECBIT_NO_SETUID_FIXUP (1 << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1 << 3)
#endif
#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

namespace airlock::sandbox {
namespace {

int g_error_fd = -1;  // the child's own copy of this variable

void append(char* buf, std::size_t cap, std::size_t& len, const char* text) {
  while (text && *text && len + 1 < cap) buf[len++] = *text++;
  buf[len] = '\0';
}

}  // namespace

namespace child_steps {

void set_error_fd(int fd) { g_error_fd = fd; }

void report_failure(int fd, const char* step, const char* detail, int err) {
  ChildError report{};
  report.err = err;
  std::size_t len = 0;
  append(report.step, sizeof report.step, len, step);
  if (detail && *detail) {
    append(report.step, sizeof report.step, len, " ");
    append(report.step, sizeof report.step, len, detail);
  }
  if (fd >= 0) (void)!::write(fd, &report, sizeof report);
}

[[noreturn]] void fail(const char* step, const char* detail, int err) {
  report_failure(g_error_fd, step, detail, err);
  sys::raw_exit(125);
}

void check(bool ok, const char* step, const char* detail) {
  if (!ok) fail(step, detail, errno);
}

}  // namespace child_steps

namespace {
using child_steps::check;
using child_steps::fail;

// Moves the supervisor's descriptors to fixed numbers and closes every other one, so nothing
// of the supervisor (sockets, databases, other sandboxes' pipes) reaches the sandbox.
void arrange_descriptors(const ChildPlan& plan) {
  const int sources[] = {plan.stdin_fd,   plan.stdout_fd, plan.stderr_fd, plan.error_fd,
                         plan.control_fd, plan.status_fd, plan.go_fd,     plan.inherit_fd};
  int temp[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  for (int i = 0; i < 8; ++i) {
    if (sources[i] < 0) continue;  // only inherit_fd may be absent
    temp[i] = ::fcntl(sources[i], F_DUPFD_CLOEXEC, 64);
    if (temp[i] < 0) {
      g_error_fd = plan.error_fd;
      fail("arranging descriptors", nullptr, errno);
    }
  }
  for (int target = 0; target < 7; ++target) {
    if (::dup3(temp[target], target, target >= kChildErrorFd ? O_CLOEXEC : 0) < 0) {
      g_error_fd = plan.error_fd;
      fail("arranging descriptors", nullptr, errno);
    }
  }
  g_error_fd = kChildErrorFd;
  if (plan.inherit_fd >= 0)  // not close-on-exec: the program keeps it
    check(::dup3(temp[7], kChildInheritedFd, 0) == kChildInheritedFd,
          "passing the inherited descriptor");
  const unsigned first_stray = plan.inherit_fd >= 0 ? kChildInheritedFd + 1 : kChildInheritedFd;
  check(::close_range(first_stray, ~0U, 0) == 0, "close_range");
}

void reset_signals() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) (void)::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Creates the mount point for an attached tree if our own tmpfs holds its parent.
void ensure_mount_point(const MountStep& step) {
  struct stat st {};
  if (::fstatat(AT_FDCWD, step.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) fail("mount point is a symlink:", step.path.c_str(), ELOOP);
    return;
  }
  if (errno != ENOENT) fail("stat mount point", step.path.c_str(), errno);
  if (step.is_directory) {
    check(::mkdir(step.path.c_str(), 0755) == 0, "mkdir", step.path.c_str());
  } else {
    int fd = ::open(step.path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
    check(fd >= 0, "create mount point", step.path.c_str());
    ::close(fd);
  }
}

void run_mount_step(const ChildPlan& plan, const MountStep& step) {
  const char* path = step.path.c_str();
  switch (step.kind) {
    case MountStep::Kind::make_dir:
      check(::mkdir(path, step.mode) == 0 || errno == EEXIST, "mkdir", path);
      return;
    case MountStep::Kind::make_symlink:
      check(::symlink(step.text.c_str(), path) == 0, "symlink", path);
      return;
    case MountStep::Kind::write_file: {
      int fd = ::open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, step.mode);
      check(fd >= 0, "create", path);
      const char* data = step.text.data();
      std::size_t left = step.text.size();
      while (left > 0) {
        ssize_t n = ::write(fd, data, left);
        if (n < 0 && errno == EINTR) continue;
        check(n > 0, "write", path);
        data += n;
        left -= static_cast<std::size_t>(n);
      }
      ::close(fd);
      return;
    }
    case MountStep::Kind::attach_tree: {
      ensure_mount_point(step);
      int tree = plan.source_fds[static_cast<std::size_t>(step.source)];
      check(sys::move_mount(tree, "", AT_FDCWD, path, sys::kMoveMountFEmptyPath) == 0,
            "move_mount", path);
      ::close(tree);
      return;
    }
    case MountStep::Kind::mount_proc:
      check(::mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0,
            "mount proc (needs a fully visible /proc on the host)", path);
      return;
    case MountStep::Kind::bind_local:
      check(::mount(step.text.c_str(), path, nullptr, MS_BIND | MS_REC, nullptr) == 0, "bind",
            path);
      return;
    case MountStep::Kind::mount_devpts:
      // Not nodev: the instance's own pty nodes must open. A new instance holds only the
      // ptys made through its own ptmx.
      check(::mount("devpts", path, "devpts", MS_NOSUID | MS_NOEXEC, step.text.c_str()) == 0,
            "mount devpts (new instance)", path);
      return;
  }
}

// Clones every host tree we need, before anything is mounted (so our root cannot hide a
// source) and while we still have the supervisor's host credentials (capabilities in our
// user namespace do not cover host files whose owner it does not map).
void clone_sources(const ChildPlan& plan) {
  // Nothing we mount may propagate back to the host.
  check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0, "make mounts private");
  for (std::size_t i = 0; i < plan.sources.size(); ++i) {
    const auto& src = plan.sources[i];
    int tree = sys::open_tree(AT_FDCWD, src.host_path.c_str(),
                              sys::kOpenTreeClone | sys::kOpenTreeCloexec | sys::kAtRecursive);
    check(tree >= 0, "open_tree", src.host_path.c_str());
    sys::MountAttr attr{src.attr_set, 0, 0, 0};
    check(sys::mount_setattr(tree, "", AT_EMPTY_PATH | sys::kAtRecursive, &attr) == 0,
          "mount_setattr", src.host_path.c_str());
    plan.source_fds[i] = tree;
  }
}

void build_root(const ChildPlan& plan) {
  check(::mount("tmpfs", plan.staging.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                plan.root_options.c_str()) == 0,
        "mount root tmpfs on", plan.staging.c_str());
  check(::chdir(plan.staging.c_str()) == 0, "chdir", plan.staging.c_str());
  for (const auto& step : plan.steps) run_mount_step(plan, step);
  // Make the new root the root and detach the old one (pivot_root(".", ".") stacks them).
  check(sys::pivot_root(".", ".") == 0, "pivot_root");
  check(::umount2(".", MNT_DETACH) == 0, "detach old root");
  check(::chdir("/") == 0, "chdir /");
  sys::MountAttr ro{sys::kMountAttrRdonly | sys::kMountAttrNosuid | sys::kMountAttrNodev, 0, 0, 0};
  check(sys::mount_setattr(AT_FDCWD, "/", 0, &ro) == 0, "make root read-only");
  check(::chdir(plan.workdir.c_str()) == 0, "chdir", plan.workdir.c_str());
}

// Sends descriptors to the supervisor in one record tagged with `tag`.
void send_to_supervisor(char tag, const int* fds, std::size_t count) {
  check(send_fds(kChildControlFd, tag, fds, count), "sending descriptors to supervisor");
}

}  // namespace

namespace child_steps {

void open_listeners(const ChildPlan& plan) {
  if (plan.listeners.empty()) return;
  int fds[64] = {};
  std::size_t n = 0;
  for (auto port : plan.listeners) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    check(s >= 0, "socket for listener");
    int one = 1;
    (void)::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    check(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind listener");
    check(::listen(s, 128) == 0, "listen");
    fds[n++] = s;
  }
  send_to_supervisor('L', fds, n);
  for (std::size_t i = 0; i < n; ++i) ::close(fds[i]);
}

}  // namespace child_steps

namespace {

// --tty: a pty pair from the sandbox's own devpts instance. The master (and a second slave
// descriptor) go to the supervisor; the slave becomes 0-2 (opened O_NOCTTY: the init must
// not take it as its terminal; the program does, in start_program). Opened before Landlock,
// so its ioctls are not restricted.
void open_terminal(const ChildPlan& plan) {
  if (!plan.tty) return;
  int master = ::open(plan.tty_ptmx.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  check(master >= 0, "open", plan.tty_ptmx.c_str());
  int unlock = 0;
  check(::ioctl(master, TIOCSPTLCK, &unlock) == 0, "unlocking the pty (TIOCSPTLCK)");
  winsize size{};
  size.ws_row = plan.tty_rows;
  size.ws_col = plan.tty_columns;
  check(::ioctl(master, TIOCSWINSZ, &size) == 0, "setting the window size (TIOCSWINSZ)");
  int slave = ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  check(slave >= 0, "opening the pty slave (TIOCGPTPEER)");
  // The supervisor also keeps a slave open: a program that closes its terminal and reopens
  // /dev/tty later is still read from (with no slave open the master only says EIO).
  const int pair[2] = {master, slave};
  send_to_supervisor('T', pair, 2);
  ::close(master);
  for (int fd = 0; fd <= 2; ++fd) check(::dup2(slave, fd) == fd, "pty slave onto stdio");
  ::close(slave);
}

}  // namespace

namespace child_steps {

void drop_privileges(const ChildPlan& plan) {
  // Capabilities from here on come only from what we keep: none.
  for (int cap = 0; cap <= plan.last_cap; ++cap)
    check(::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 || errno == EINVAL, "drop bounding set");
  check(::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0, "clear ambient caps");
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  check(::syscall(SYS_capset, &header, data) == 0, "capset (drop all)");
  check(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs");
  for (const auto& limit : plan.rlimits)
    check(::setrlimit(static_cast<__rlimit_resource>(limit.resource), &limit.value) == 0,
          "setrlimit");
}

void install_seccomp(const ChildPlan& plan) {
  sock_fprog prog{static_cast<unsigned short>(plan.seccomp_notify->size()),
                  const_cast<sock_filter*>(plan.seccomp_notify->data())};
  if (plan.warm_template) {
    // No listener: the kernel allows one in a process's chain of filters (EBUSY after), and
    // each call needs its own to have its violations named. Without one the template's
    // refused syscalls fail ENOSYS; a call's, refused by both filters, go to the call's
    // listener (of two equal answers the newer filter's wins).
    check(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0, "seccomp (warm template)");
    send_to_supervisor('S', nullptr, 0);
    return;
  }
  int listener = static_cast<int>(
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
  if (listener < 0 && errno == EBUSY) {
    // Another supervisor (a container runtime) already listens on this process's filters:
    // violations then kill with SIGSYS and the syscall cannot be named.
    sock_fprog kill_prog{static_cast<unsigned short>(plan.seccomp_kill.size()),
                         const_cast<sock_filter*>(plan.seccomp_kill.data())};
    check(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &kill_prog) == 0, "seccomp");
    send_to_supervisor('S', nullptr, 0);
    return;
  }
  check(listener >= 0, "seccomp");
  send_to_supervisor('S', &listener, 1);
  ::close(listener);
}

[[noreturn]] void reap_and_report(pid_t program) {
  for (;;) {
    int status = 0;
    pid_t pid = ::wait4(-1, &status, __WALL, nullptr);
    if (pid < 0) {
      if (errno == EINTR) continue;
      sys::raw_exit(0);
    }
    if (pid != program) continue;
    ExitReport report{};
    report.exited = WIFEXITED(status) ? 1 : 0;
    report.code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
    (void)!::write(kChildStatusFd, &report, sizeof report);
    sys::raw_exit(0);
  }
}

}  // namespace child_steps

namespace {
using child_steps::drop_privileges;
using child_steps::install_seccomp;

[[noreturn]] void exec_program(const ChildPlan& plan) {
  // Dispositions were reset in child_main and init sets none, so every signal is at its
  // default here already; only the mask is ours to clear.
  sigset_t none;
  sigemptyset(&none);
  (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::umask(022);
  int best = ENOENT;
  for (const auto& path : plan.exec_candidates) {
    ::execve(path.c_str(), plan.argv.data(), plan.envp.data());
    if (errno != ENOENT && errno != ENOTDIR) best = errno;
  }
  fail("execve", plan.argv[0], best);
}

int start_program(void* arg) {
  const auto& plan = *static_cast<const ChildPlan*>(arg);
  ::close(kChildStatusFd);
  if (plan.tty) {
    // A session of its own, with the pty as its controlling terminal and its process group
    // in the foreground, as a login shell has.
    check(::setsid() >= 0, "setsid (program)");
    check(::ioctl(0, TIOCSCTTY, 0) == 0, "making the pty the controlling terminal (TIOCSCTTY)");
  }
  exec_program(plan);
}

// pid 1 of the sandbox: starts the program, reaps every orphan, and reports how the program
// ended. Its exit ends the pid namespace, which kills whatever the program left running.
[[noreturn]] void run_init(const ChildPlan& plan) {
  // vfork semantics: the program borrows our memory (no page tables copied) until it execs,
  // and we wait until then.
  int tool = ::clone(start_program, plan.program_stack_top(), CLONE_VM | CLONE_VFORK | SIGCHLD,
                     const_cast<ChildPlan*>(&plan));
  if (tool < 0) fail("start program", nullptr, errno);
  ::close(kChildErrorFd);  // the program's copy closes on execve: EOF tells "exec'd"
  ::close(0);
  ::close(1);
  ::close(2);
  // The inherited descriptor is the program's: held here too, it would outlive the program
  // (a warm template's control socket would not tell the supervisor that the template ended).
  ::close(kChildInheritedFd);
  (void)::prctl(PR_SET_NAME, "airlock-init", 0, 0, 0);
  (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  // the program may not read our fds via /proc
  child_steps::reap_and_report(tool);
}

// The network namespace is the costliest to create (0.4-0.5 ms: the kernel registers the
// loopback device and the namespace's sysctl tables), so a helper makes it on the other CPU
// while we wait for the id maps and build the root, and we join it before anything uses the
// network. The helper shares our memory and descriptor table (CLONE_VM | CLONE_FILES), runs
// on the program's stack (unused until then) and exits at once.
struct NetnsHelper {
  pid_t pid = -1;
  int fd = -1;   // the new namespace, in our descriptor table
  int err = 0;   // the helper's errno
  const char* step = nullptr;
};

int make_network_namespace(void* arg) {
  auto* helper = static_cast<NetnsHelper*>(arg);
  long r = sys::errno_free_syscall(SYS_unshare, CLONE_NEWNET);
  if (r < 0) {
    helper->err = static_cast<int>(-r);
    helper->step = "unshare (new network namespace)";
    return 1;
  }
  r = sys::errno_free_syscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/ns/net"),
                              O_RDONLY | O_CLOEXEC);
  if (r < 0) {
    helper->err = static_cast<int>(-r);
    helper->step = "open /proc/self/ns/net (the new network namespace)";
    return 1;
  }
  helper->fd = static_cast<int>(r);
  return 0;
}

void start_netns_helper(const ChildPlan& plan, NetnsHelper& helper) {
  helper.pid = ::clone(make_network_namespace, plan.program_stack_top(),
                       CLONE_VM | CLONE_FILES | SIGCHLD, &helper);
  check(helper.pid > 0, "starting the network namespace helper");
}

// Waits for the helper and moves into its namespace; we never go on in the host's.
void join_network_namespace(NetnsHelper& helper) {
  int status = 0;
  pid_t r;
  do r = ::waitpid(helper.pid, &status, __WALL);
  while (r < 0 && errno == EINTR);
  check(r == helper.pid, "waiting for the network namespace helper");
  if (helper.err != 0) fail(helper.step, nullptr, helper.err);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || helper.fd < 0)
    fail("the network namespace helper died", nullptr, ECHILD);
  check(::setns(helper.fd, CLONE_NEWNET) == 0, "setns (the new network namespace)");
  ::close(helper.fd);
}

void wait_for_supervisor() {
  char go = 0;
  ssize_t n;
  do n = ::read(kChildGoFd, &go, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1) sys::raw_exit(125);  // the supervisor went away
}

// After PR_SET_PDEATHSIG: if the supervisor died before it was set, its end of the go pipe
// (which it holds open while the sandbox lives) is closed by now.
void check_supervisor_alive() {
  pollfd pfd{kChildGoFd, POLLIN, 0};
  int rc;
  do rc = ::poll(&pfd, 1, 0);
  while (rc < 0 && errno == EINTR);
  if (rc != 0) sys::raw_exit(125);  // POLLHUP: the supervisor went away
}

// v1: receive the `tasks` files of the sandbox's cgroups and move ourselves into each. Done
// after the root is built, so the supervisor's mkdirs and limit writes run alongside our
// mounts instead of before clone3; done before the program exists, so everything it does is
// counted and limited. What the setup itself allocated (the namespaces, the few generated
// files on the root tmpfs) stays charged to the supervisor's cgroup.
void join_cgroups(const ChildPlan& plan) {
  if (!plan.join_cgroups_from_control) return;
  ReceivedFds record;
  ssize_t n = receive_fds(kChildControlFd, record, 0);
  if (n == 0) sys::raw_exit(125);  // the supervisor went away
  check(n == 1 && record.tag == 'C' && !record.truncated, "receiving the cgroups to join");
  for (std::size_t i = 0; i < record.count; ++i) {
    check(::write(record.fds[i], "0", 1) == 1, "joining the sandbox's cgroup (write 0 to tasks)");
    ::close(record.fds[i]);
  }
}

}  // namespace

void child_main(const ChildPlan& plan) {
  blank_host_command_line();  // we become the sandbox's pid 1: /proc/1/cmdline reads this
  arrange_descriptors(plan);
  reset_signals();
  ::umask(0);
  NetnsHelper netns;
  start_netns_helper(plan, netns);

  // Wait until the supervisor has written our id maps.
  wait_for_supervisor();
  clone_sources(plan);

  // Become the sandbox user now, keeping capabilities in our user namespace for the setup
  // (files we create must be owned by a mapped id), and drop them all before exec.
  check(::prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
                                       SECBIT_NOROOT | SECBIT_NOROOT_LOCKED,
                0, 0, 0) == 0,
        "set securebits");
  if (plan.root_mode) check(sys::raw_setgroups_empty() == 0, "setgroups (clear)");
  check(sys::raw_setresgid(plan.gid, plan.gid, plan.gid) == 0, "setresgid");
  check(sys::raw_setresuid(plan.uid, plan.uid, plan.uid) == 0, "setresuid");
  // After the credential change, which clears it; then make sure the supervisor did not die
  // before it was set.
  check(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, "PR_SET_PDEATHSIG");
  check_supervisor_alive();

  build_root(plan);
  join_network_namespace(netns);
  check(::sethostname(plan.hostname.c_str(), plan.hostname.size()) == 0, "sethostname");
  check(::setdomainname("", 0) == 0, "setdomainname");
  if (LoopbackResult lo = bring_up_loopback(); lo.err != 0) fail(lo.step, nullptr, lo.err);
  child_steps::open_listeners(plan);
  open_terminal(plan);
  ::close(kChildGoFd);
  join_cgroups(plan);
  if (plan.unshare_cgroup_ns) check(::unshare(CLONE_NEWCGROUP) == 0, "unshare cgroup namespace");
  check(::setsid() >= 0, "setsid");
  drop_privileges(plan);
  const char* step = nullptr;  // a warm template's are its own (plan_warm_template_policy)
  if (int err = apply_landlock(plan.landlock, &step)) fail(step, nullptr, err);
  install_seccomp(plan);
  ::close(kChildControlFd);
  if (plan.session) serve_session(plan);
  run_init(plan);
}

}  // namespace airlock::sandbox
