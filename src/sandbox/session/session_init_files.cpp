#include "sandbox/session/session_init_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "sandbox/seccomp/syscalls.hpp"

namespace airlock::sandbox::session_files {
namespace {

using session_protocol::FileHeader;
using session_protocol::FileOp;
using session_protocol::kMaxMessageBytes;
using session_protocol::Reply;

int g_workspace = -1;  // O_PATH of the work dir, the root of every file operation

// What the copier does, set before it is cloned (it has its own copy afterwards).
struct CopyJob {
  int from = -1, to = -1;
  bool list = false;  // `from` is a directory: write its listing
};
CopyJob g_copy;
char g_scratch[kMaxMessageBytes + 1];  // a path being split into its parent and last component
char g_buffer[64 * 1024];              // the copier's: bytes, or directory entries
char g_records[64 * 1024];             // the copier's: listing records not yet written

// openat2 beneath the work dir: `..`, an absolute symlink or one that leads out, and /proc's
// magic links are refused by the kernel (EXDEV, ELOOP) wherever they are in the path.
int open_beneath(const char* path, std::uint64_t flags, std::uint64_t mode = 0) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  if (!(flags & O_PATH)) how.flags |= O_NOCTTY | O_NONBLOCK;  // a FIFO does not block the init
  how.mode = mode;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, g_workspace, path[0] ? path : ".", &how, sizeof how);
  return static_cast<int>(fd);
}

// The directory holding `path`'s last component (opened beneath the work dir) and, in
// `*base`, that component; -1 with errno set. `path` is copied first: it is not changed.
int open_parent(const char* path, const char** base) {
  const std::size_t len = std::strlen(path);
  if (len == 0 || len > kMaxMessageBytes) {
    errno = EINVAL;
    return -1;
  }
  std::memcpy(g_scratch, path, len + 1);
  char* slash = std::strrchr(g_scratch, '/');
  *base = slash ? slash + 1 : g_scratch;
  if (**base == '\0' || std::strcmp(*base, ".") == 0 || std::strcmp(*base, "..") == 0) {
    errno = EINVAL;  // the supervisor sends normalized paths; this is the init's own check
    return -1;
  }
  if (!slash) return open_beneath(".", O_PATH | O_DIRECTORY);
  *slash = '\0';
  return open_beneath(g_scratch, O_PATH | O_DIRECTORY);
}

// mkdir of `path` beneath the work dir; 0 or the errno (EEXIST when something is there).
int make_one_directory(const char* path) {
  const char* base = nullptr;
  const int parent = open_parent(path, &base);
  if (parent < 0) return errno;
  const int rc = ::mkdirat(parent, base, 0755);
  const int err = rc == 0 ? 0 : errno;
  ::close(parent);
  return err;
}

// The directories above `path`'s last component (and, with `itself`, that one too), made
// where missing. 0 or the errno.
int make_directories(char* path, bool itself) {
  for (char* p = std::strchr(path, '/'); p; p = std::strchr(p + 1, '/')) {
    *p = '\0';
    const int err = make_one_directory(path);
    *p = '/';
    if (err != 0 && err != EEXIST) return err;
  }
  if (!itself) return 0;
  const int err = make_one_directory(path);
  if (err != EEXIST) return err;
  const int dir = open_beneath(path, O_PATH | O_DIRECTORY);  // there already: a directory?
  if (dir < 0) return errno;
  ::close(dir);
  return 0;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

char* put_number(char* out, std::uint64_t value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

char type_letter(mode_t mode) {
  if (S_ISREG(mode)) return 'f';
  if (S_ISDIR(mode)) return 'd';
  if (S_ISLNK(mode)) return 'l';
  return 'o';
}

// The copier's listing of directory `dir` into `out` (ListingRecord); 0 or the errno.
int write_listing(int dir, int out) {
  std::size_t used = 0;
  for (;;) {
    const ssize_t n = ::getdents64(dir, g_buffer, sizeof g_buffer);
    if (n < 0) return errno;
    if (n == 0) break;
    for (ssize_t off = 0; off < n;) {
      const auto* entry = reinterpret_cast<const dirent64*>(g_buffer + off);
      off += entry->d_reclen;
      const char* name = entry->d_name;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      struct stat st{};
      if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
      const std::size_t name_len = std::strlen(name);
      if (used + name_len + 64 > sizeof g_records) {
        if (!write_all(out, g_records, used)) return errno;
        used = 0;
      }
      char* p = g_records + used;
      *p++ = type_letter(st.st_mode);
      *p++ = ' ';
      p = put_number(p, static_cast<std::uint64_t>(st.st_size));
      *p++ = ' ';
      p = put_number(p, static_cast<std::uint64_t>(st.st_mtim.tv_sec < 0 ? 0 : st.st_mtim.tv_sec));
      *p++ = ' ';
      std::memcpy(p, name, name_len + 1);
      used = static_cast<std::size_t>(p + name_len + 1 - g_records);
    }
  }
  return write_all(out, g_records, used) ? 0 : errno;
}

// The copier: a process of its own group (a Signal for its id stops it), with the two
// descriptors and nothing else, copying until the end of `from`. Its exit code is 0 or the
// errno that stopped it (ENOSPC at the disk limit; EFBIG past RLIMIT_FSIZE, whose signal it
// ignores).
int copier_main(void*) {
  ::setsid();
  struct sigaction ignore{};
  ignore.sa_handler = SIG_IGN;
  (void)::sigaction(SIGXFSZ, &ignore, nullptr);
  (void)::sigaction(SIGPIPE, &ignore, nullptr);
  // The two as 0 and 1, nothing else (not the init's control socket); above 1 first, as
  // either may be 0 or 1 already.
  const int high_from = ::fcntl(g_copy.from, F_DUPFD, 2);
  const int high_to = ::fcntl(g_copy.to, F_DUPFD, 2);
  if (high_from < 0 || high_to < 0 || ::dup2(high_from, 0) != 0 || ::dup2(high_to, 1) != 1) sys::raw_exit(errno);
  (void)::close_range(2, ~0U, 0);
  const int from = 0, to = 1;
  (void)::fcntl(from, F_SETFL, 0);  // opened O_NONBLOCK so that the init could not block
  (void)::fcntl(to, F_SETFL, 0);
  if (g_copy.list) sys::raw_exit(write_listing(from, to));
  for (;;) {
    const ssize_t n = ::read(from, g_buffer, sizeof g_buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) sys::raw_exit(errno);
    if (n == 0) sys::raw_exit(0);
    if (!write_all(to, g_buffer, static_cast<std::size_t>(n))) sys::raw_exit(errno);
  }
}

// Starts the copier from `from` to `to`; its pid, or -1 with errno set.
pid_t start_copier(int from, int to, bool list, char* stack_top) {
  g_copy = CopyJob{from, to, list};
  // No CLONE_VM: the copier has its own copy of the init's memory and runs while the init
  // goes on serving.
  return ::clone(copier_main, stack_top, SIGCHLD, nullptr);
}

Reply done(std::uint32_t id, int err) {
  Reply r{};
  r.tag = 'R';
  r.id = id;
  r.err = err;
  return r;
}

Reply read_path(std::uint32_t id, const char* path, int pipe_w, char* stack_top, pid_t* copier) {
  const int fd = open_beneath(path, O_RDONLY);
  if (fd < 0) return done(id, errno);
  struct stat st{};
  Reply r = done(id, ::fstat(fd, &st) == 0 ? 0 : errno);
  r.file_type = st.st_mode & S_IFMT;
  r.size = static_cast<std::uint64_t>(st.st_size);
  if (r.err == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
    const pid_t pid = start_copier(fd, pipe_w, S_ISDIR(st.st_mode), stack_top);
    if (pid < 0) r.err = errno;
    else *copier = pid;
  }
  ::close(fd);
  return r;
}

Reply write_path(std::uint32_t id, char* path, int pipe_r, char* stack_top, pid_t* copier) {
  if (int err = make_directories(path, false); err != 0) return done(id, err);
  const char* base = nullptr;
  const int parent = open_parent(path, &base);
  if (parent < 0) return done(id, errno);
  const int fd = ::openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644);
  const int open_err = fd < 0 ? errno : 0;
  ::close(parent);
  if (fd < 0) return done(id, open_err);
  Reply r = done(id, 0);
  r.file_type = S_IFREG;
  const pid_t pid = start_copier(pipe_r, fd, false, stack_top);
  if (pid < 0) r.err = errno;
  else *copier = pid;
  ::close(fd);
  return r;
}

Reply remove_path(std::uint32_t id, const char* path) {
  const char* base = nullptr;
  const int parent = open_parent(path, &base);
  if (parent < 0) return done(id, errno);
  int rc = ::unlinkat(parent, base, 0);
  if (rc != 0 && errno == EISDIR) rc = ::unlinkat(parent, base, AT_REMOVEDIR);
  const int err = rc == 0 ? 0 : errno;
  ::close(parent);
  return done(id, err);
}

Reply move_path(std::uint32_t id, const char* from, const char* to) {
  const char* from_base = nullptr;
  const int from_parent = open_parent(from, &from_base);
  if (from_parent < 0) return done(id, errno);
  char from_name[NAME_MAX + 1] = {};  // open_parent reuses the scratch buffer for `to`
  if (std::strlen(from_base) > NAME_MAX) {
    ::close(from_parent);
    return done(id, ENAMETOOLONG);
  }
  std::memcpy(from_name, from_base, std::strlen(from_base) + 1);
  const char* to_base = nullptr;
  const int to_parent = open_parent(to, &to_base);
  if (to_parent < 0) {
    const int err = errno;
    ::close(from_parent);
    return done(id, err);
  }
  const int rc = ::renameat(from_parent, from_name, to_parent, to_base);
  const int err = rc == 0 ? 0 : errno;
  ::close(from_parent);
  ::close(to_parent);
  return done(id, err);
}

// The strings after the header: `count` NUL-terminated paths; false when the message ends first.
bool take_paths(char* cursor, const char* end, char** out, int count) {
  for (int i = 0; i < count; ++i) {
    auto* nul = static_cast<char*>(std::memchr(cursor, '\0', static_cast<std::size_t>(end - cursor)));
    if (!nul) return false;
    out[i] = cursor;
    cursor = nul + 1;
  }
  return true;
}

}  // namespace

bool open_workspace(const char* workdir) {
  g_workspace = ::open(workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  return g_workspace >= 0;
}

Reply serve(char* message, std::size_t size, const int* fds, std::size_t nfds, char* stack_top,
            pid_t* copier) {
  *copier = 0;
  FileHeader h;
  std::memcpy(&h, message, sizeof h);
  char* paths[2] = {};
  const bool moves = h.op == FileOp::move;
  const bool streams = h.op == FileOp::read || h.op == FileOp::write;
  if (g_workspace < 0 || nfds != (streams ? 1u : 0u) ||
      !take_paths(message + sizeof h, message + size, paths, moves ? 2 : 1))
    return done(h.id, EINVAL);
  switch (h.op) {
    case FileOp::read:
      return read_path(h.id, paths[0], fds[0], stack_top, copier);
    case FileOp::write:
      return write_path(h.id, paths[0], fds[0], stack_top, copier);
    case FileOp::remove:
      return remove_path(h.id, paths[0]);
    case FileOp::move:
      return move_path(h.id, paths[0], paths[1]);
    case FileOp::make_directory:
      return done(h.id, make_directories(paths[0], true));
  }
  return done(h.id, EINVAL);
}

}  // namespace airlock::sandbox::session_files
