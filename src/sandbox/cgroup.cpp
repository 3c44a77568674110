#include "sandbox/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

namespace airlock::sandbox {
namespace {

// Plain read(2): these are small kernel-generated files, read on every run's start and end,
// where an ifstream's set-up costs more than the read.
std::string read_file(const std::string& path) {
  std::string text;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

bool write_file(const std::string& path, const std::string& value, int* err = nullptr) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err) *err = errno;
    return false;
  }
  ssize_t n = ::write(fd, value.data(), value.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    if (err) *err = (n < 0) ? e : EIO;
    return false;
  }
  return true;
}

std::optional<std::uint64_t> read_u64(const std::string& path) {
  std::string text = read_file(path);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str()) return std::nullopt;
  return v;
}

// "key value" lines (memory.events, cpu.stat, memory.oom_control).
std::optional<std::uint64_t> read_keyed(const std::string& path, const std::string& key) {
  std::istringstream in(read_file(path));
  std::string k;
  std::uint64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return std::nullopt;
}

bool dir_writable(const std::string& dir) { return ::access(dir.c_str(), W_OK | X_OK) == 0; }

struct Mount {
  std::string root;        // mountinfo field 4
  std::string mountpoint;  // field 5
  std::string fstype;
  std::string super_options;
};

bool has_option(const std::string& options, const std::string& name) {
  std::istringstream in(options);
  std::string opt;
  while (std::getline(in, opt, ','))
    if (opt == name) return true;
  return false;
}

std::vector<Mount> cgroup_mounts_from_mountinfo() {
  std::vector<Mount> mounts;
  std::istringstream in(read_file("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, mountpoint, opts, field;
    fields >> id >> parent >> devno >> root >> mountpoint >> opts;
    while (fields >> field && field != "-") {
    }
    std::string fstype, source, super_options;
    fields >> fstype >> source >> super_options;
    if (fstype == "cgroup" || fstype == "cgroup2")
      mounts.push_back({root, mountpoint, fstype, super_options});
  }
  return mounts;
}

// /proc/self/cgroup as (controllers, path) pairs; the unified hierarchy has empty controllers.
using SelfCgroups = std::vector<std::pair<std::string, std::string>>;

SelfCgroups read_self_cgroups() {
  SelfCgroups self;
  std::istringstream in(read_file("/proc/self/cgroup"));
  std::string line;
  while (std::getline(in, line)) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    if (line.substr(0, a) == "0" && b == a + 1)
      self.emplace_back("", line.substr(b + 1));
    else
      self.emplace_back(line.substr(a + 1, b - a - 1), line.substr(b + 1));
  }
  return self;
}

bool on_filesystem(const std::string& dir, long magic) {
  struct statfs fs {};
  return ::statfs(dir.c_str(), &fs) == 0 && fs.f_type == magic;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// The hierarchies where they usually are, without reading /proc/self/mountinfo: that costs
// 35 us here and grows with the host's mount table (thousands of lines on a busy Kubernetes
// node). A guess is taken only when it provably shows the root of its hierarchy and we are in
// the initial cgroup namespace, so that /proc/self/cgroup's paths start at that root: v1
// /sys/fs/cgroup/<controllers> with the root-only release_agent; v2 /sys/fs/cgroup/unified or
// /sys/fs/cgroup without cgroup.freeze, which every cgroup but the root has. Otherwise empty,
// and the caller reads mountinfo.
std::optional<std::vector<Mount>> cgroup_mounts_where_usual(const SelfCgroups& self) {
  constexpr const char* kInitialCgroupNamespace = "cgroup:[4026531835]";  // PROC_CGROUP_INIT_INO
  char ns[64] = {};
  if (::readlink("/proc/self/ns/cgroup", ns, sizeof ns - 1) <= 0 ||
      std::strcmp(ns, kInitialCgroupNamespace) != 0)
    return std::nullopt;
  std::vector<Mount> mounts;
  for (const auto& [controllers, path] : self) {
    if (controllers.empty()) {
      const char* found = nullptr;
      for (const char* dir : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"})
        if (!found && on_filesystem(dir, CGROUP2_SUPER_MAGIC)) found = dir;
      if (!found || exists(std::string(found) + "/cgroup.freeze")) return std::nullopt;
      mounts.push_back({"/", found, "cgroup2", ""});
      continue;
    }
    bool used = false;
    for (const char* c : {"memory", "pids", "cpuacct", "cpu", "freezer"}) used = used || has_option(controllers, c);
    if (!used) continue;  // not one we use
    std::string dir = "/sys/fs/cgroup/" + controllers;
    if (!on_filesystem(dir, CGROUP_SUPER_MAGIC) || !exists(dir + "/release_agent"))
      return std::nullopt;
    mounts.push_back({"/", dir, "cgroup", controllers});
  }
  return mounts;
}

// Maps a path from /proc/self/cgroup onto a mount of that hierarchy.
std::string to_fs_path(const Mount& m, const std::string& cgroup_path) {
  std::string rel = cgroup_path;
  if (m.root != "/" && rel.rfind(m.root, 0) == 0) rel = rel.substr(m.root.size());
  if (rel.empty() || rel == "/") return m.mountpoint;
  return m.mountpoint + rel;
}

std::string v1_base(const std::vector<Mount>& mounts,
                    const std::vector<std::pair<std::string, std::string>>& self_cgroups,
                    const std::string& controller) {
  for (const auto& [controllers, path] : self_cgroups) {
    if (!has_option(controllers, controller)) continue;
    for (const auto& m : mounts)
      if (m.fstype == "cgroup" && has_option(m.super_options, controller)) {
        std::string dir = to_fs_path(m, path);
        if (dir_writable(dir)) return dir;
      }
  }
  return {};
}

bool list_has(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

// cgroup v2 forbids processes in a cgroup whose subtree_control hands out controllers
// (except at the root). If only this process lives in our cgroup, it moves into a leaf
// "airlock-supervisor-<pid>" so the controllers can be enabled below it (the systemd
// Delegate=yes pattern).
bool prepare_v2_delegation(CgroupSupport& s, const std::string& hierarchy_root) {
  std::string controllers = read_file(s.v2_base + "/cgroup.controllers");
  bool want_memory = list_has(controllers, "memory");
  bool want_pids = list_has(controllers, "pids");
  bool want_cpu = list_has(controllers, "cpu");
  if (!want_memory && !want_pids) {
    s.why_not = "cgroup v2: the memory and pids controllers are not delegated to " + s.v2_base;
    return true;  // still usable for placement, kill and cpu.stat
  }
  std::string subtree = read_file(s.v2_base + "/cgroup.subtree_control");
  auto enabled = [&](const std::string& c) { return list_has(subtree, c); };
  std::string enable;
  if (want_memory && !enabled("memory")) enable += " +memory";
  if (want_pids && !enabled("pids")) enable += " +pids";
  if (!enable.empty()) {
    bool is_root = (s.v2_base == hierarchy_root);
    if (!is_root) {
      std::istringstream procs(read_file(s.v2_base + "/cgroup.procs"));
      pid_t pid = 0, self = ::getpid();
      while (procs >> pid)
        if (pid != self) {
          s.why_not = "cgroup v2: " + s.v2_base +
                      " holds other processes, so its controllers cannot be delegated "
                      "(run airlock in its own cgroup, e.g. systemd Delegate=yes)";
          return true;
        }
      std::string leaf = s.v2_base + "/airlock-supervisor-" + std::to_string(self);
      if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) return true;
      if (!write_file(leaf + "/cgroup.procs", std::to_string(self))) return true;
    }
    int err = 0;
    if (!write_file(s.v2_base + "/cgroup.subtree_control", enable.substr(1), &err)) {
      s.why_not = "cgroup v2: cannot enable" + enable + " in " + s.v2_base + ": " + strerror(err);
      return true;
    }
    subtree = read_file(s.v2_base + "/cgroup.subtree_control");
  }
  // cpu on its own write, its failure not v2's (the kernel refuses it while a realtime task is
  // in the subtree): without it only Limits::cpus is refused.
  if (want_cpu && !enabled("cpu") && write_file(s.v2_base + "/cgroup.subtree_control", "+cpu"))
    subtree = read_file(s.v2_base + "/cgroup.subtree_control");
  s.v2_memory = enabled("memory");
  s.v2_pids = enabled("pids");
  s.v2_cpu = enabled("cpu");
  return true;
}

std::atomic<unsigned> g_sequence{0};

}  // namespace

CgroupSupport detect_cgroup_support(const std::string& forced_mode, CgroupMountLookup lookup) {
  CgroupSupport s;
  if (forced_mode == "none") {
    s.why_not = "AIRLOCK_CGROUP=none";
    return s;
  }
  const SelfCgroups all = read_self_cgroups();
  SelfCgroups self;  // the v1 hierarchies
  std::string v2_path;
  for (const auto& [controllers, path] : all) {
    if (controllers.empty()) v2_path = path;
    else self.emplace_back(controllers, path);
  }
  auto usual = lookup == CgroupMountLookup::usual_places_first ? cgroup_mounts_where_usual(all)
                                                               : std::nullopt;
  std::vector<Mount> mounts = usual ? std::move(*usual) : cgroup_mounts_from_mountinfo();
  const Mount* unified = nullptr;
  for (const auto& m : mounts)
    if (m.fstype == "cgroup2") unified = &m;

  bool try_v2 = forced_mode == "v2" || forced_mode == "auto" || forced_mode.empty();
  if (try_v2 && unified && !v2_path.empty()) {
    std::string base = to_fs_path(*unified, v2_path);
    std::string controllers = read_file(base + "/cgroup.controllers");
    bool has_limits = list_has(controllers, "memory") || list_has(controllers, "pids");
    if (dir_writable(base) && (has_limits || forced_mode == "v2")) {
      s.mode = CgroupMode::v2;
      s.v2_base = base;
      prepare_v2_delegation(s, unified->mountpoint);
      return s;
    }
  }
  if (forced_mode == "v2") {
    s.why_not = "AIRLOCK_CGROUP=v2 but no writable cgroup v2 hierarchy holds this process";
    return s;
  }
  s.v1_memory = v1_base(mounts, self, "memory");
  s.v1_pids = v1_base(mounts, self, "pids");
  s.v1_cpuacct = v1_base(mounts, self, "cpuacct");
  s.v1_cpu = v1_base(mounts, self, "cpu");
  s.v1_freezer = v1_base(mounts, self, "freezer");
  if (!s.v1_memory.empty())
    s.v1_memsw = ::access((s.v1_memory + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0;
  if (!s.v1_memory.empty() || !s.v1_pids.empty() || !s.v1_cpuacct.empty()) {
    s.mode = CgroupMode::v1;
    if (s.v1_memory.empty()) s.why_not = "cgroup v1: no writable memory hierarchy";
    return s;
  }
  s.why_not = "no writable cgroup (v2 or v1) holds this process; delegate one to this user";
  return s;
}

CgroupFacts read_cgroup_facts(const CgroupSupport& support) {
  CgroupFacts facts;
  const SelfCgroups self = read_self_cgroups();
  const std::vector<Mount> mounts = cgroup_mounts_from_mountinfo();
  const Mount* unified = nullptr;
  for (const auto& m : mounts)
    if (m.fstype == "cgroup2") unified = &m;
  std::string v2_path;
  for (const auto& [controllers, path] : self)
    if (controllers.empty()) v2_path = path;
  if (unified && !v2_path.empty()) {
    facts.unified_holds_us = true;
    facts.v2_path = support.mode == CgroupMode::v2 ? support.v2_base : to_fs_path(*unified, v2_path);
    facts.v2_writable = dir_writable(facts.v2_path);
    auto words = [](std::string text) {
      while (!text.empty() && text.back() == '\n') text.pop_back();
      return text;
    };
    facts.v2_controllers = words(read_file(facts.v2_path + "/cgroup.controllers"));
    facts.v2_subtree = words(read_file(facts.v2_path + "/cgroup.subtree_control"));
  }
  const std::string unified_root =
      unified ? read_file(unified->mountpoint + "/cgroup.controllers") : std::string();
  // /proc/cgroups: "name hierarchy num_cgroups enabled", the kernel's controllers.
  std::istringstream in(read_file("/proc/cgroups"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, hierarchy, count, enabled;
    if (!(fields >> name >> hierarchy >> count >> enabled) || name[0] == '#' || enabled != "1")
      continue;
    std::string where = "unmounted";
    for (const auto& [controllers, path] : self)
      if (!controllers.empty() && has_option(controllers, name)) where = "v1";
    if (where != "v1" && list_has(unified_root, name)) where = "v2";
    facts.controllers.emplace_back(name, where);
  }
  return facts;
}

const CgroupSupport& cgroup_support() {
  static const CgroupSupport support = [] {
    const char* forced = std::getenv("AIRLOCK_CGROUP");
    return detect_cgroup_support(forced ? forced : "auto");
  }();
  return support;
}

namespace {

// rmdir, waiting for a killed process to leave: it leaves its cgroup a moment after its
// parent has reaped it. True when the directory is gone.
bool remove_cgroup_dir(const std::string& dir, int* err = nullptr) {
  for (int attempt = 0; ::rmdir(dir.c_str()) != 0; ++attempt) {
    if (errno == ENOENT) return true;
    if (errno != EBUSY || attempt >= 2000) {
      if (err) *err = errno;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return true;
}

Status write_setting(const std::string& file, const std::string& value) {
  int err = 0;
  if (!write_file(file, value, &err))
    return Error::make("setup_error",
                       "cgroup: writing " + value + " to " + file + ": " + strerror(err));
  return {};
}

// mkdir of a cgroup of ours. A directory of that name that we did not make this time was left
// by an earlier process with our pid that was killed before it could clean up (pids are
// reused): removed if it is empty (rmdir cannot remove a cgroup that still has processes).
Status make_cgroup_dir(const std::string& dir) {
  bool made = ::mkdir(dir.c_str(), 0755) == 0;
  if (!made && errno == EEXIST && ::rmdir(dir.c_str()) == 0) made = ::mkdir(dir.c_str(), 0755) == 0;
  if (!made) return Error::make("setup_error", "cgroup: mkdir " + dir + ": " + strerror(errno));
  return {};
}

// Limits::cpus as a CFS bandwidth: `cpus` periods of 100 ms per 100 ms.
constexpr std::uint64_t kCpuPeriodUs = 100'000;
std::uint64_t cpu_quota_us(double cpus) {
  return std::max<std::uint64_t>(1000, static_cast<std::uint64_t>(cpus * kCpuPeriodUs));
}

Status no_cpu_controller() {
  return Error::make("setup_error",
                     "cgroup: a CPU limit (cpus) was asked for, but no cpu controller is usable here "
                     "(cgroup v2: delegate cpu; v1: a writable cpu hierarchy)");
}

// A v2 cgroup's limits: memory (no swap) and pids where those controllers are ours; CPU
// bandwidth when asked for (refused without the controller: a limit is never dropped).
Status write_v2_limits(const std::string& dir, const Limits& limits, const CgroupSupport& support) {
  if (limits.cpus) {
    if (!support.v2_cpu) return no_cpu_controller();
    if (auto s = write_setting(dir + "/cpu.max", std::to_string(cpu_quota_us(*limits.cpus)) + " " +
                                                     std::to_string(kCpuPeriodUs));
        !s)
      return s;
  }
  if (support.v2_memory) {
    if (auto s = write_setting(dir + "/memory.max", std::to_string(limits.memory_bytes)); !s)
      return s;
    if (::access((dir + "/memory.swap.max").c_str(), F_OK) == 0)
      if (auto s = write_setting(dir + "/memory.swap.max", "0"); !s) return s;
  }
  if (support.v2_pids)  // +1: the sandbox's init
    if (auto s = write_setting(dir + "/pids.max", std::to_string(limits.pids + 1)); !s) return s;
  return {};
}

// The kernel lets a process clone into a cgroup only if it may write that cgroup's
// cgroup.procs and the one of the common ancestor of its own cgroup and that one.
Status give_procs_file(const std::string& dir, uid_t uid) {
  if (uid == ::geteuid()) return {};  // already its owner's
  const std::string procs = dir + "/cgroup.procs";
  if (::chown(procs.c_str(), uid, static_cast<gid_t>(-1)) != 0)
    return Error::make("setup_error", "cgroup: chown " + procs + ": " + strerror(errno));
  return {};
}

}  // namespace

class WarmCgroupTree {
 public:
  WarmCgroupTree(std::string dir, uid_t uid) : dir_(std::move(dir)), uid_(uid) {}
  ~WarmCgroupTree() { (void)remove_cgroup_dir(dir_); }
  WarmCgroupTree(const WarmCgroupTree&) = delete;
  WarmCgroupTree& operator=(const WarmCgroupTree&) = delete;
  const std::string& dir() const { return dir_; }
  uid_t uid() const { return uid_; }
  std::string next_call_name() { return "call-" + std::to_string(calls_.fetch_add(1)); }

 private:
  std::string dir_;
  uid_t uid_;
  std::atomic<unsigned> calls_{0};
};

SandboxCgroup& SandboxCgroup::operator=(SandboxCgroup&& other) noexcept {
  if (this != &other) {
    (void)remove();
    mode_ = other.mode_;
    dirs_ = std::move(other.dirs_);
    other.dirs_.clear();
    memory_dir_ = std::move(other.memory_dir_);
    pids_dir_ = std::move(other.pids_dir_);
    cpu_dir_ = std::move(other.cpu_dir_);
    freezer_dir_ = std::move(other.freezer_dir_);
    v2_dir_fd_ = std::move(other.v2_dir_fd_);
    tree_ = std::move(other.tree_);
    cpu_base_ = other.cpu_base_;
  }
  return *this;
}

SandboxCgroup::~SandboxCgroup() { (void)remove(); }

Result<SandboxCgroup> SandboxCgroup::create(const Limits& limits) {
  const auto& support = cgroup_support();
  SandboxCgroup cg;
  cg.mode_ = support.mode;
  if (support.mode == CgroupMode::none) return cg;
  std::string name = "airlock-" + std::to_string(::getpid()) + "-" +
                     std::to_string(g_sequence.fetch_add(1));
  auto make = [&](const std::string& base) -> Result<std::string> {
    std::string dir = base + "/" + name;
    if (auto s = make_cgroup_dir(dir); !s) return s.error();
    cg.dirs_.push_back(dir);
    return dir;
  };
  auto set = write_setting;
  const std::string memory = std::to_string(limits.memory_bytes);
  const std::string pids = std::to_string(limits.pids + 1);  // +1: the sandbox's init

  if (support.mode == CgroupMode::v2) {
    auto dir = make(support.v2_base);
    if (!dir) return dir.error();
    if (auto s = cg.adopt_v2_leaf(*dir, limits); !s) return s.error();
    return cg;
  }

  if (!support.v1_memory.empty()) {
    auto dir = make(support.v1_memory);
    if (!dir) return dir.error();
    cg.memory_dir_ = *dir;
    if (auto s = set(*dir + "/memory.limit_in_bytes", memory); !s) return s.error();
    if (support.v1_memsw)  // memory + swap = memory: no swap
      if (auto s = set(*dir + "/memory.memsw.limit_in_bytes", memory); !s) return s.error();
    (void)set(*dir + "/memory.swappiness", "0");
  }
  if (!support.v1_pids.empty()) {
    auto dir = make(support.v1_pids);
    if (!dir) return dir.error();
    cg.pids_dir_ = *dir;
    if (auto s = set(*dir + "/pids.max", pids); !s) return s.error();
  }
  // CPU usage must come from the cgroup: processes killed when the pid namespace ends are
  // reaped by the kernel without being added to the init's rusage.
  if (!support.v1_cpuacct.empty()) {
    auto dir = make(support.v1_cpuacct);
    if (!dir) return dir.error();
    cg.cpu_dir_ = *dir;
  }
  if (limits.freezable && !support.v1_freezer.empty()) {
    auto dir = make(support.v1_freezer);
    if (!dir) return dir.error();
    cg.freezer_dir_ = *dir;
  }
  // The cpu hierarchy only when throttled (one mkdir less per tool call); co-mounted with
  // cpuacct ("cpu,cpuacct"), the directory made above.
  if (limits.cpus) {
    if (support.v1_cpu.empty()) return no_cpu_controller().error();
    std::string dir = support.v1_cpu + "/" + name;
    if (support.v1_cpu != support.v1_cpuacct)
      if (auto made = make(support.v1_cpu); !made) return made.error();
    if (auto s = set(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs)); !s) return s.error();
    if (auto s = set(dir + "/cpu.cfs_quota_us", std::to_string(cpu_quota_us(*limits.cpus))); !s) return s.error();
  }
  return cg;
}

// A v2 leaf made for us: its limits, its counters' files, and the descriptor clone3 takes.
Status SandboxCgroup::adopt_v2_leaf(const std::string& dir, const Limits& limits) {
  const auto& support = cgroup_support();
  if (auto s = write_v2_limits(dir, limits, support); !s) return s;
  memory_dir_ = support.v2_memory ? dir : "";
  pids_dir_ = support.v2_pids ? dir : "";
  cpu_dir_ = dir;
  v2_dir_fd_.reset(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!v2_dir_fd_) return Error::make("setup_error", "cgroup: open " + dir + ": " + strerror(errno));
  return {};
}

Result<SandboxCgroup> SandboxCgroup::create_warm_template(const Limits& limits, uid_t sandbox_uid) {
  const auto& support = cgroup_support();
  if (support.mode != CgroupMode::v2)
    return Error::make("setup_error", "cgroup: a warm template's tree needs cgroup v2");
  SandboxCgroup cg;
  cg.mode_ = CgroupMode::v2;
  const std::string dir = support.v2_base + "/airlock-" + std::to_string(::getpid()) + "-" +
                          std::to_string(g_sequence.fetch_add(1));
  if (auto s = make_cgroup_dir(dir); !s) return s.error();
  cg.tree_ = std::make_shared<WarmCgroupTree>(dir, sandbox_uid);
  std::string enable;
  if (support.v2_memory) enable += " +memory";
  if (support.v2_pids) enable += " +pids";
  if (!enable.empty())
    if (auto s = write_setting(dir + "/cgroup.subtree_control", enable.substr(1)); !s)
      return s.error();
  if (auto s = give_procs_file(dir, sandbox_uid); !s) return s.error();
  const std::string leaf = dir + "/template";
  if (auto s = make_cgroup_dir(leaf); !s) return s.error();
  cg.dirs_.push_back(leaf);
  if (auto s = cg.adopt_v2_leaf(leaf, limits); !s) return s.error();
  return cg;
}

Result<SandboxCgroup> SandboxCgroup::create_warm_call(const Limits& limits,
                                                      std::shared_ptr<WarmCgroupTree> tree) {
  if (!tree) return Error::make("setup_error", "cgroup: a warm call on v2 needs its template's tree");
  SandboxCgroup cg;
  cg.mode_ = CgroupMode::v2;
  const std::string leaf = tree->dir() + "/" + tree->next_call_name();
  if (auto s = make_cgroup_dir(leaf); !s) return s.error();
  cg.tree_ = std::move(tree);
  cg.dirs_.push_back(leaf);
  if (auto s = cg.adopt_v2_leaf(leaf, limits); !s) return s.error();
  if (auto s = give_procs_file(leaf, cg.tree_->uid()); !s) return s.error();
  return cg;
}

std::string SandboxCgroup::warm_tree_dir() const { return tree_ ? tree_->dir() : ""; }

std::string SandboxCgroup::name_in_warm_tree() const {
  if (!tree_ || dirs_.empty()) return "";
  return dirs_.front().substr(tree_->dir().size() + 1);
}

Result<std::vector<UniqueFd>> SandboxCgroup::open_join_fds() const {
  std::vector<UniqueFd> fds;
  if (mode_ != CgroupMode::v1) return fds;
  for (const auto& dir : dirs_) {
    const std::string tasks = dir + "/tasks";
    UniqueFd fd(::open(tasks.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return Error::make("setup_error", "cgroup: open " + tasks + ": " + strerror(errno));
    fds.push_back(std::move(fd));
  }
  return fds;
}

namespace {

std::uint64_t minus(std::uint64_t value, std::uint64_t base) { return value > base ? value - base : 0; }

std::optional<std::uint64_t> raw_cpu_usage_ns(CgroupMode mode, const std::string& cpu_dir) {
  if (cpu_dir.empty()) return std::nullopt;
  if (mode == CgroupMode::v2) {
    auto usec = read_keyed(cpu_dir + "/cpu.stat", "usage_usec");
    if (!usec) return std::nullopt;
    return *usec * 1000;
  }
  return read_u64(cpu_dir + "/cpuacct.usage");
}

}  // namespace

std::optional<std::uint64_t> SandboxCgroup::cpu_usage_ns() const {
  auto used = raw_cpu_usage_ns(mode_, cpu_dir_);
  if (!used) return std::nullopt;
  return minus(*used, cpu_base_.total);
}

namespace {

// v1 and v2 name them alike: the peak, and in pids.events "max" how many fork()/clone()
// calls the limit refused (EAGAIN).
void read_pids_counters(const std::string& dir, CgroupStats& st) {
  st.pids_peak = read_u64(dir + "/pids.peak");
  st.pids_refused = read_keyed(dir + "/pids.events", "max");
}

void read_cpu_split(CgroupMode mode, const std::string& dir, CgroupStats& st) {
  if (dir.empty()) return;
  if (mode == CgroupMode::v2) {
    if (auto u = read_keyed(dir + "/cpu.stat", "user_usec")) st.cpu_user_ns = *u * 1000;
    if (auto s = read_keyed(dir + "/cpu.stat", "system_usec")) st.cpu_sys_ns = *s * 1000;
  } else {
    st.cpu_user_ns = read_u64(dir + "/cpuacct.usage_user");
    st.cpu_sys_ns = read_u64(dir + "/cpuacct.usage_sys");
  }
}

}  // namespace

CgroupStats SandboxCgroup::read_stats() const {
  CgroupStats st;
  if (mode_ == CgroupMode::v2) {
    if (!memory_dir_.empty()) {
      st.oom_kills = read_keyed(memory_dir_ + "/memory.events", "oom_kill").value_or(0);
      st.memory_peak_bytes = read_u64(memory_dir_ + "/memory.peak");
    }
    read_cpu_split(mode_, cpu_dir_, st);
    if (!pids_dir_.empty()) read_pids_counters(pids_dir_, st);
  } else if (mode_ == CgroupMode::v1) {
    if (!memory_dir_.empty()) {
      st.oom_kills = read_keyed(memory_dir_ + "/memory.oom_control", "oom_kill").value_or(0);
      st.memory_peak_bytes = read_u64(memory_dir_ + "/memory.max_usage_in_bytes");
    }
    read_cpu_split(mode_, cpu_dir_, st);
    if (!pids_dir_.empty()) read_pids_counters(pids_dir_, st);
  }
  // The sandbox's init is one of the counted processes; report the program's own.
  if (st.pids_peak && *st.pids_peak > 0) *st.pids_peak -= 1;
  if (st.cpu_user_ns) st.cpu_user_ns = minus(*st.cpu_user_ns, cpu_base_.user);
  if (st.cpu_sys_ns) st.cpu_sys_ns = minus(*st.cpu_sys_ns, cpu_base_.sys);
  return st;
}

CgroupStats SandboxCgroup::read_cpu() const {
  CgroupStats st;
  if (mode_ == CgroupMode::none) return st;
  read_cpu_split(mode_, cpu_dir_, st);
  if (st.cpu_user_ns) st.cpu_user_ns = minus(*st.cpu_user_ns, cpu_base_.user);
  if (st.cpu_sys_ns) st.cpu_sys_ns = minus(*st.cpu_sys_ns, cpu_base_.sys);
  return st;
}

void SandboxCgroup::count_from_now() {
  CgroupStats now;
  read_cpu_split(mode_, cpu_dir_, now);
  cpu_base_.total = raw_cpu_usage_ns(mode_, cpu_dir_).value_or(0);
  cpu_base_.user = now.cpu_user_ns.value_or(0);
  cpu_base_.sys = now.cpu_sys_ns.value_or(0);
  // v1: writing 0 resets the peak to the current usage. (v2's memory.peak resets only for
  // the descriptor that wrote it; warm calls run on v1 only, see start_warm_call.)
  if (mode_ == CgroupMode::v1 && !memory_dir_.empty())
    (void)write_file(memory_dir_ + "/memory.max_usage_in_bytes", "0");
}

void SandboxCgroup::kill_all() const {
  if (mode_ == CgroupMode::v2 && !dirs_.empty()) (void)write_file(dirs_.front() + "/cgroup.kill", "1");
  // A frozen v1 process takes no signal until thawed: a session paused when it is ended.
  if (!freezer_dir_.empty()) (void)write_file(freezer_dir_ + "/freezer.state", "THAWED");
}

Status SandboxCgroup::freeze(bool frozen) const {
  std::string file, value;
  if (mode_ == CgroupMode::v2 && !dirs_.empty()) {
    file = dirs_.front() + "/cgroup.freeze";
    value = frozen ? "1" : "0";
  } else if (!freezer_dir_.empty()) {
    file = freezer_dir_ + "/freezer.state";
    value = frozen ? "FROZEN" : "THAWED";
  } else {
    return Error::make("freezer_unavailable", "no cgroup freezer is usable here (cgroup v2, or the v1 freezer hierarchy)");
  }
  if (auto s = write_setting(file, value); !s) return s;
  // v1 passes through FREEZING, v2 reports "frozen 1" in cgroup.events once every task stopped.
  for (int i = 0; i < 500; ++i) {
    if (mode_ == CgroupMode::v2) {
      const std::string events = read_file(dirs_.front() + "/cgroup.events");
      if (events.find(frozen ? "frozen 1" : "frozen 0") != std::string::npos) return {};
    } else if (read_file(file).rfind(value, 0) == 0) {
      return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return Error::make("setup_error", "cgroup: " + file + " did not reach " + value + " within a second");
}

std::vector<std::string> SandboxCgroup::procs_files() const {
  std::vector<std::string> out;
  for (const auto& dir : dirs_) out.push_back(dir + "/cgroup.procs");
  return out;
}

void SandboxCgroup::kill_listed() const {
  for (const auto& dir : dirs_) {
    std::ifstream procs(dir + "/cgroup.procs");
    for (long pid = 0; procs >> pid;)
      if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
}

Status SandboxCgroup::remove() {
  v2_dir_fd_.reset();
  Status status;
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    int err = 0;
    if (!remove_cgroup_dir(*it, &err))
      status = Error::make("cleanup", "cgroup: rmdir " + *it + ": " + strerror(err));
  }
  dirs_.clear();
  tree_.reset();  // the last of a warm tree's cgroups removes the tree
  return status;
}

namespace {

// The child cgroups of `dir` (v2: a warm template's leaves), emptied by the cgroup.kill of
// their parent, removed.
void remove_child_cgroup_dirs(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> children;
  while (auto* e = ::readdir(d))
    if (e->d_type == DT_DIR && e->d_name[0] != '.') children.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  for (const auto& child : children)
    for (int i = 0; i < 200 && ::rmdir(child.c_str()) != 0 && errno == EBUSY; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace

int remove_stale_cgroups() {
  const auto& s = cgroup_support();
  std::vector<std::string> bases = {s.v2_base, s.v1_memory, s.v1_pids, s.v1_cpuacct, s.v1_cpu, s.v1_freezer};
  int removed = 0;
  for (const auto& base : bases) {
    if (base.empty()) continue;
    DIR* d = ::opendir(base.c_str());
    if (!d) continue;
    while (auto* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("airlock-", 0) != 0) continue;
      std::string rest = name.substr(8);
      if (rest.rfind("supervisor-", 0) == 0) continue;
      pid_t owner = static_cast<pid_t>(std::atoi(rest.c_str()));
      if (owner <= 0 || ::kill(owner, 0) == 0 || errno != ESRCH) continue;
      std::string dir = base + "/" + name;
      // Normally empty (its sandboxes died with their supervisor); if not, end what is left.
      if (s.mode == CgroupMode::v2) {
        (void)write_file(dir + "/cgroup.kill", "1");
      } else {
        std::istringstream procs(read_file(dir + "/cgroup.procs"));
        pid_t pid = 0;
        while (procs >> pid) ::kill(pid, SIGKILL);
      }
      remove_child_cgroup_dirs(dir);  // a warm template's tree: its leaves first
      for (int i = 0; i < 200 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (::access(dir.c_str(), F_OK) != 0) ++removed;
    }
    ::closedir(d);
  }
  return removed;
}

}  // namespace airlock::sandbox
