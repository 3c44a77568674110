// What a session's supervisor and the session's init (pid 1 inside the sandbox) say to each
// other over their SOCK_SEQPACKET socket: one message per record, fixed layouts, no
// allocation on the init's side (it is a raw clone of a multi-threaded process).
//
//   supervisor -> init   Exec   {tag 'E', id, argc, envc, rows, columns} cwd\0 argv...\0 env...\0
//                                + 3 descriptors (the exec's stdin, stdout, stderr); or, with
//                                a window size (rows > 0), none: the init opens a pty in the
//                                session's own devpts instance, the slave is the exec's
//                                controlling terminal and 0-2, the master comes back with
//                                Started
//                        Signal {tag 'K', id, signal}: to the exec's process group
//                        File   {tag 'P', id, op} path\0 [to\0]: an operation on the
//                               workspace (FileOp), + 1 descriptor for read and write (a pipe)
//   init -> supervisor   Started {tag 'S', id, pid}       (pid inside the sandbox; + the
//                                                    pty's master for a terminal exec)
//                        Failed  {tag 'F', id, errno}     (nothing ran: bad cwd, not found)
//                        Ended   {tag 'X', id, ...}       (the exec's process has ended)
//                        Done    {tag 'R', id, errno, file_type, size}: a File operation's
//                               result; for read and write, a copier then runs as the id's
//                               process, and its Ended follows (exit code 0, or the errno that
//                               stopped it)
//
// Paths of File operations are resolved by the init, inside the sandbox, beneath the work dir
// (openat2 RESOLVE_BENEATH): `..`, absolute symlinks and symlinks leading out are refused by
// the kernel at the moment of use, so a symlink swapped after a check cannot redirect them.
//
// The socket closing on the supervisor's side ends the session: init exits, which ends its
// pid namespace and every process in it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace airlock::sandbox::session_protocol {

inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;  // one exec's cwd, argv and env
inline constexpr std::uint32_t kMaxArgs = 1024;             // argv and env strings, each
inline constexpr std::uint32_t kMaxRunning = 256;           // execs alive at once

struct ExecHeader {
  char tag = 'E';
  std::uint32_t id = 0;
  std::uint32_t argc = 0;
  std::uint32_t envc = 0;
  std::uint16_t rows = 0, columns = 0;  // a terminal's window size; 0: no terminal
};

struct SignalMessage {
  char tag = 'K';
  std::uint32_t id = 0;
  std::int32_t signal = 0;
};

enum class FileOp : std::uint32_t {
  read = 1,            // a file's content, or a directory's listing (ListingRecord), into the pipe
  write = 2,           // a new file (it must not exist; parents are made) from the pipe
  remove = 3,          // a file, a symlink or an empty directory
  move = 4,            // path to `to` (rename: replaces a file there)
  make_directory = 5,  // and its parents; one that exists is fine
};

struct FileHeader {
  char tag = 'P';
  std::uint32_t id = 0;
  FileOp op = FileOp::read;
};

// A directory listing, as the copier writes it: one record per entry (not . and ..),
// "<type> <size> <mtime seconds> <name>\0", type one of f (file), d, l (symlink), o (other).

struct Reply {
  char tag = 0;           // 'S', 'F', 'X' or 'R'
  std::uint32_t id = 0;
  std::int32_t pid = 0;   // 'S'
  std::int32_t err = 0;   // 'F': errno
  std::int32_t exited = 0;  // 'X': 1 exit code, 0 killed by a signal
  std::int32_t code = 0;    // 'X': the exit code or the signal
  std::uint64_t user_us = 0, sys_us = 0;  // 'X': CPU time of the exec and its reaped children
  std::uint64_t max_rss_kb = 0;           // 'X': its largest resident set
  std::uint32_t file_type = 0;            // 'R': S_IFMT of what the path names (read)
  std::uint64_t size = 0;                 // 'R': its size in bytes
};

}  // namespace airlock::sandbox::session_protocol
