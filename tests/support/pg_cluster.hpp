// A throwaway PostgreSQL 15 cluster for tests and benchmarks: initdb in a fresh temporary
// directory, a postmaster on a free loopback port (sockets in that directory, SCRAM passwords
// over TCP, trust over its socket), everything stopped and removed by the destructor. Never
// the system cluster, never port 5432. PostgreSQL refuses to run as root: as root, initdb and
// postgres run as the `airlock-test` system user (created when missing, as by
// tests/run-unprivileged.sh), which owns the directory (under TMPDIR, else /tmp: its parents
// must be searchable by that user).
//
// The postmaster is a child of the process that started the cluster and dies with it
// (PR_SET_PDEATHSIG): a test that crashes leaves no server behind, only the directory. Start
// it from a thread that outlives the cluster (the main thread).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace airlock::test {

class PgCluster {
 public:
  // Debian's binaries; not /usr/local/bin or PATH, which a fresh machine does not populate.
  static constexpr const char* kBinDir = "/usr/lib/postgresql/15/bin";

  struct Options {
    std::string superuser = "airlock_super";
    std::string superuser_password = "super-" + std::to_string(::getpid());
    // postgresql.conf settings passed on the command line (-c name=value).
    std::map<std::string, std::string> settings = {{"fsync", "off"}, {"synchronous_commit", "off"}};
  };

  // Errors: "setup_error" with initdb's or postgres' own words (and the log's tail).
  static Result<std::unique_ptr<PgCluster>> start(Options options);
  static Result<std::unique_ptr<PgCluster>> start() { return start(Options{}); }
  ~PgCluster();  // immediate shutdown (SIGQUIT, as pg_ctl stop -m immediate), then rm -r
  PgCluster(const PgCluster&) = delete;
  PgCluster& operator=(const PgCluster&) = delete;

  std::string host() const { return "127.0.0.1"; }
  std::uint16_t port() const { return port_; }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path log_file() const { return dir_ / "postgres.log"; }
  std::string log() const;  // the server's log so far

  // Immediate shutdown of the server (its data stays), and a start on the same port: what
  // clients do while their database is down and after it is back.
  void stop_server();
  Status restart_server();

  // postgresql://user:password@127.0.0.1:port/database (percent-encoded).
  std::string url(const std::string& user, const std::string& password,
                  const std::string& database) const;
  // The superuser over the cluster's own socket (trust): for set-up and inspection.
  std::string superuser_conninfo(const std::string& database = "postgres") const;

  // Runs `sql` (several statements are one implicit transaction) as the superuser.
  Status exec(const std::string& sql, const std::string& database = "postgres") const;
  // The first column of each row of `sql` as the superuser.
  Result<std::vector<std::string>> column(const std::string& sql,
                                          const std::string& database = "postgres") const;

 private:
  PgCluster(std::filesystem::path dir, Options options)
      : dir_(std::move(dir)), options_(std::move(options)) {}
  Status init();
  Status launch(std::uint16_t fixed_port = 0);
  void stop();

  std::filesystem::path dir_;
  Options options_;
  std::uint16_t port_ = 0;
  pid_t postmaster_ = -1;
  uid_t uid_ = 0;  // whom initdb and postgres run as (0: ourselves, not root)
  gid_t gid_ = 0;
  bool drop_privileges_ = false;
};

}  // namespace airlock::test
