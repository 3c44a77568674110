// Landlock: the filesystem, TCP and scope rules the sandbox applies to itself, as a second
// layer under the mount namespace. The plan is made in the supervisor; the sandbox child
// applies it without allocating.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace airlock::sandbox {

namespace landlock {
// Access rights (linux/landlock.h; Debian 12's header predates most of them).
inline constexpr std::uint64_t kExecute = 1ULL << 0;
inline constexpr std::uint64_t kWriteFile = 1ULL << 1;
inline constexpr std::uint64_t kReadFile = 1ULL << 2;
inline constexpr std::uint64_t kReadDir = 1ULL << 3;
inline constexpr std::uint64_t kRemoveDir = 1ULL << 4;
inline constexpr std::uint64_t kRemoveFile = 1ULL << 5;
inline constexpr std::uint64_t kMakeChar = 1ULL << 6;
inline constexpr std::uint64_t kMakeDir = 1ULL << 7;
inline constexpr std::uint64_t kMakeReg = 1ULL << 8;
inline constexpr std::uint64_t kMakeSock = 1ULL << 9;
inline constexpr std::uint64_t kMakeFifo = 1ULL << 10;
inline constexpr std::uint64_t kMakeBlock = 1ULL << 11;
inline constexpr std::uint64_t kMakeSym = 1ULL << 12;
inline constexpr std::uint64_t kRefer = 1ULL << 13;     // ABI 2
inline constexpr std::uint64_t kTruncate = 1ULL << 14;  // ABI 3
inline constexpr std::uint64_t kIoctlDev = 1ULL << 15;  // ABI 5
inline constexpr std::uint64_t kNetBindTcp = 1ULL << 0;     // ABI 4
inline constexpr std::uint64_t kNetConnectTcp = 1ULL << 1;  // ABI 4
inline constexpr std::uint64_t kScopeAbstractUnix = 1ULL << 0;  // ABI 6
inline constexpr std::uint64_t kScopeSignal = 1ULL << 1;        // ABI 6

// Rights that make sense on a regular file (a rule on a file may only grant these).
inline constexpr std::uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
inline constexpr std::uint64_t kReadOnly = kExecute | kReadFile | kReadDir;
inline constexpr std::uint64_t kReadWrite = kReadOnly | kWriteFile | kRemoveDir | kRemoveFile |
                                            kMakeDir | kMakeReg | kMakeSock | kMakeFifo |
                                            kMakeSym | kRefer | kTruncate;
}  // namespace landlock

// The running kernel's Landlock ABI version; 0 when Landlock is unavailable or disabled.
int landlock_abi();

struct LandlockPathRule {
  std::string path;  // inside the sandbox, after pivot_root
  std::uint64_t access;
  bool is_directory;
};

struct LandlockPlan {
  int abi = 0;  // 0: skip Landlock entirely
  std::uint64_t handled_fs = 0;
  std::uint64_t handled_net = 0;
  std::uint64_t scoped = 0;
  std::vector<LandlockPathRule> paths;
  std::vector<std::uint16_t> connect_ports;
  // TCP ports it may bind: a warm template's only, whose calls open their egress listeners
  // in their own network namespaces under its domain (plan_warm_template_policy).
  std::vector<std::uint16_t> bind_ports;
};

// Fills handled_* and scoped for the running ABI and masks every rule to what it handles.
void finish_landlock_plan(LandlockPlan& plan, int abi);

// Called in the sandbox child (after no_new_privs). Returns 0, or an errno and sets *step.
int apply_landlock(const LandlockPlan& plan, const char** step);

}  // namespace airlock::sandbox
