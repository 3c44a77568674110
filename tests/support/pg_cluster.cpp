#include "pg_cluster.hpp"

#include "common/percent_encoding.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace airlock::test {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kUser = "airlock-test";  // as tests/run-unprivileged.sh
constexpr auto kReadyTimeout = 30s;
constexpr auto kStopTimeout = 10s;

Error setup(std::string message) {
  return Error::make("setup_error", std::move(message));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string tail(const std::string& text, std::size_t n = 2000) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

struct SpawnOptions {
  bool drop = false;  // become uid/gid first
  uid_t uid = 0;
  gid_t gid = 0;
  fs::path cwd = "/";
  fs::path output;               // stdout and stderr, appended
  bool die_with_parent = false;  // SIGKILL when the starting thread ends
};

// fork + exec, with only async-signal-safe calls in the child (the caller may have threads).
Result<pid_t> spawn(const std::vector<std::string>& args, const SpawnOptions& o) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string output = o.output.string(), cwd = o.cwd.string();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return setup("fork: " + std::string(strerror(errno)));
  if (pid > 0) return pid;
  int null = ::open("/dev/null", O_RDONLY);
  int out = ::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (null < 0 || out < 0 || ::dup2(null, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0)
    ::_exit(126);
  if (o.drop && (::setgroups(0, nullptr) != 0 || ::setgid(o.gid) != 0 || ::setuid(o.uid) != 0))
    ::_exit(126);
  // After setuid, which clears it; and the parent may already be gone.
  if (o.die_with_parent && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent))
    ::_exit(126);
  if (::chdir(cwd.c_str()) != 0) ::_exit(126);
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

Status run_tool(const std::vector<std::string>& args, const SpawnOptions& o) {
  auto pid = spawn(args, o);
  if (!pid) return pid.error();
  const int status = wait_for(*pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::success();
  return setup(args[0] + " failed (status " + std::to_string(status) +
               "): " + tail(read_file(o.output)));
}

Status ensure_user() {
  if (::getpwnam(kUser) != nullptr) return Status::success();
  SpawnOptions o;
  o.output = "/dev/null";
  return run_tool({"/usr/sbin/useradd", "--system", "--no-create-home", "--home-dir",
                   "/nonexistent", "--shell", "/usr/sbin/nologin", kUser},
                  o);
}

// A port the kernel just handed out on loopback, so probably free (the caller retries).
Result<std::uint16_t> free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return setup("socket: " + std::string(strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) return setup("bind 127.0.0.1:0: " + std::string(strerror(errno)));
  // Never the system cluster's port (not in the ephemeral range, but a host may set it so).
  if (ntohs(addr.sin_port) == 5432) return setup("the kernel handed out port 5432");
  return ntohs(addr.sin_port);
}

std::string conninfo_value(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

}  // namespace

Result<std::unique_ptr<PgCluster>> PgCluster::start(Options options) {
  std::string pattern = (fs::temp_directory_path() / "airlock-pg-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return setup("mkdtemp: " + std::string(strerror(errno)));
  // From here the destructor removes the directory, whatever fails.
  std::unique_ptr<PgCluster> cluster(new PgCluster(pattern, std::move(options)));
  if (Status s = cluster->init(); !s) return s.error();
  if (Status s = cluster->launch(); !s) return s.error();
  return cluster;
}

PgCluster::~PgCluster() {
  stop();
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

Status PgCluster::init() {
  if (::geteuid() == 0) {
    if (Status s = ensure_user(); !s) return s;
    const passwd* pw = ::getpwnam(kUser);
    if (pw == nullptr) return setup(std::string("no user ") + kUser);
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    drop_privileges_ = true;
    if (::chown(dir_.c_str(), uid_, gid_) != 0)
      return setup("chown " + dir_.string() + ": " + strerror(errno));
  }
  const fs::path pwfile = dir_ / "pwfile";
  {
    std::ofstream out(pwfile);
    out << options_.superuser_password << "\n";
  }
  if (drop_privileges_ && ::chown(pwfile.c_str(), uid_, gid_) != 0)
    return setup("chown pwfile: " + std::string(strerror(errno)));
  SpawnOptions o{drop_privileges_, uid_, gid_, dir_, dir_ / "initdb.log", false};
  Status made = run_tool(
      {std::string(kBinDir) + "/initdb", "-D", (dir_ / "data").string(), "-U", options_.superuser,
       "--pwfile=" + pwfile.string(), "--auth-local=trust", "--auth-host=scram-sha-256", "-E",
       "UTF8", "--no-locale", "--no-sync", "--no-instructions"},
      o);
  std::error_code ignored;
  fs::remove(pwfile, ignored);
  return made;
}

Status PgCluster::launch(std::uint16_t fixed_port) {
  std::string why;
  for (int attempt = 0; attempt < (fixed_port != 0 ? 1 : 3); ++attempt) {
    auto port = fixed_port != 0 ? Result<std::uint16_t>(fixed_port) : free_port();
    if (!port) return port.error();
    port_ = *port;
    std::vector<std::string> args = {std::string(kBinDir) + "/postgres",
                                     "-D",
                                     (dir_ / "data").string(),
                                     "-p",
                                     std::to_string(port_),
                                     "-k",
                                     dir_.string(),
                                     "-c",
                                     "listen_addresses=127.0.0.1"};
    for (const auto& [name, value] : options_.settings) {
      args.push_back("-c");
      args.push_back(name + "=" + value);
    }
    SpawnOptions o{drop_privileges_, uid_, gid_, dir_, log_file(), true};
    auto pid = spawn(args, o);
    if (!pid) return pid.error();
    postmaster_ = *pid;
    const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
    const std::string info = superuser_conninfo();
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(postmaster_, &status, WNOHANG) == postmaster_) {
        postmaster_ = -1;
        why = tail(log());
        break;  // another process took the port, or a real failure: try again, then report
      }
      if (PQping(info.c_str()) == PQPING_OK) return Status::success();
      std::this_thread::sleep_for(20ms);
    }
    if (postmaster_ > 0)
      return setup("postgres did not accept connections within 30 s: " + tail(log()));
  }
  return setup("postgres exited: " + why);
}

void PgCluster::stop() {
  if (postmaster_ <= 0) return;
  ::kill(postmaster_, SIGQUIT);  // immediate shutdown: what pg_ctl stop -m immediate sends
  const auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
  int status = 0;
  while (::waitpid(postmaster_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(postmaster_, SIGKILL);
      wait_for(postmaster_);
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  postmaster_ = -1;
}

void PgCluster::stop_server() { stop(); }

Status PgCluster::restart_server() {
  stop();
  return launch(port_);
}

std::string PgCluster::log() const {
  return read_file(log_file());
}

std::string PgCluster::url(const std::string& user, const std::string& password,
                           const std::string& database) const {
  return "postgresql://" + percent_encode(user) + ":" + percent_encode(password) + "@" + host() +
         ":" + std::to_string(port_) + "/" + percent_encode(database);
}

std::string PgCluster::superuser_conninfo(const std::string& database) const {
  return "host=" + conninfo_value(dir_.string()) + " port=" + std::to_string(port_) +
         " user=" + conninfo_value(options_.superuser) + " dbname=" + conninfo_value(database);
}

Result<std::vector<std::string>> PgCluster::column(const std::string& sql,
                                                   const std::string& database) const {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(
      PQconnectdb(superuser_conninfo(database).c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK)
    return setup(std::string("connect: ") + PQerrorMessage(conn.get()));
  std::unique_ptr<PGresult, decltype(&PQclear)> res(PQexec(conn.get(), sql.c_str()), &PQclear);
  auto status = PQresultStatus(res.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
    return setup(sql + ": " + PQresultErrorMessage(res.get()));
  std::vector<std::string> out;
  for (int row = 0; row < PQntuples(res.get()); ++row)
    out.emplace_back(PQgetvalue(res.get(), row, 0));
  return out;
}

Status PgCluster::exec(const std::string& sql, const std::string& database) const {
  auto rows = column(sql, database);
  if (!rows) return rows.error();
  return Status::success();
}

}  // namespace airlock::test
