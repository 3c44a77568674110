// Helpers for the sandbox's integration tests: specs for Python and the C helpers, host-side
// victims (processes, listeners), and snapshots of what a run could leave behind.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "sandbox/sandbox.hpp"

namespace airlock::sandbox::test {

// A spec that runs `python3 -c code args...` with a generous wall clock.
Spec python(const std::string& code, const std::vector<std::string>& args = {});
// A spec that runs one of the compiled helpers (tests/sandbox/helpers), bound at /helpers.
Spec helper(const std::string& name, const std::vector<std::string>& args = {});
Outcome run_with(Spec spec);
// Whether this kernel itself runs a syscall through `abi` ("x32", "i386"): the foreign_abi
// helper run on the host, outside any sandbox. A kernel without IA32 emulation answers int 0x80
// with SIGSEGV before seccomp sees it, so there is no attack to contain.
bool host_kernel_runs_abi(const std::string& abi);

std::string describe(const Outcome& o);  // the Outcome as JSON, for failure messages
bool no_escape(const Outcome& o);        // stdout carries no "ESCAPED"
std::string unique();                     // a fresh token
std::string read_line(int fd);

// The setuid-root copy of print_ids made by the test set-up, or "" when there is none.
std::string setuid_helper();

// Processes on the host whose command line contains `marker`.
int host_processes_with(const std::string& marker);

// The files beneath `root` that hold `secret`, each with whether only its owner can read it:
// the file itself allows nobody else (0600), or its directory does not (runsc's own state
// file, which holds the spec with its environment, is 0640 in a 0700 directory).
struct SecretHolder {
  std::string path;
  bool owner_only = false;
};
std::vector<SecretHolder> files_holding(const std::string& root, const std::string& secret);

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  void write(const std::string& relative, const std::string& content) const;
  std::string read(const std::string& relative) const;

 private:
  std::string path_;
};

// A process of ours on the host, for the sandbox to try to reach.
class HostProcess {
 public:
  explicit HostProcess(const std::vector<std::string>& argv);
  ~HostProcess();
  pid_t pid() const { return pid_; }
  bool alive() const;

 private:
  pid_t pid_ = -1;
};

// A TCP listener on the host's 127.0.0.1 and a host abstract Unix socket: both must see no
// connection from the sandbox.
class HostListener {
 public:
  HostListener();
  ~HostListener();
  int port() const { return port_; }
  bool had_connection() const;

 private:
  int fd_ = -1;
  int port_ = 0;
};

class HostAbstractSocket {
 public:
  HostAbstractSocket();
  ~HostAbstractSocket();
  const std::string& name() const { return name_; }
  bool had_connection() const;

 private:
  int fd_ = -1;
  std::string name_;
};

// What a sandbox could leave behind on the host.
struct HostSnapshot {
  std::set<std::string> cgroups;      // every airlock-* cgroup directory
  std::string mountinfo;              // this process's mount table
  std::set<std::string> temp_entries; // the temp dir's entries
  std::set<std::string> open_fds;     // this process's descriptors
  std::set<pid_t> children;           // processes whose parent is this process
};
HostSnapshot snapshot_host();

// The sandbox cgroups ("airlock-<owner>-<n>") a supervisor with pid `owner` made, in every
// hierarchy this process uses.
std::set<std::string> cgroups_made_by(pid_t owner);

}  // namespace airlock::sandbox::test
