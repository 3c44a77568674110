#include "backend/runsc_platform.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <mutex>

#include "backend/runsc_command.hpp"

namespace airlock::backend {
namespace {

constexpr auto kProbeTimeout = std::chrono::seconds(3);

bool kvm_usable() {
  int fd = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// Runs /bin/true on `platform` in a state root of its own, removed afterwards. "" when it
// worked, else what happened.
std::string probe(const std::string& runsc, const std::string& platform) {
  char dir_template[] = "/tmp/airlock-runsc-probe-XXXXXX";
  if (!::mkdtemp(dir_template)) return "cannot make a state directory in /tmp";
  const std::string root = dir_template;
  RunscInvocation invocation{runsc, platform, ::geteuid() != 0};
  auto argv = invocation.global_args(root);
  argv.insert(argv.end(), {"--network=none", "do", "/bin/true"});
  CommandResult r = run_bounded(argv, kProbeTimeout);
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  if (!r.started) return "could not start " + runsc;
  if (r.timed_out)
    return "hung, killed after " + std::to_string(kProbeTimeout.count()) + " s";
  if (r.exit_code == 0) return "";
  std::string out = r.output.substr(0, 300);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return "failed (exit " + std::to_string(r.exit_code) + ")" + (out.empty() ? "" : ": " + out);
}

Result<RunscPlatform> detect_uncached(const std::string& runsc, const std::string& wanted) {
  auto path = find_runsc(runsc);
  if (!path) return path.error();
  RunscPlatform found{*path, "", {}};
  std::vector<std::string> candidates;
  if (!wanted.empty()) candidates = {wanted};
  else if (kvm_usable()) candidates = {"kvm", "ptrace"};
  else {
    candidates = {"ptrace"};
    found.tried.push_back("kvm: /dev/kvm is not usable here");
  }
  for (const auto& platform : candidates) {
    std::string failure = probe(*path, platform);
    if (failure.empty()) {
      found.platform = platform;
      found.tried.push_back(platform + ": works");
      return found;
    }
    found.tried.push_back(platform + ": " + failure);
  }
  std::string tried;
  for (const auto& t : found.tried) tried += (tried.empty() ? "" : "; ") + t;
  return Error::make("gvisor", "no gVisor platform works here (" + tried +
                                   "): set tiers.<risk>.gvisor.platform to one that does, or "
                                   "tiers.<risk>.backend to another backend");
}

// The cache across processes (every daemon start would otherwise pay a kvm probe's timeout):
// one line per probe that found a platform, valid for this boot and this runsc binary. In
// /tmp, read only when it is a regular file of ours (O_NOFOLLOW, owner check).
std::string cache_path() { return "/tmp/airlock-runsc-platform-" + std::to_string(::geteuid()); }

std::string cache_key(const std::string& runsc, const std::string& wanted) {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  boot >> boot_id;
  struct stat st {};
  if (boot_id.empty() || ::stat(runsc.c_str(), &st) != 0) return "";
  return boot_id + " " + runsc + " " + std::to_string(st.st_mtime) + " " +
         std::to_string(st.st_size) + " " + (wanted.empty() ? "-" : wanted);
}

std::string cached_platform(const std::string& key) {
  int fd = ::open(cache_path().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) {
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) text.assign(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ' ')
      return line.substr(key.size() + 1);
  return "";
}

void remember_platform(const std::string& key, const std::string& platform) {
  std::string tmp = cache_path() + ".XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) return;
  std::string line = key + " " + platform + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), cache_path().c_str()) != 0) ::unlink(tmp.c_str());
}

Result<RunscPlatform> detect_with_cache(const std::string& runsc, const std::string& wanted) {
  auto path = find_runsc(runsc);
  if (!path) return path.error();
  const std::string key = cache_key(*path, wanted);
  if (!key.empty()) {
    std::string platform = cached_platform(key);
    if (!platform.empty())
      return RunscPlatform{*path, platform, {platform + ": works (probed earlier this boot)"}};
  }
  auto found = detect_uncached(*path, wanted);
  if (found && !key.empty()) remember_platform(key, found->platform);
  return found;
}

}  // namespace

Result<std::string> find_runsc(const std::string& runsc) {
  if (runsc.find('/') != std::string::npos) {
    if (::access(runsc.c_str(), X_OK) == 0) return runsc;
    return Error::make("gvisor", "runsc: " + runsc + " is not an executable file: install the "
                                 "runsc package, or set tiers.<risk>.gvisor.runsc");
  }
  const char* path = ::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  dirs += ":/usr/sbin:/sbin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + runsc;
    if (candidate[0] == '/' && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return Error::make("gvisor", "runsc: " + runsc + " not found in PATH: install the runsc "
                               "package, or set tiers.<risk>.backend to another backend");
}

Result<RunscPlatform> detect_runsc_platform(const std::string& runsc, const std::string& wanted) {
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, Result<RunscPlatform>> cache;
  std::lock_guard lock(mu);
  auto key = std::make_pair(runsc, wanted);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, detect_with_cache(runsc, wanted)).first;
  return it->second;
}

}  // namespace airlock::backend
