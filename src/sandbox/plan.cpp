#include "sandbox/plan.hpp"

#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "sandbox/host_stat.hpp"
#include "sandbox/seccomp/seccomp_policy.hpp"
#include "sandbox/seccomp/syscalls.hpp"

namespace airlock::sandbox {
namespace {

constexpr unsigned kNobody = 65534;
// Besides /usr: bound read-only where they are directories, made the same symlinks where the
// host has symlinks (merged /usr).
constexpr const char* kSystemRootDirs[] = {"bin", "sbin", "lib", "lib64", "lib32", "libx32"};
constexpr int kMaxPtys = 16;  // --tty: ptys the sandbox's devpts instance may hold

std::string relative(const std::string& absolute) { return absolute.substr(1); }

int path_depth(const std::string& p) { return static_cast<int>(std::count(p.begin(), p.end(), '/')); }

bool is_within(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

int read_last_cap() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int cap = 40;
  in >> cap;
  return cap;
}

// Builds the steps; remembers which directories of the new root it has created.
class LayoutBuilder {
 public:
  explicit LayoutBuilder(ChildPlan& plan) : plan_(plan) {}

  int add_source(const std::string& host_path, std::uint64_t attr) {
    plan_.sources.push_back({host_path, attr});
    return static_cast<int>(plan_.sources.size() - 1);
  }

  // Creates `rel` and its parents on our tmpfs (no-op for what exists).
  void make_dirs(const std::string& rel, unsigned mode = 0755) {
    std::size_t pos = 0;
    while (pos != std::string::npos) {
      pos = rel.find('/', pos + 1);
      std::string prefix = rel.substr(0, pos);
      if (created_.insert(prefix).second) step(MountStep::Kind::make_dir, prefix, "", mode);
    }
  }

  void step(MountStep::Kind kind, std::string path, std::string text = "", unsigned mode = 0755,
            unsigned long flags = 0, int source = -1, bool is_directory = true) {
    plan_.steps.push_back({kind, std::move(path), std::move(text), mode, flags, source, is_directory});
  }

  void attach(const std::string& host, const std::string& rel, std::uint64_t attr, bool dir) {
    auto parent = rel.rfind('/');
    if (parent != std::string::npos) make_dirs(rel.substr(0, parent));
    int src = add_source(host, attr);
    step(MountStep::Kind::attach_tree, rel, "", 0, 0, src, dir);
    if (dir) created_.insert(rel);
  }

 private:
  ChildPlan& plan_;
  std::set<std::string> created_;
};

}  // namespace

HostIds host_ids() {
  if (::geteuid() == 0) return {true, kNobody, kNobody};
  return {false, static_cast<unsigned>(::geteuid()), static_cast<unsigned>(::getegid())};
}

Result<std::string> normalize_absolute(const std::string& path) {
  if (path.empty() || path[0] != '/')
    return Error::make("invalid_argument", "path '" + path + "' must be absolute");
  if (path.find('\0') != std::string::npos)
    return Error::make("invalid_argument", "path contains a NUL byte");
  std::string out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    i = j;
    if (part.empty() || part == ".") continue;
    if (part == "..")
      return Error::make("invalid_argument", "path '" + path + "' must not contain '..'");
    out += "/" + part;
  }
  return out.empty() ? std::string("/") : out;
}

std::string passwd_text(const std::string& home) {
  return "root:x:0:0:root:/root:/usr/sbin/nologin\n"
         "sandbox:x:" + std::to_string(kSandboxUid) + ":" + std::to_string(kSandboxGid) +
         ":airlock sandbox:" + home + ":/bin/sh\n"
         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}

std::string group_text() {
  return "root:x:0:\nsandbox:x:" + std::to_string(kSandboxGid) + ":\nnogroup:x:65534:\n";
}

std::vector<SystemEtcEntry> system_etc_entries() {
  std::vector<SystemEtcEntry> out;
  for (SystemEtcEntry entry : {SystemEtcEntry{"/etc/ld.so.cache", true},
                               SystemEtcEntry{"/etc/alternatives", false},
                               SystemEtcEntry{"/etc/ssl/certs", false},
                               // Debian's matplotlib reads its defaults here, and cannot start without them
                               SystemEtcEntry{"/etc/matplotlibrc", true}}) {
    struct stat st {};
    if (::stat(entry.path, &st) == 0) out.push_back(entry);
  }
  return out;
}

std::vector<std::string> system_read_only_roots() {
  std::vector<std::string> roots = {"/usr"};
  for (const char* name : kSystemRootDirs) {
    std::string host = std::string("/") + name;
    struct stat st {};
    if (::lstat(host.c_str(), &st) == 0 && (S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)))
      roots.push_back(host);
  }
  return roots;
}

std::vector<std::string> exec_candidates(const std::string& program, const std::string& path) {
  if (program.find('/') != std::string::npos) return {program};
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/') out.push_back(dir + "/" + program);
    start = end + 1;
  }
  return out;
}

namespace {

using namespace landlock;
constexpr std::uint64_t kSystemAttr =
    sys::kMountAttrRdonly | sys::kMountAttrNosuid | sys::kMountAttrNodev;

// The tmpfs root: where it is staged, its size (--disk), and the work dir.
Status plan_root(ChildPlan& plan, const Spec& spec) {
  for (const char* candidate : {"/tmp", "/mnt", "/var/tmp", "/run"}) {
    struct stat st {};
    if (::stat(candidate, &st) == 0 && S_ISDIR(st.st_mode)) {
      plan.staging = candidate;
      break;
    }
  }
  if (plan.staging.empty())
    return Error::make("setup_error", "no directory to stage the new root on (/tmp, /mnt, ...)");
  const std::uint64_t disk = spec.limits.disk_bytes;
  plan.root_options = "size=" + std::to_string(disk) +
                      ",nr_inodes=" + std::to_string(std::max<std::uint64_t>(1024, disk / 4096)) +
                      ",mode=0755";
  auto workdir = normalize_absolute(spec.workdir);
  if (!workdir) return workdir.error();
  plan.workdir = *workdir;
  return {};
}

// Read-only system directories, and the merged-/usr links as the host has them. Records the
// inside paths of the binds in system_mounts (for the nesting checks of user binds).
Status plan_system_dirs(LayoutBuilder& layout, LandlockPlan& ll,
                        std::vector<std::string>& system_mounts) {
  struct stat usr {};
  if (::stat("/usr", &usr) != 0 || !S_ISDIR(usr.st_mode))
    return Error::make("setup_error", "the host has no /usr to run programs from");
  layout.attach("/usr", "usr", kSystemAttr, true);
  system_mounts.push_back("/usr");
  ll.paths.push_back({"/usr", kReadOnly, true});
  for (const char* name : kSystemRootDirs) {
    std::string host = std::string("/") + name;
    struct stat st {};
    if (::lstat(host.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      std::array<char, 4096> target{};
      ssize_t n = ::readlink(host.c_str(), target.data(), target.size() - 1);
      if (n > 0) layout.step(MountStep::Kind::make_symlink, name, std::string(target.data(), n));
    } else if (S_ISDIR(st.st_mode)) {
      layout.attach(host, name, kSystemAttr, true);
      system_mounts.push_back(host);
      ll.paths.push_back({host, kReadOnly, true});
    }
  }
  return {};
}

// /etc: generated identity files plus the few host files programs need.
void plan_etc(LayoutBuilder& layout, LandlockPlan& ll, std::vector<std::string>& system_mounts,
              const Spec& spec, const std::string& home) {
  layout.make_dirs("etc");
  layout.step(MountStep::Kind::write_file, "etc/passwd", passwd_text(home), 0644);
  layout.step(MountStep::Kind::write_file, "etc/group", group_text(), 0644);
  layout.step(MountStep::Kind::write_file, "etc/hosts",
              "127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t" + spec.hostname + "\n", 0644);
  layout.step(MountStep::Kind::write_file, "etc/hostname", spec.hostname + "\n", 0644);
  for (SystemEtcEntry entry : system_etc_entries()) {
    layout.attach(entry.path, relative(entry.path), kSystemAttr, !entry.is_file);
    system_mounts.push_back(entry.path);
  }
  std::array<char, 4096> target{};
  ssize_t n = ::readlink("/etc/localtime", target.data(), target.size() - 1);
  if (n > 0)
    layout.step(MountStep::Kind::make_symlink, "etc/localtime", std::string(target.data(), n));
  ll.paths.push_back({"/etc", kReadOnly, true});
}

// User binds, normalised and shallowest first so a nested bind lands inside its parent.
Result<std::vector<Bind>> ordered_binds(const Spec& spec) {
  std::vector<Bind> binds;
  for (const auto& b : spec.binds) {
    auto src = normalize_absolute(b.source);
    if (!src) return src.error();
    auto dst = normalize_absolute(b.dest.empty() ? b.source : b.dest);
    if (!dst) return dst.error();
    binds.push_back({*src, *dst, b.writable});
  }
  std::stable_sort(binds.begin(), binds.end(), [](const Bind& a, const Bind& b) {
    return path_depth(a.dest) < path_depth(b.dest);
  });
  return binds;
}

// The root is one tmpfs of --disk bytes. It is made read-only at the end; the work dir,
// /tmp and /dev/shm are bind mounts of its own directories, which stay writable (unless a
// user bind takes their place).
void plan_writable_dirs(LayoutBuilder& layout, LandlockPlan& ll, const std::vector<Bind>& binds,
                        const std::string& workdir) {
  bool bind_on_tmp = false, bind_on_workdir = false;
  for (const auto& b : binds) {
    bind_on_tmp |= (b.dest == "/tmp");
    bind_on_workdir |= (b.dest == workdir);
  }
  if (!bind_on_tmp) {
    layout.make_dirs("tmp", 01777);
    layout.step(MountStep::Kind::bind_local, "tmp", "tmp");
    ll.paths.push_back({"/tmp", kReadWrite, true});
  }
  if (!bind_on_workdir) {
    const std::string work_rel = relative(workdir);
    layout.make_dirs(work_rel);
    layout.step(MountStep::Kind::bind_local, work_rel, work_rel);
    ll.paths.push_back({workdir, kReadWrite, true});
  }
}

// --tty, and every session (its terminals): a new devpts instance (never the host's
// /dev/pts) and the host's /dev/tty node, which opens the opener's own controlling terminal:
// inside, the sandbox's pty.
void plan_devpts(LayoutBuilder& layout, LandlockPlan& ll, ChildPlan& plan) {
  layout.make_dirs("dev/pts");
  layout.step(MountStep::Kind::mount_devpts, "dev/pts",
              "newinstance,ptmxmode=0666,mode=0620,gid=" + std::to_string(kSandboxGid) +
                  ",max=" + std::to_string(kMaxPtys));
  layout.step(MountStep::Kind::make_symlink, "dev/ptmx", "pts/ptmx");
  ll.paths.push_back({"/dev/pts", kReadFile | kWriteFile | kIoctlDev | kReadDir, true});
  struct stat st {};
  if (::stat("/dev/tty", &st) == 0 && S_ISCHR(st.st_mode)) {
    layout.attach("/dev/tty", "dev/tty", sys::kMountAttrNosuid | sys::kMountAttrNoexec, false);
    ll.paths.push_back({"/dev/tty", kReadFile | kWriteFile | kIoctlDev, false});
  }
  plan.tty_ptmx = "/dev/pts/ptmx";
}

void plan_terminal(LayoutBuilder& layout, LandlockPlan& ll, ChildPlan& plan,
                   const Terminal& tty) {
  plan_devpts(layout, ll, plan);
  plan.tty = true;
  plan.tty_rows = tty.rows;
  plan.tty_columns = tty.columns;
}

// Minimal /dev: host device nodes bound onto files of the read-only root; then /proc.
void plan_dev_and_proc(LayoutBuilder& layout, LandlockPlan& ll, ChildPlan& plan,
                       const Spec& spec) {
  layout.make_dirs("dev");
  for (const char* node : {"null", "zero", "full", "random", "urandom"}) {
    std::string host = std::string("/dev/") + node;
    layout.attach(host, "dev/" + std::string(node), sys::kMountAttrNosuid | sys::kMountAttrNoexec,
                  false);
    ll.paths.push_back({host, kReadFile | kWriteFile | kIoctlDev, false});
  }
  if (spec.tty) plan_terminal(layout, ll, plan, *spec.tty);
  else if (spec.session_control_fd >= 0) plan_devpts(layout, ll, plan);  // its init opens ptys
  layout.step(MountStep::Kind::make_symlink, "dev/fd", "/proc/self/fd");
  layout.step(MountStep::Kind::make_symlink, "dev/stdin", "/proc/self/fd/0");
  layout.step(MountStep::Kind::make_symlink, "dev/stdout", "/proc/self/fd/1");
  layout.step(MountStep::Kind::make_symlink, "dev/stderr", "/proc/self/fd/2");
  layout.make_dirs("dev/shm", 01777);
  layout.step(MountStep::Kind::bind_local, "dev/shm", "dev/shm");
  ll.paths.push_back({"/dev", kReadDir, true});
  ll.paths.push_back({"/dev/shm", kReadWrite, true});

  layout.make_dirs("proc");
  layout.step(MountStep::Kind::mount_proc, "proc");
  ll.paths.push_back({"/proc", kReadFile | kReadDir, true});
}

Error bad_bind(const std::string& message) { return Error::make("invalid_argument", message); }

// The host path a mount point inside a system bind or an earlier user bind would be at ("" if
// it is on our own tmpfs).
std::string host_path_under(const Bind& b, const std::vector<std::string>& system_mounts,
                            const std::vector<std::pair<std::string, std::string>>& placed) {
  std::string host_under;
  for (const auto& sys_dest : system_mounts)
    if (is_within(b.dest, sys_dest)) host_under = b.dest;  // same path on the host
  for (const auto& [dest, source] : placed)
    if (is_within(b.dest, dest) && b.dest != dest) host_under = source + b.dest.substr(dest.size());
  return host_under;
}

// User binds. A mount point inside another bind must already exist there: we never create
// directories in a host tree.
// The binds' sources are the caller's paths, anywhere on the host: looked up within the setup
// time (stat_within), so that one on an unresponsive filesystem fails the run instead of
// holding this thread.
Status plan_user_binds(LayoutBuilder& layout, LandlockPlan& ll, const std::vector<Bind>& binds,
                       const std::vector<std::string>& system_mounts, std::chrono::milliseconds setup_time) {
  std::vector<std::pair<std::string, std::string>> placed;  // dest -> host source
  for (const auto& b : binds) {
    for (const char* reserved : {"/proc", "/dev"})
      if (is_within(b.dest, reserved))
        return bad_bind("cannot bind onto " + b.dest + ": " + reserved +
                        " is reserved for the sandbox");
    if (b.dest == "/") return bad_bind("cannot bind onto / (the sandbox's root)");
    auto source = stat_within(b.source, setup_time);
    if (!source) return Error::make("setup_error", "bind source " + source.error().message);
    if (source->err != 0) return bad_bind("bind source " + b.source + ": " + std::string(strerror(source->err)));
    bool is_dir = S_ISDIR(source->st.st_mode);
    std::string host_under = host_path_under(b, system_mounts, placed);
    if (!host_under.empty()) {
      auto mp = stat_within(host_under, setup_time);
      if (!mp) return Error::make("setup_error", "cannot bind onto " + b.dest + ": " + mp.error().message);
      if (mp->err != 0 || S_ISDIR(mp->st.st_mode) != is_dir)
        return bad_bind("cannot bind onto " + b.dest + ": it lies inside another bind and " +
                        host_under + " is not an existing " + (is_dir ? "directory" : "file") +
                        " there");
    }
    std::uint64_t attr = sys::kMountAttrNosuid | sys::kMountAttrNodev;
    if (!b.writable) attr |= sys::kMountAttrRdonly;
    layout.attach(b.source, relative(b.dest), attr, is_dir);
    placed.emplace_back(b.dest, b.source);
    ll.paths.push_back({b.dest, b.writable ? kReadWrite : kReadOnly, is_dir});
  }
  return {};
}

// The mount layout and the Landlock rules that follow it, in the order the child mounts.
Status plan_mounts(ChildPlan& plan, const Spec& spec) {
  LayoutBuilder layout(plan);
  LandlockPlan& ll = plan.landlock;
  ll.paths.push_back({"/", kReadDir, true});
  std::vector<std::string> system_mounts;  // inside paths of system binds (for nesting checks)
  if (auto r = plan_system_dirs(layout, ll, system_mounts); !r) return r;
  plan_etc(layout, ll, system_mounts, spec, plan.workdir);
  auto binds = ordered_binds(spec);
  if (!binds) return binds.error();
  plan_writable_dirs(layout, ll, *binds, plan.workdir);
  plan_dev_and_proc(layout, ll, plan, spec);
  return plan_user_binds(layout, ll, *binds, system_mounts,
                         std::min(spec.limits.wall_time, spec.limits.setup_time));
}

// rlimits: a second layer under the cgroup, and the only one where no cgroup can be had.
Status plan_rlimits(ChildPlan& plan, const Limits& lim, const CgroupSupport& cgroups) {
  auto limit = [&](int resource, rlim_t value) {
    plan.rlimits.push_back({resource, rlimit{value, value}});
  };
  limit(RLIMIT_NOFILE, lim.open_files);
  // Counted per uid in the sandbox's own user namespace, and checked before the cgroup: with a
  // pids cgroup it sits one above pids.max, so that the cgroup refuses the fork and counts it
  // (pids.events, usage.pids_limit_hit) while the rlimit stays a second layer.
  limit(RLIMIT_NPROC, lim.pids + (cgroups.limits_pids() ? 2 : 1));
  limit(RLIMIT_FSIZE, lim.disk_bytes);
  limit(RLIMIT_CORE, 0);
  if (lim.cpu_time) {
    rlim_t seconds = static_cast<rlim_t>((lim.cpu_time->count() + 999) / 1000);
    plan.rlimits.push_back({RLIMIT_CPU, rlimit{seconds, seconds + 1}});
  }
  if (!cgroups.limits_memory()) limit(RLIMIT_AS, lim.memory_bytes);
  for (const auto& l : plan.rlimits) {
    rlimit current{};
    ::getrlimit(static_cast<__rlimit_resource>(l.resource), &current);
    if (current.rlim_max != RLIM_INFINITY && l.value.rlim_max > current.rlim_max)
      return Error::make("invalid_argument",
                         "limit " + std::to_string(l.value.rlim_max) + " for rlimit " +
                             std::to_string(l.resource) + " is above airlock's own hard limit " +
                             std::to_string(current.rlim_max));
  }
  return {};
}

// seccomp: the shared program, and a copy whose violations kill (no listener available).
void plan_seccomp(ChildPlan& plan) {
  const auto& program = seccomp_program();
  plan.seccomp_notify = &program.instructions;
  plan.seccomp_kill = kill_on_violation(program);
}

// A warm template's own policy (docs/warm-start.md): the tool's import runs under the call's
// TCP and scope rules and the call's filter but for what its calls' set-up needs
// (warm_template_needs). Its Landlock handles no filesystem access: a domain that does
// refuses mount (hook_sb_mount), and each call mounts its tmpfs and /proc. Each call stacks
// its own rules (every path) and filter on top before its tool runs.
// A networked tool's template (Spec::network: its calls' egress listeners) opens no listener
// itself: each call opens them in its own network namespace, under this domain, which lets
// them bind those ports (and only those); the call's own domain then refuses every bind.
void plan_warm_template_policy(ChildPlan& plan) {
  LandlockPlan& ll = plan.landlock;
  ll.handled_fs = 0;
  ll.paths.clear();
  ll.bind_ports = std::move(plan.listeners);
  plan.listeners.clear();
  if (ll.handled_net == 0 && ll.scoped == 0) ll.abi = 0;  // before ABI 4: nothing to handle
  const auto& program = warm_template_seccomp_program();
  plan.seccomp_notify = &program.instructions;
  plan.seccomp_kill = kill_on_violation(program);
}

// Environment: nothing of ours, only PATH, HOME, LANG and what the spec gives; then argv.
void plan_exec(ChildPlan& plan, const Spec& spec) {
  std::map<std::string, std::string> env = {
      {"PATH", kDefaultPath}, {"HOME", plan.workdir}, {"LANG", "C.UTF-8"}};
  for (const auto& [k, v] : spec.env) env[k] = v;
  for (const auto& [k, v] : env) plan.envp_storage.push_back(k + "=" + v);
  for (auto& s : plan.envp_storage) plan.envp.push_back(s.data());
  plan.envp.push_back(nullptr);
  plan.argv_storage = spec.argv;
  for (auto& s : plan.argv_storage) plan.argv.push_back(s.data());
  plan.argv.push_back(nullptr);
  plan.exec_candidates = exec_candidates(spec.argv.front(), env["PATH"]);
}

}  // namespace

// By concern, in the order the child needs them: identity, root, mounts (with Landlock),
// rlimits, seccomp, exec.
Result<ChildPlan> make_child_plan(const Spec& spec, const CgroupSupport& cgroups) {
  ChildPlan plan{};
  const HostIds ids = host_ids();
  plan.root_mode = ids.root_mode;
  plan.uid = kSandboxUid;
  plan.gid = kSandboxGid;
  plan.last_cap = read_last_cap();
  plan.hostname = spec.hostname;
  plan.inherit_fd = spec.warm_template_fd >= 0 ? spec.warm_template_fd : spec.session_control_fd;
  plan.warm_template = spec.warm_template_fd >= 0;
  plan.session = spec.session_control_fd >= 0;
  plan.listeners = spec.network.loopback_listeners;
  plan.unshare_cgroup_ns = cgroups.mode != CgroupMode::v2;

  if (auto r = plan_root(plan, spec); !r) return r.error();
  if (auto r = plan_mounts(plan, spec); !r) return r.error();
  // Landlock: TCP connect only to the ports the egress layer asked for; no TCP bind.
  plan.landlock.connect_ports = spec.network.tcp_connect_ports;
  finish_landlock_plan(plan.landlock, landlock_abi());
  if (auto r = plan_rlimits(plan, spec.limits, cgroups); !r) return r.error();
  plan_seccomp(plan);
  if (plan.warm_template) plan_warm_template_policy(plan);
  plan_exec(plan, spec);
  plan.source_fds.assign(plan.sources.size(), -1);
  plan.program_stack = std::make_unique_for_overwrite<char[]>(ChildPlan::kProgramStackBytes);
  return plan;
}

}  // namespace airlock::sandbox
