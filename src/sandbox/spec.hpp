// Spec: everything a sandbox run needs, as plain data. The defaults are the safest profile.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace airlock::sandbox {

using std::chrono::milliseconds;

struct Limits {
  milliseconds wall_time{30'000};             // --timeout
  std::optional<milliseconds> cpu_time;       // --cpu-time, total over every process
  std::uint64_t memory_bytes = 512ULL << 20;  // --memory, no swap
  std::uint32_t pids = 64;                    // --pids, processes and threads
  std::uint64_t output_bytes = 1ULL << 20;    // --output-limit, per stream
  std::uint64_t disk_bytes = 64ULL << 20;     // --disk, shared by the work dir and /tmp
  std::uint32_t open_files = 256;             // --nofile
  // Preparing the sandbox, from the lookup of its binds' sources to the program's start (a
  // session's init ready), is bounded apart from the wall time, which for a session is hours:
  // a step that hangs there (a bind on an unresponsive NFS or FUSE mount) fails the run as
  // setup_error after min(this, wall_time).
  milliseconds setup_time{60'000};           // --setup-timeout
  // CPU bandwidth in cores (cgroup v2 cpu.max, v1 cpu.cfs_quota_us); none: not throttled.
  std::optional<double> cpus;
  // A session's: its cgroup can be frozen (Sandbox::freeze; v1 needs the freezer hierarchy,
  // made only when asked for). Not a limit: where no freezer is usable, freezing is refused.
  bool freezable = false;
};

// A host path made visible inside the sandbox.
struct Bind {
  std::string source;  // absolute host path
  std::string dest;    // absolute path inside; defaults to source
  bool writable = false;
};

// The sandbox's network: always its own network namespace with loopback only. What reaches
// beyond it (the egress proxy, src/egress) is composed by backend::run_local(), which asks for
// listeners here and relays their connections outside.
struct NetworkNamespace {
  // Listening sockets on 127.0.0.1 inside the sandbox, handed to the supervisor (a socket
  // stays in the namespace it was created in, so connections are accepted from outside).
  std::vector<std::uint16_t> loopback_listeners;
  // Landlock: TCP ports the sandbox may connect() to (ABI >= 4). Empty: no TCP connect.
  std::vector<std::uint16_t> tcp_connect_ports;
};

// Where the child's stdin comes from. The child always reads a pipe; the supervisor feeds it.
struct StdinSource {
  enum class Kind { none, bytes, fd } kind = Kind::none;
  std::string bytes;  // Kind::bytes
  int fd = -1;        // Kind::fd: a host fd the supervisor copies from (not owned)
};

// What happens to the child's stdout and stderr.
enum class OutputMode {
  collect,  // kept (up to the limit) in Outcome::stdout_data / stderr_data
  forward,  // copied as it arrives to forward_stdout_fd / forward_stderr_fd (up to the limit)
  caller,   // stdin and stdout are pipes owned by the caller (Sandbox::take_stdin/take_stdout);
            // stderr collected, unless the caller takes it too (Sandbox::take_stderr)
};

// `--tty`: the program's stdin, stdout and stderr are the slave of a pseudo-terminal made in a
// new devpts instance of the sandbox's own (the host's /dev/pts is never visible). The
// supervisor holds the master: it feeds stdin_source into it and reads everything the program
// writes to the terminal as stdout (counted against the output limit); stderr stays empty.
struct Terminal {
  std::uint16_t rows = 24;  // the initial window size (TIOCSWINSZ)
  std::uint16_t columns = 80;
  // Optional, to follow the caller's window: whenever resize_event_fd is readable (e.g. the
  // read end of a SIGWINCH self-pipe) the supervisor drains it and copies the window size of
  // size_source_fd onto the pty, and the program gets SIGWINCH. Neither is owned.
  int resize_event_fd = -1;
  int size_source_fd = -1;
};

struct Spec {
  std::vector<std::string> argv;             // argv[0] without '/' is looked up in PATH inside
  std::map<std::string, std::string> env;    // added to PATH, HOME, LANG
  std::vector<Bind> binds;                   // --ro / --rw
  std::string workdir = "/work";             // a fresh tmpfs; also $HOME
  StdinSource stdin_source;
  OutputMode output_mode = OutputMode::collect;
  int forward_stdout_fd = 1;
  int forward_stderr_fd = 2;
  bool kill_on_output_limit = false;         // stop the run at once when a stream overflows
  Limits limits;
  NetworkNamespace network;
  std::string hostname = "airlock";
  std::optional<Terminal> tty;               // --tty; not with OutputMode::caller
  // Optional: once this descriptor is readable the run is stopped, as by Sandbox::kill(). It
  // is polled, never read or closed (airlock run passes a signalfd and reads the signal
  // afterwards).
  int stop_fd = -1;
  // A warm template (sandbox/warm/warm.hpp) only: this host descriptor (not owned) reaches the
  // program as descriptor 7, and the program runs without Landlock and seccomp (each call it
  // forks installs both, and needs to mount and make namespaces first). Not for any other use.
  int warm_template_fd = -1;
  // A session (sandbox/session/session.hpp) only: the sandbox runs no program (argv is a name,
  // never executed); its init serves exec requests on this host descriptor (not owned; one end
  // of a SOCK_SEQPACKET socketpair) until the other end closes.
  int session_control_fd = -1;
};

// The uid and gid the sandboxed program runs as, inside its user namespace.
inline constexpr unsigned kSandboxUid = 1000;
inline constexpr unsigned kSandboxGid = 1000;

}  // namespace airlock::sandbox
