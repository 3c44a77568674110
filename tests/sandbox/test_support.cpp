#include "test_support.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "sandbox/cgroup.hpp"

namespace airlock::sandbox::test {
namespace fs = std::filesystem;

Spec python(const std::string& code, const std::vector<std::string>& args) {
  Spec spec;
  spec.argv = {"python3", "-c", code};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.limits.wall_time = std::chrono::seconds(60);
  return spec;
}

Spec helper(const std::string& name, const std::vector<std::string>& args) {
  Spec spec;
  spec.argv = {"/helpers/" + name};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.binds.push_back({AIRLOCK_TEST_HELPERS_DIR, "/helpers", false});
  spec.limits.wall_time = std::chrono::seconds(60);
  return spec;
}

Outcome run_with(Spec spec) { return run(spec); }

bool host_kernel_runs_abi(const std::string& abi) {
  std::string path = std::string(AIRLOCK_TEST_HELPERS_DIR) + "/foreign_abi";
  pid_t pid = ::fork();
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    ::execl(path.c_str(), path.c_str(), abi.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return true;  // unknown: try the attack
  return !WIFSIGNALED(status);
}

std::string describe(const Outcome& o) {
  auto j = to_json(o);
  for (const char* stream : {"stdout", "stderr"}) {
    std::string s = j[stream].get<std::string>();
    if (s.size() > 2000) j[stream] = s.substr(0, 2000) + "...";
  }
  return "\n" + j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool no_escape(const Outcome& o) { return o.stdout_data.find("ESCAPED") == std::string::npos; }

std::string unique() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::string read_line(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

std::string setuid_helper() {
  std::string path = AIRLOCK_TEST_SETUID_HELPER;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !(st.st_mode & S_ISUID) || st.st_uid != 0) return "";
  return path;
}

int host_processes_with(const std::string& marker) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // read(2), not a stream: a process that exits meanwhile fails the read (ESRCH), which
    // libstdc++'s filebuf turns into an exception.
    UniqueFd fd(::open((entry.path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    std::string cmdline;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;)
      cmdline.append(buffer, static_cast<std::size_t>(n));
    if (cmdline.find(marker) != std::string::npos) ++count;
  }
  return count;
}

std::vector<SecretHolder> files_holding(const std::string& root, const std::string& secret) {
  std::vector<SecretHolder> holders;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::ifstream in(it->path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find(secret) == std::string::npos) continue;
    struct stat file {}, dir {};
    const bool file_private = ::stat(it->path().c_str(), &file) == 0 && (file.st_mode & 077) == 0;
    const bool dir_private = ::stat(it->path().parent_path().c_str(), &dir) == 0 && (dir.st_mode & 077) == 0;
    holders.push_back({it->path().string(), file_private || dir_private});
  }
  return holders;
}

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "airlock-test-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  ::chmod(path_.c_str(), 0755);  // the sandbox user may need to traverse it
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void TempDir::write(const std::string& relative, const std::string& content) const {
  fs::path p = fs::path(path_) / relative;
  fs::create_directories(p.parent_path());
  std::ofstream(p) << content;
  ::chmod(p.c_str(), 0644);
}

std::string TempDir::read(const std::string& relative) const {
  std::ifstream in(fs::path(path_) / relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

HostProcess::HostProcess(const std::vector<std::string>& argv) {
  pid_ = ::fork();
  if (pid_ == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
}

HostProcess::~HostProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool HostProcess::alive() const {
  int status = 0;
  return ::waitpid(pid_, &status, WNOHANG) == 0;
}

HostListener::HostListener() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 16) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("host listener");
  port_ = ntohs(addr.sin_port);
}

HostListener::~HostListener() { ::close(fd_); }

bool HostListener::had_connection() const {
  int c = ::accept(fd_, nullptr, nullptr);
  if (c >= 0) ::close(c);
  return c >= 0;
}

HostAbstractSocket::HostAbstractSocket() : name_("airlock-test-" + unique()) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name_.data(), name_.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name_.size());
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 16) != 0)
    throw std::runtime_error("host abstract socket");
}

HostAbstractSocket::~HostAbstractSocket() { ::close(fd_); }

bool HostAbstractSocket::had_connection() const {
  int c = ::accept(fd_, nullptr, nullptr);
  if (c >= 0) ::close(c);
  return c >= 0;
}

std::set<std::string> cgroups_made_by(pid_t owner) {
  const std::string prefix = "airlock-" + std::to_string(owner) + "-";
  std::set<std::string> found;
  const auto& cg = cgroup_support();
  for (const std::string& base : {cg.v2_base, cg.v1_memory, cg.v1_pids, cg.v1_cpuacct}) {
    if (base.empty()) continue;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(base, ec))
      if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0)
        found.insert(e.path().string());
  }
  return found;
}

HostSnapshot snapshot_host() {
  HostSnapshot snap;
  const auto& cg = cgroup_support();
  const std::string own_prefix = "airlock-" + std::to_string(::getpid()) + "-";
  const std::string own_supervisor = "airlock-supervisor-" + std::to_string(::getpid());
  for (const std::string& base : {cg.v2_base, cg.v1_memory, cg.v1_pids, cg.v1_cpuacct}) {
    if (base.empty()) continue;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      // Only this process's cgroups: other tests (and other airlocks) run beside this one.
      const std::string name = it->path().filename().string();
      if (it->is_directory() && (name.rfind(own_prefix, 0) == 0 || name == own_supervisor))
        snap.cgroups.insert(it->path().string());
    }
  }
  {
    std::ifstream in("/proc/self/mountinfo");
    std::stringstream ss;
    ss << in.rdbuf();
    snap.mountinfo = ss.str();
  }
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
    snap.temp_entries.insert(e.path().filename());
  for (const auto& e : fs::directory_iterator("/proc/self/fd"))
    snap.open_fds.insert(e.path().filename());
  const pid_t self = ::getpid();
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == self) snap.children.insert(std::stoi(name));
  }
  return snap;
}

}  // namespace airlock::sandbox::test
