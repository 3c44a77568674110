// Thin wrappers for the syscalls glibc 2.36 has no wrapper for, and the constants that
// Debian 12's kernel headers (6.1) predate. Every wrapper returns -1 and sets errno on failure.
#pragma once

#include <linux/types.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace airlock::sandbox::sys {

inline constexpr unsigned long kClonePidfd = 0x00001000;
inline constexpr unsigned long kCloneIntoCgroup = 0x200000000ULL;

struct CloneArgs {  // struct clone_args, version 2 (88 bytes)
  std::uint64_t flags;
  std::uint64_t pidfd;
  std::uint64_t child_tid;
  std::uint64_t parent_tid;
  std::uint64_t exit_signal;
  std::uint64_t stack;
  std::uint64_t stack_size;
  std::uint64_t tls;
  std::uint64_t set_tid;
  std::uint64_t set_tid_size;
  std::uint64_t cgroup;
};

inline long clone3(CloneArgs* args) { return ::syscall(SYS_clone3, args, sizeof(CloneArgs)); }
inline int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
inline int pidfd_send_signal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}
inline int pivot_root(const char* new_root, const char* put_old) {
  return static_cast<int>(::syscall(SYS_pivot_root, new_root, put_old));
}

// The new mount API (open_tree 5.2, mount_setattr 5.12).
inline constexpr unsigned kOpenTreeClone = 1;
inline constexpr unsigned kOpenTreeCloexec = 02000000;
inline constexpr unsigned kAtRecursive = 0x8000;
inline constexpr unsigned kMoveMountFEmptyPath = 0x00000004;
inline constexpr std::uint64_t kMountAttrRdonly = 0x00000001;
inline constexpr std::uint64_t kMountAttrNosuid = 0x00000002;
inline constexpr std::uint64_t kMountAttrNodev = 0x00000004;
inline constexpr std::uint64_t kMountAttrNoexec = 0x00000008;

struct MountAttr {
  std::uint64_t attr_set;
  std::uint64_t attr_clr;
  std::uint64_t propagation;
  std::uint64_t userns_fd;
};

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

inline int open_tree(int dfd, const char* path, unsigned flags) {
  return static_cast<int>(::syscall(SYS_open_tree, dfd, path, flags));
}
inline int move_mount(int from_dfd, const char* from, int to_dfd, const char* to, unsigned flags) {
  return static_cast<int>(::syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags));
}
inline int mount_setattr(int dfd, const char* path, unsigned flags, MountAttr* attr) {
  return static_cast<int>(::syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof(MountAttr)));
}

// Credentials must be changed with the raw syscalls in the sandbox child: glibc's wrappers
// broadcast the change to every thread it believes exists, and a raw clone3 child still
// carries the parent's thread list.
inline int raw_setresuid(uid_t r, uid_t e, uid_t s) {
  return static_cast<int>(::syscall(SYS_setresuid, r, e, s));
}
inline int raw_setresgid(gid_t r, gid_t e, gid_t s) {
  return static_cast<int>(::syscall(SYS_setresgid, r, e, s));
}
inline int raw_setgroups_empty() { return static_cast<int>(::syscall(SYS_setgroups, 0, nullptr)); }
// A syscall that returns -errno on failure and leaves errno alone, for a helper that shares
// our memory (CLONE_VM, and with it our errno) and runs alongside us.
inline long errno_free_syscall(long nr, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0) {
#if defined(__x86_64__)
  long ret;
  register long r10 asm("r10") = a4;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
               : "rcx", "r11", "memory");
  return ret;
#else
  long ret = ::syscall(nr, a1, a2, a3, a4);
  return ret < 0 ? -errno : ret;
#endif
}
// clone3 whose child starts on `args->stack` (CLONE_VM: it shares our memory) and runs
// fn(arg), then exits with its result. Returns the child's pid, or -errno, in the parent.
// clone(2) does this for 32-bit flags only; CLONE_INTO_CGROUP is beyond them, and glibc has no
// clone3 wrapper. The child runs on a stack the C++ frame it was called from knows nothing
// of, so the hand-over is in assembly: x86-64 only (elsewhere -ENOSYS).
#if defined(__x86_64__)
inline constexpr bool kHasClone3OnStack = true;
inline long clone3_on_stack(CloneArgs* args, int (*fn)(void*), void* arg) {
  long ret;
  register int (*r12)(void*) asm("r12") = fn;  // kept by the syscall, in both processes
  register void* r13 asm("r13") = arg;
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      // The child: rsp is the top of its stack (16-byte aligned), no frame to return to.
      "xor %%ebp, %%ebp\n\t"
      "mov %%r13, %%rdi\n\t"
      "call *%%r12\n\t"
      "mov %%eax, %%edi\n\t"
      "mov %[exit], %%eax\n\t"
      "syscall\n\t"
      "hlt\n\t"
      "1:"
      : "=a"(ret)
      : "a"(SYS_clone3), "D"(args), "S"(sizeof(CloneArgs)), "r"(r12), "r"(r13),
        [exit] "i"(SYS_exit)
      : "rcx", "r11", "memory");
  return ret;
}
#else
inline constexpr bool kHasClone3OnStack = false;
inline long clone3_on_stack(CloneArgs*, int (*)(void*), void*) { return -ENOSYS; }
#endif

[[noreturn]] inline void raw_exit(int code) {
  for (;;) ::syscall(SYS_exit_group, code);
}

}  // namespace airlock::sandbox::sys
