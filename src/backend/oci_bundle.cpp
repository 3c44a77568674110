#include "backend/oci_bundle.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "sandbox/plan.hpp"

namespace airlock::backend {
namespace {

using nlohmann::json;

json bind_mount(const std::string& source, const std::string& dest, bool writable) {
  json options = {"rbind", "nosuid", "nodev", writable ? "rw" : "ro"};
  return {{"destination", dest}, {"type", "bind"}, {"source", source}, {"options", options}};
}

json tmpfs_mount(const std::string& dest, std::uint64_t bytes, const std::string& mode) {
  return {{"destination", dest},
          {"type", "tmpfs"},
          {"source", "tmpfs"},
          {"options", {"nosuid", "nodev", "size=" + std::to_string(bytes), "mode=" + mode}}};
}

std::string read_link(const std::string& path) {
  std::array<char, 4096> target{};
  ssize_t n = ::readlink(path.c_str(), target.data(), target.size() - 1);
  return n > 0 ? std::string(target.data(), static_cast<std::size_t>(n)) : std::string();
}

bool is_symlink(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// The mounts, in order: /proc, the system roots, /etc's host files, the work dir and /tmp,
// then the spec's binds (each on top of what came before).
json mounts(const sandbox::Spec& spec) {
  json out = json::array();
  out.push_back({{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}});
  for (const auto& root : sandbox::system_read_only_roots())
    if (!is_symlink(root)) out.push_back(bind_mount(root, root, false));
  for (const auto& entry : sandbox::system_etc_entries())
    out.push_back(bind_mount(entry.path, entry.path, false));
  // gVisor's tmpfs takes size=: each is capped at the disk limit (docs/gvisor.md).
  out.push_back(tmpfs_mount(spec.workdir, spec.limits.disk_bytes, "0777"));
  if (spec.workdir != "/tmp") out.push_back(tmpfs_mount("/tmp", spec.limits.disk_bytes, "1777"));
  for (const auto& b : spec.binds)
    out.push_back(bind_mount(b.source, b.dest.empty() ? b.source : b.dest, b.writable));
  return out;
}

json environment(const sandbox::Spec& spec) {
  std::map<std::string, std::string> env = {
      {"PATH", sandbox::kDefaultPath}, {"HOME", spec.workdir}, {"LANG", "C.UTF-8"}};
  for (const auto& [name, value] : spec.env) env[name] = value;
  json out = json::array();
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

json process(const sandbox::Spec& spec) {
  const json no_caps = json::array();
  return {{"terminal", false},
          {"user", {{"uid", sandbox::kSandboxUid}, {"gid", sandbox::kSandboxGid}}},
          {"args", spec.argv},
          {"env", environment(spec)},
          {"cwd", spec.workdir},
          {"capabilities",
           {{"bounding", no_caps}, {"effective", no_caps}, {"inheritable", no_caps},
            {"permitted", no_caps}, {"ambient", no_caps}}},
          {"noNewPrivileges", true},
          {"rlimits",
           {{{"type", "RLIMIT_NOFILE"},
             {"hard", spec.limits.open_files},
             {"soft", spec.limits.open_files}}}}};
}

Status write_text(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out || ::chmod(path.c_str(), mode) != 0)
    return Error::make("gvisor", "bundle: cannot write " + path);
  return {};
}

Status make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    return Error::make("gvisor", "bundle: mkdir " + path + ": " + std::strerror(errno));
  return {};
}

// The rootfs: the host's merged-/usr symlinks, and /etc with its generated files and the
// mount points of the host ones (a file bind needs a file to land on).
Status write_rootfs(const std::string& rootfs, const sandbox::Spec& spec) {
  if (auto s = make_dir(rootfs); !s) return s;
  for (const auto& root : sandbox::system_read_only_roots()) {
    if (!is_symlink(root)) continue;
    if (::symlink(read_link(root).c_str(), (rootfs + root).c_str()) != 0)
      return Error::make("gvisor", "bundle: symlink " + rootfs + root + ": " + std::strerror(errno));
  }
  const std::string etc = rootfs + "/etc";
  for (const char* dir : {"/etc", "/etc/ssl"})
    if (auto s = make_dir(rootfs + dir); !s) return s;
  const std::pair<const char*, std::string> files[] = {
      {"/passwd", sandbox::passwd_text(spec.workdir)},
      {"/group", sandbox::group_text()},
      {"/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t" + spec.hostname + "\n"},
      {"/hostname", spec.hostname + "\n"}};
  for (const auto& [name, text] : files)
    if (auto s = write_text(etc + name, text); !s) return s;
  for (const auto& entry : sandbox::system_etc_entries()) {
    const std::string at = rootfs + entry.path;
    if (entry.is_file) {
      if (auto s = write_text(at, ""); !s) return s;
    } else if (auto s = make_dir(at); !s) {
      return s;
    }
  }
  return {};
}

}  // namespace

nlohmann::json oci_process(const sandbox::Spec& spec) { return process(spec); }

nlohmann::json oci_config(const sandbox::Spec& spec) {
  return {{"ociVersion", "1.0.0"},
          {"process", process(spec)},
          {"root", {{"path", "rootfs"}, {"readonly", true}}},
          {"hostname", spec.hostname},
          {"mounts", mounts(spec)},
          {"linux",
           {{"namespaces", {{{"type", "pid"}}, {{"type", "ipc"}}, {{"type", "uts"}},
                            {{"type", "mount"}}}}}}};
}

Status write_oci_bundle(const std::string& dir, const sandbox::Spec& spec) {
  if (auto s = write_rootfs(dir + "/rootfs", spec); !s) return s;
  // 0600: the environment in it carries the run's credentials.
  return write_text(dir + "/config.json", oci_config(spec).dump(2), 0600);
}

}  // namespace airlock::backend
