// bench/sandbox_floor: what the kernel mechanisms of a sandbox cost on this machine, without
// anything else. It makes the same kernel calls as `airlock run -- CMD`, in the same order
// and with the same overlap (docs/sandbox.md), but as a minimal program: no options, no
// error reports beyond exit 125, no verdict, no usage beyond reading the counters, no output
// handling. bench/startup runs it beside `airlock run`, so the gap between the two is what
// Airlock's own code costs, and the gap between it and plain fork+exec is the floor that no
// implementation of these layers gets under.
//
//   sandbox_floor [--without LAYER[,LAYER...]] CMD [ARGS...]
//
// --without leaves layers out to measure what each costs: cgroups, network (the namespace
// and lo), mounts (the new root), landlock, seccomp. Without them it is no sandbox.
//
// Layers: user, pid, mount, ipc, uts, network (made by a helper on the other CPU) and cgroup
// namespaces; id maps; a read-only tmpfs root with the same binds as airlock's default
// profile, a fresh /proc, pivot_root and the old root detached; lo up; the v1 memory, pids
// and cpuacct cgroups (made while the child builds its root, joined by the child) or none;
// securebits, all capabilities dropped, no_new_privs, rlimits; Landlock on the same paths;
// airlock's seccomp program with a listener; an init that starts CMD with vfork and reaps.
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sandbox/fd_passing.hpp"
#include "sandbox/seccomp/seccomp_policy.hpp"
#include "sandbox/seccomp/syscalls.hpp"

namespace sys = airlock::sandbox::sys;

namespace {

[[noreturn]] void die(const char* what) {
  std::perror(what);
  _exit(125);
}

char** g_argv;
int g_go[2], g_control[2];
std::string g_cgroups[3];  // v1 memory, pids, cpuacct: this run's cgroups (supervisor only)
int g_cgroup_count = 0;
alignas(16) char g_helper_stack[64 * 1024];
alignas(16) char g_program_stack[64 * 1024];
int g_netns_fd = -1;
bool g_network = true, g_mounts = true, g_landlock = true, g_seccomp = true, g_cgroups_on = true;

int make_netns(void*) {
  if (sys::errno_free_syscall(SYS_unshare, CLONE_NEWNET) < 0) return 1;
  long fd = sys::errno_free_syscall(SYS_openat, AT_FDCWD,
                                    reinterpret_cast<long>("/proc/self/ns/net"), O_RDONLY);
  if (fd < 0) return 1;
  g_netns_fd = static_cast<int>(fd);
  return 0;
}

int start_program(void*) {
  char* envp[] = {const_cast<char*>("PATH=/usr/local/bin:/usr/bin:/bin"), nullptr};
  execve(g_argv[0], g_argv, envp);
  _exit(127);
}

void build_root() {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr)) die("private");
  const char* sources[] = {"/usr",           "/etc/ld.so.cache", "/etc/alternatives",
                           "/etc/ssl/certs", "/dev/null",        "/dev/zero",
                           "/dev/full",      "/dev/random",      "/dev/urandom"};
  const char* targets[] = {"usr",           "etc/ld.so.cache", "etc/alternatives",
                           "etc/ssl/certs", "dev/null",        "dev/zero",
                           "dev/full",      "dev/random",      "dev/urandom"};
  const bool is_dir[] = {true, false, true, true, false, false, false, false, false};
  int trees[9];
  for (int i = 0; i < 9; ++i) {
    trees[i] = sys::open_tree(AT_FDCWD, sources[i],
                              sys::kOpenTreeClone | sys::kOpenTreeCloexec | sys::kAtRecursive);
    if (trees[i] < 0) die("open_tree");
    sys::MountAttr attr{sys::kMountAttrRdonly | sys::kMountAttrNosuid | sys::kMountAttrNodev, 0, 0,
                        0};
    if (sys::mount_setattr(trees[i], "", AT_EMPTY_PATH | sys::kAtRecursive, &attr)) die("setattr");
  }
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=67108864,mode=0755"))
    die("tmpfs");
  if (chdir("/tmp")) die("chdir");
  for (const char* d : {"usr", "etc", "etc/ssl", "dev", "dev/shm", "proc", "tmp", "work"})
    mkdir(d, 0755);
  for (const char* f : {"etc/passwd", "etc/group", "etc/hosts", "etc/hostname"}) {
    int fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    (void)!write(fd, "root:x:0:0::/:/bin/sh\n", 22);
    close(fd);
  }
  for (const char* link : {"bin", "sbin", "lib", "lib64"}) {
    char target[64];
    std::snprintf(target, sizeof target, "usr/%s", link);
    (void)symlink(target, link);
  }
  (void)symlink("/proc/self/fd", "dev/fd");
  for (int i = 0; i < 9; ++i) {
    if (is_dir[i])
      mkdir(targets[i], 0755);
    else
      close(open(targets[i], O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    if (sys::move_mount(trees[i], "", AT_FDCWD, targets[i], sys::kMoveMountFEmptyPath))
      die("move_mount");
    close(trees[i]);
  }
  for (const char* d : {"tmp", "work", "dev/shm"})
    if (mount(d, d, nullptr, MS_BIND | MS_REC, nullptr)) die("bind");
  if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr)) die("proc");
  if (sys::pivot_root(".", ".")) die("pivot_root");
  if (umount2(".", MNT_DETACH)) die("umount2");
  if (chdir("/")) die("chdir /");
  sys::MountAttr ro{sys::kMountAttrRdonly | sys::kMountAttrNosuid | sys::kMountAttrNodev, 0, 0, 0};
  if (sys::mount_setattr(AT_FDCWD, "/", 0, &ro)) die("read-only root");
  if (chdir("/work")) die("chdir /work");
}

void landlock() {
  struct {
    __u64 fs, net, scoped;
  } attr{(1ULL << 16) - 1, 3, 3};
  int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) die("landlock_create_ruleset");
  for (const char* path : {"/", "/usr", "/etc", "/tmp", "/work", "/dev", "/dev/shm", "/proc",
                           "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) {
    landlock_path_beneath_attr rule{};
    rule.parent_fd = open(path, O_PATH | O_CLOEXEC);
    struct stat st {};
    fstat(rule.parent_fd, &st);
    rule.allowed_access = S_ISDIR(st.st_mode) ? (1ULL << 16) - 1 : 0x8007;
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0))
      die("landlock_add_rule");
    close(rule.parent_fd);
  }
  if (syscall(SYS_landlock_restrict_self, ruleset, 0)) die("landlock_restrict_self");
  close(ruleset);
}

int child(void*) {
  pid_t helper = -1;
  if (g_network) {
    helper = clone(make_netns, g_helper_stack + sizeof g_helper_stack,
                   CLONE_VM | CLONE_FILES | SIGCHLD, nullptr);
    if (helper < 0) die("helper");
  }
  char go;
  if (read(g_go[0], &go, 1) != 1) _exit(125);
  if (prctl(PR_SET_SECUREBITS, 0xf, 0, 0, 0)) die("securebits");
  if (geteuid() == 0 && sys::raw_setgroups_empty()) die("setgroups");
  if (sys::raw_setresgid(1000, 1000, 1000) || sys::raw_setresuid(1000, 1000, 1000)) die("ids");
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (g_mounts) build_root();
  int status;
  if (g_network) {
    if (waitpid(helper, &status, __WALL) != helper || g_netns_fd < 0) die("netns helper");
    if (setns(g_netns_fd, CLONE_NEWNET)) die("setns");
    close(g_netns_fd);
  }
  sethostname("airlock", 7);
  if (g_network) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::strcpy(ifr.ifr_name, "lo");
    ioctl(s, SIOCGIFFLAGS, &ifr);
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    if (ioctl(s, SIOCSIFFLAGS, &ifr)) die("lo up");
    close(s);
  }
  if (g_cgroup_count > 0) {  // the tasks files, sent by the supervisor once it made them
    airlock::sandbox::ReceivedFds tasks;
    if (airlock::sandbox::receive_fds(g_control[1], tasks, 0) != 1) die("receive cgroups");
    for (std::size_t i = 0; i < tasks.count; ++i) {
      if (write(tasks.fds[i], "0", 1) != 1) die("join cgroup");
      close(tasks.fds[i]);
    }
    if (unshare(CLONE_NEWCGROUP)) die("cgroup namespace");
  }
  setsid();
  for (int cap = 0; cap <= 40; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct {
    __u32 version;
    int pid;
  } header{0x20080522, 0};
  __u32 data[6] = {};
  if (syscall(SYS_capset, &header, data)) die("capset");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) die("no_new_privs");
  for (int resource : {RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CORE}) {
    rlimit limit{256, 256};
    if (resource == RLIMIT_FSIZE) limit = {64 << 20, 64 << 20};
    if (resource == RLIMIT_CORE) limit = {0, 0};
    setrlimit(static_cast<__rlimit_resource>(resource), &limit);
  }
  if (g_landlock) landlock();
  if (g_seccomp) {
    const auto& program = airlock::sandbox::seccomp_program().instructions;
    sock_fprog prog{static_cast<unsigned short>(program.size()),
                    const_cast<sock_filter*>(program.data())};
    int listener = static_cast<int>(
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
    if (listener < 0) die("seccomp");
    close(listener);
  }
  pid_t program_pid = clone(start_program, g_program_stack + sizeof g_program_stack,
                            CLONE_VM | CLONE_VFORK | SIGCHLD, nullptr);
  int code = 125;
  for (pid_t pid; (pid = wait4(-1, &status, __WALL, nullptr)) > 0;)
    if (pid == program_pid) code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  _exit(code);
}

// v1 only (this benchmark's machine): this process's memory, pids and cpuacct cgroups.
void find_cgroups() {
  if (!g_cgroups_on) return;
  FILE* in = std::fopen("/proc/self/cgroup", "r");
  char line[1024];
  const char* controllers[] = {"memory", "pids", "cpuacct"};
  std::string found[3];
  while (in && std::fgets(line, sizeof line, in)) {
    char* names = std::strchr(line, ':');
    char* path = names ? std::strchr(names + 1, ':') : nullptr;
    if (!path) continue;
    *path++ = '\0';
    path[std::strcspn(path, "\n")] = '\0';
    for (int i = 0; i < 3; ++i)
      if (std::strcmp(names + 1, controllers[i]) == 0)
        found[i] = std::string("/sys/fs/cgroup/") + controllers[i] +
                   (std::strcmp(path, "/") == 0 ? "" : path);
  }
  if (in) std::fclose(in);
  for (int i = 0; i < 3; ++i)
    if (found[i].empty() || access(found[i].c_str(), W_OK) != 0) return;  // all three or none
  for (int i = 0; i < 3; ++i) g_cgroups[i] = found[i] + "/floor-" + std::to_string(getpid());
  g_cgroup_count = 3;
}

void write_file(const std::string& dir, const char* name, const char* value) {
  std::string path = dir + "/" + name;
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, value, std::strlen(value)) < 0) die(path.c_str());
  close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  if (argc > 2 && std::strcmp(argv[1], "--without") == 0) {
    std::string layers = std::string(",") + argv[2] + ",";
    auto without = [&](const char* layer) {
      return layers.find(std::string(",") + layer + ",") != std::string::npos;
    };
    g_cgroups_on = !without("cgroups");
    g_network = !without("network");
    g_mounts = !without("mounts");
    g_landlock = !without("landlock");
    g_seccomp = !without("seccomp");
    first = 3;
  }
  if (argc <= first) {
    std::fprintf(stderr, "usage: sandbox_floor [--without LAYER[,LAYER...]] CMD [ARGS...]\n");
    return 2;
  }
  g_argv = argv + first;
  find_cgroups();
  if (pipe2(g_go, O_CLOEXEC) || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, g_control))
    die("pipes");
  int pidfd = -1;
  sys::CloneArgs args{};
  args.flags =
      sys::kClonePidfd | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  long pid = sys::clone3(&args);
  if (pid < 0) die("clone3");
  if (pid == 0) child(nullptr);
  const bool root = geteuid() == 0;
  char path[64], map[64];
  if (!root) {
    std::snprintf(path, sizeof path, "/proc/%ld/setgroups", pid);
    int fd = open(path, O_WRONLY);
    (void)!write(fd, "deny", 4);
    close(fd);
  }
  std::snprintf(map, sizeof map, "1000 %u 1\n", root ? 65534U : geteuid());
  std::snprintf(path, sizeof path, "/proc/%ld/uid_map", pid);
  int fd = open(path, O_WRONLY);
  if (write(fd, map, std::strlen(map)) < 0) die("uid_map");
  close(fd);
  std::snprintf(map, sizeof map, "1000 %u 1\n", root ? 65534U : getegid());
  std::snprintf(path, sizeof path, "/proc/%ld/gid_map", pid);
  fd = open(path, O_WRONLY);
  if (write(fd, map, std::strlen(map)) < 0) die("gid_map");
  close(fd);
  if (write(g_go[1], "g", 1) != 1) die("go");
  if (g_cgroup_count > 0) {  // while the child builds its root
    int tasks[3];
    for (int i = 0; i < 3; ++i) {
      if (mkdir(g_cgroups[i].c_str(), 0755)) die("mkdir cgroup");
      tasks[i] = open((g_cgroups[i] + "/tasks").c_str(), O_WRONLY | O_CLOEXEC);
    }
    write_file(g_cgroups[0], "memory.limit_in_bytes", "536870912");
    write_file(g_cgroups[1], "pids.max", "65");
    if (!airlock::sandbox::send_fds(g_control[0], 'C', tasks, 3)) die("send cgroups");
    for (int t : tasks) close(t);
  }
  pollfd exited{pidfd, POLLIN, 0};
  poll(&exited, 1, -1);
  siginfo_t info{};
  waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED | __WALL);
  if (g_cgroup_count > 0) {
    char buf[4096];
    for (const std::string& counter :
         {g_cgroups[0] + "/memory.oom_control", g_cgroups[0] + "/memory.max_usage_in_bytes",
          g_cgroups[1] + "/pids.peak", g_cgroups[2] + "/cpuacct.usage_user",
          g_cgroups[2] + "/cpuacct.usage_sys"}) {
      int c = open(counter.c_str(), O_RDONLY | O_CLOEXEC);
      (void)!read(c, buf, sizeof buf);
      close(c);
    }
    for (auto& dir : g_cgroups)
      while (rmdir(dir.c_str()) != 0 && errno == EBUSY) usleep(100);
  }
  return info.si_code == CLD_EXITED ? info.si_status : 128;
}
