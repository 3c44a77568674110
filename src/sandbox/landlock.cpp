#include "sandbox/landlock.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace airlock::sandbox {
namespace {

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

constexpr unsigned kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;
constexpr int kRuleNetPort = 2;

struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};

struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

struct NetPortAttr {
  std::uint64_t allowed_access;
  std::uint64_t port;
};

std::uint64_t fs_rights_for_abi(int abi) {
  using namespace landlock;
  std::uint64_t rights = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile |
                         kMakeChar | kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeBlock |
                         kMakeSym;
  if (abi >= 2) rights |= kRefer;
  if (abi >= 3) rights |= kTruncate;
  if (abi >= 5) rights |= kIoctlDev;
  return rights;
}

}  // namespace

int landlock_abi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

void finish_landlock_plan(LandlockPlan& plan, int abi) {
  plan.abi = abi;
  if (abi <= 0) return;
  plan.handled_fs = fs_rights_for_abi(abi);
  plan.handled_net = abi >= 4 ? (landlock::kNetBindTcp | landlock::kNetConnectTcp) : 0;
  plan.scoped = abi >= 6 ? (landlock::kScopeAbstractUnix | landlock::kScopeSignal) : 0;
  for (auto& rule : plan.paths) {
    rule.access &= plan.handled_fs;
    if (!rule.is_directory) rule.access &= landlock::kFileRights;
  }
}

int apply_landlock(const LandlockPlan& plan, const char** step) {
  if (plan.abi <= 0) return 0;
  RulesetAttr attr{plan.handled_fs, plan.handled_net, plan.scoped};
  // Older kernels know a shorter struct; the fields they do not know are zero for them.
  std::size_t attr_size = plan.abi >= 6 ? sizeof(RulesetAttr)
                          : plan.abi >= 4 ? 2 * sizeof(std::uint64_t)
                                          : sizeof(std::uint64_t);
  int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0));
  if (ruleset < 0) {
    *step = "landlock_create_ruleset";
    return errno;
  }
  for (const auto& rule : plan.paths) {
    int fd = ::open(rule.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;  // an optional system path this host does not have
      *step = "landlock: open rule path";
      int e = errno;
      ::close(ruleset);
      return e;
    }
    PathBeneathAttr beneath{rule.access, fd};
    long rc = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &beneath, 0);
    int e = errno;
    ::close(fd);
    if (rc < 0) {
      *step = "landlock_add_rule (path)";
      ::close(ruleset);
      return e;
    }
  }
  if (plan.handled_net) {
    // A port in both lists gets two rules: the kernel adds their rights together.
    for (const auto& [ports, access] : {std::pair{&plan.connect_ports, landlock::kNetConnectTcp},
                                        std::pair{&plan.bind_ports, landlock::kNetBindTcp}}) {
      for (auto port : *ports) {
        NetPortAttr net{access, port};
        if (::syscall(SYS_landlock_add_rule, ruleset, kRuleNetPort, &net, 0) < 0) {
          int e = errno;
          *step = "landlock_add_rule (tcp port)";
          ::close(ruleset);
          return e;
        }
      }
    }
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset, 0) < 0) {
    int e = errno;
    *step = "landlock_restrict_self";
    ::close(ruleset);
    return e;
  }
  ::close(ruleset);
  return 0;
}

}  // namespace airlock::sandbox
