// The sandbox's threat model, executed: every test runs a real attack inside a sandbox and
// asserts both the verdict and that the attack failed. Attack programs print "ESCAPED" when
// they get what they wanted; controls next to the attacks show the harness would notice.
//
// The same binary runs as root, as an unprivileged user (scripts/run-unprivileged-tests.sh),
// without cgroups (AIRLOCK_CGROUP=none) and on cgroup v2 (AIRLOCK_CGROUP=v2): expectations
// that depend on a mechanism ask cgroup_support() / landlock_abi() which one is in force.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "sandbox/cgroup.hpp"
#include "sandbox/host_stat.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/loopback.hpp"
#include "sandbox/sandbox.hpp"
#include "test_support.hpp"

namespace airlock::sandbox {
namespace {

using namespace std::chrono_literals;
using test::describe;
using test::helper;
using test::no_escape;
using test::python;
using test::run_with;

// ---------------------------------------------------------------------------------------
// Reading and writing the host's files

TEST(HostFiles, SecretsAndTheCallersDirectoriesAreNotVisible) {
  std::string cwd = std::filesystem::current_path();
  const char* home = std::getenv("HOME");
  Outcome o = run(python(R"(
import os, sys
for path in sys.argv[1:]:
    try:
        with open(path) if not os.path.isdir(path) else os.scandir(path) as f:
            print("ESCAPED:", path)
    except OSError as e:
        print(path, e.errno)
)", {"/etc/shadow", "/root", "/root/.bash_history", home ? home : "/root", cwd,
      "/proc/1/root/etc/shadow", "/sys/kernel"}));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_NE(o.stdout_data.find("/etc/shadow 2"), std::string::npos) << describe(o);  // ENOENT
}

TEST(HostFiles, ReadOnlyBindIsReadableButNotWritable) {
  test::TempDir dir;
  dir.write("data.txt", "hello from the host\n");
  Spec spec = python(R"(
print(open("/data/data.txt").read().strip())
try:
    open("/data/data.txt", "w").write("changed")
    print("ESCAPED: wrote a read-only bind")
except OSError as e:
    print("write", e.errno)
)");
  spec.binds.push_back({dir.path(), "/data", false});
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("hello from the host"), std::string::npos);  // control
  EXPECT_NE(o.stdout_data.find("write 30"), std::string::npos) << describe(o);  // EROFS
  EXPECT_EQ(dir.read("data.txt"), "hello from the host\n");
}

TEST(HostFiles, WritesOutsideTheWorkDirFail) {
  Outcome o = run(python(R"(
import os
for path in ["/usr/evil", "/usr/bin/python3", "/etc/passwd", "/evil", "/dev/evil", "/bin/evil",
             "/etc/ld.so.cache", "/proc/evil"]:
    try:
        with open(path, "a") as f:
            f.write("x")
        print("ESCAPED:", path)
    except OSError as e:
        print(path, e.errno)
with open("/work/ok.txt", "w") as f:
    f.write("fine")
with open("/tmp/ok.txt", "w") as f:
    f.write("fine")
print("work and tmp writable")
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_NE(o.stdout_data.find("work and tmp writable"), std::string::npos) << describe(o);
}

TEST(HostFiles, ReadWriteBindReachesTheHost) {
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0777);  // the sandbox user is nobody when we are root
  Spec spec = python("open('/out/result.txt', 'w').write('written inside')");
  spec.binds.push_back({dir.path(), "/out", true});
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(dir.read("result.txt"), "written inside");
}

TEST(HostFiles, SymlinksInABindDoNotLeadOut) {
  test::TempDir dir;
  dir.write("secret/key.txt", "host secret\n");
  dir.write("bound/ok.txt", "visible\n");
  std::filesystem::create_symlink(dir.path() + "/secret/key.txt", dir.path() + "/bound/absolute");
  std::filesystem::create_symlink("../secret/key.txt", dir.path() + "/bound/relative");
  std::filesystem::create_directory_symlink("/", dir.path() + "/bound/root");
  Spec spec = python(R"(
for name in ["absolute", "relative", "root/etc/shadow", "root/root"]:
    try:
        print("ESCAPED:", name, open("/data/" + name).read())
    except OSError as e:
        print(name, e.errno)
print(open("/data/ok.txt").read().strip())
)");
  spec.binds.push_back({dir.path() + "/bound", "/data", false});
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_NE(o.stdout_data.find("visible"), std::string::npos);  // control
}

TEST(HostFiles, AnotherSandboxsFilesAreInvisible) {
  const std::string marker = "secret-" + std::to_string(::getpid()) + "-" + test::unique();
  Spec writer = python("import time\nopen('/work/" + marker + "', 'w').write('x')\n"
                       "open('/tmp/" + marker + "', 'w').write('x')\nprint('ready', flush=True)\n"
                       "time.sleep(60)");
  writer.output_mode = OutputMode::caller;
  auto a = Sandbox::launch(writer);
  ASSERT_TRUE(a.ok()) << a.error().message;
  UniqueFd a_out = (*a)->take_stdout();
  std::string line = test::read_line(a_out.get());
  ASSERT_EQ(line, "ready");
  Outcome o = run(python(R"(
import os, sys
marker = sys.argv[1]
found = []
for top in ["/", "/proc"]:
    for root, dirs, files in os.walk(top):
        if root.startswith(("/usr", "/proc/sys")):
            dirs[:] = []
        if marker in files:
            found.append(root)
print("ESCAPED:" if found else "not found", found)
)", {marker}));
  (*a)->kill();
  Outcome ao = (*a)->wait();
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_NE(o.stdout_data.find("not found"), std::string::npos) << describe(o);
  EXPECT_EQ(ao.verdict, Verdict::signaled) << describe(ao);
}

TEST(HostFiles, SetuidBinariesGrantNothing) {
  // A setuid-root copy made by the test set-up (root only), bound in, plus the host's own
  // setuid binaries under /usr: the mounts are nosuid and no_new_privs is set.
  std::string setuid = test::setuid_helper();
  Spec spec = helper("print_ids");
  if (!setuid.empty()) {
    spec.argv = {"/setuid/print_ids"};
    spec.binds.push_back({std::filesystem::path(setuid).parent_path(), "/setuid", false});
  }
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "1000 1000\n") << describe(o);
  Outcome su = run(python(R"(
import os, stat, subprocess
mode = os.stat("/usr/bin/su").st_mode
print("setuid bit present:", bool(mode & stat.S_ISUID))
r = subprocess.run(["/usr/bin/su", "-c", "id -u", "root"], capture_output=True, text=True,
                   stdin=subprocess.DEVNULL)
print("ESCAPED:" if r.stdout.strip() == "0" else "su failed", r.returncode)
print("euid", os.geteuid())
)"));
  EXPECT_EQ(su.verdict, Verdict::ok) << describe(su);
  EXPECT_TRUE(no_escape(su));
  EXPECT_NE(su.stdout_data.find("setuid bit present: True"), std::string::npos) << describe(su);
  EXPECT_NE(su.stdout_data.find("euid 1000"), std::string::npos);
  if (setuid.empty()) GTEST_SKIP() << "no setuid-root helper (the set-up runs as root to make it)";
}

TEST(HostFiles, LandlockDeniesWritesUnderProc) {
  // /proc/self/comm is writable by its owner as far as the mount goes; Landlock grants /proc
  // read access only. This is the second layer at work.
  if (landlock_abi() == 0) GTEST_SKIP() << "Landlock is not enabled on this kernel";
  Outcome o = run(python(R"(
try:
    open("/proc/self/comm", "w").write("renamed")
    print("ESCAPED: wrote /proc/self/comm")
except OSError as e:
    print("comm", e.errno)
print(open("/proc/self/comm").read().strip())
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("comm 13"), std::string::npos) << describe(o);  // EACCES
}

// ---------------------------------------------------------------------------------------
// Other processes

TEST(Processes, HostProcessesAreNotVisible) {
  Outcome o = run(python(R"(
import os
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(pids, os.getpid())
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  // The init and the program (pid 2 was the network namespace helper, gone by now).
  EXPECT_EQ(o.stdout_data, "[1, 3] 3\n") << describe(o);
}

// The sandbox's pid 1 is a fork of this process (no exec): its /proc/1/cmdline would show
// this program's host path and arguments, and its environment area the host's environment.
TEST(Processes, InitShowsNothingOfTheHostCommandLine) {
  std::string host_cmdline;
  {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    host_cmdline.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_FALSE(host_cmdline.empty());
  const std::string host_path = host_cmdline.substr(0, host_cmdline.find('\0'));
  ASSERT_NE(host_path.find("sandbox_attack_test"), std::string::npos) << host_path;
  Spec spec = python(R"(
import sys
for path in ("/proc/1/cmdline", "/proc/1/environ"):
    try:
        with open(path, "rb") as f:
            sys.stdout.buffer.write(path.encode() + b":" + f.read() + b"\n")
    except OSError as e:
        print(path + ": unreadable", e.errno)
)");
  Outcome o = run(spec);
  ASSERT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data.find(host_path), std::string::npos) << describe(o);
  EXPECT_EQ(o.stdout_data.find("sandbox_attack_test"), std::string::npos) << describe(o);
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strlen(*e) >= 8) {
      EXPECT_EQ(o.stdout_data.find(*e), std::string::npos) << *e;
    }
  EXPECT_EQ(o.stdout_data.rfind("/proc/1/cmdline:airlock-init", 0), 0u) << describe(o);
}

TEST(Processes, CannotSignalAnythingOutside) {
  test::HostProcess victim({"/bin/sleep", "60"});
  Outcome o = run(python(R"(
import os, signal, sys
victim = int(sys.argv[1])
try:
    os.kill(victim, signal.SIGKILL)
    print("ESCAPED: signalled", victim)
except OSError as e:
    print("kill", e.errno)
try:
    os.kill(1, signal.SIGKILL)   # the sandbox's init ignores signals from inside
    print("init survives")
except OSError as e:
    print("kill 1", e.errno)
try:
    os.kill(-1, signal.SIGKILL)  # everything we may signal but ourselves and init: nothing
    print("ESCAPED: kill(-1) found someone")
except OSError as e:
    print("kill -1", e.errno)
)", {std::to_string(victim.pid())}));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("kill -1 3"), std::string::npos) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_NE(o.stdout_data.find("kill 3"), std::string::npos) << describe(o);  // ESRCH
  EXPECT_TRUE(victim.alive());
}

TEST(Processes, PtraceIsAViolation) {
  test::HostProcess victim({"/bin/sleep", "60"});
  Outcome o = run(python(R"(
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, int(sys.argv[1]), 0, 0)  # PTRACE_ATTACH
print("ESCAPED: ptrace returned", r)
)", {std::to_string(victim.pid())}));
  EXPECT_EQ(o.verdict, Verdict::seccomp_violation) << describe(o);
  EXPECT_EQ(o.syscall.value_or(""), "ptrace");
  EXPECT_EQ(o.signal, SIGSYS);
  EXPECT_TRUE(no_escape(o));
  EXPECT_TRUE(victim.alive());
}

TEST(Processes, ProcessVmReadvIsAViolation) {
  Outcome o = run(python(R"(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(310, 1, 0, 0, 0, 0, 0)  # process_vm_readv
print("ESCAPED: process_vm_readv returned", r)
)"));
  EXPECT_EQ(o.verdict, Verdict::seccomp_violation) << describe(o);
  EXPECT_EQ(o.syscall.value_or(""), "process_vm_readv");
}

// ---------------------------------------------------------------------------------------
// Syscalls the policy forbids: each must end the run as a violation naming the syscall.

struct ForbiddenSyscall {
  const char* name;      // the syscall the verdict must name
  const char* attempt;   // Python that makes the call
};

class ForbiddenSyscalls : public ::testing::TestWithParam<ForbiddenSyscall> {};

TEST_P(ForbiddenSyscalls, EndTheRunAndAreNamed) {
  const auto& p = GetParam();
  Outcome o = run(python(std::string("import ctypes, os, socket\n"
                                     "libc = ctypes.CDLL(None, use_errno=True)\n") +
                         p.attempt + "\nprint('ESCAPED: returned')\n"));
  EXPECT_EQ(o.verdict, Verdict::seccomp_violation) << describe(o);
  EXPECT_EQ(o.syscall.value_or(""), p.name) << describe(o);
  EXPECT_EQ(o.exit_status(), 128 + SIGSYS);
  EXPECT_TRUE(no_escape(o));
}

INSTANTIATE_TEST_SUITE_P(
    Attacks, ForbiddenSyscalls,
    ::testing::Values(
        ForbiddenSyscall{"mount", "libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)"},
        ForbiddenSyscall{"umount2", "libc.umount2(b'/proc', 2)"},
        ForbiddenSyscall{"pivot_root", "libc.syscall(155, b'/tmp', b'/tmp')"},
        ForbiddenSyscall{"chroot", "libc.chroot(b'/tmp')"},
        ForbiddenSyscall{"fsopen", "libc.syscall(430, b'tmpfs', 0)"},
        ForbiddenSyscall{"open_tree", "libc.syscall(428, -100, b'/usr', 1)"},
        ForbiddenSyscall{"unshare", "libc.unshare(0x10000000)  # CLONE_NEWUSER"},
        ForbiddenSyscall{"unshare", "libc.unshare(0x40000000)  # CLONE_NEWNET"},
        ForbiddenSyscall{"setns", "libc.setns(os.open('/proc/self/ns/net', os.O_RDONLY), 0)"},
        ForbiddenSyscall{"clone", "libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)  # NEWUSER"},
        ForbiddenSyscall{"clone", "libc.syscall(56, 0x20000000 | 17, 0, 0, 0, 0)  # NEWPID"},
        ForbiddenSyscall{"init_module", "libc.syscall(175, 0, 0, b'')"},
        ForbiddenSyscall{"finit_module",
                         "libc.syscall(313, os.open('/usr/bin/true', os.O_RDONLY), b'', 0)"},
        ForbiddenSyscall{"delete_module", "libc.syscall(176, b'ext4', 0)"},
        ForbiddenSyscall{"keyctl", "libc.syscall(250, 0, -3, 0, 0, 0)"},
        ForbiddenSyscall{"add_key", "libc.syscall(248, b'user', b'k', b'v', 1, -3)"},
        ForbiddenSyscall{"request_key", "libc.syscall(249, b'user', b'k', None, 0)"},
        ForbiddenSyscall{"bpf", "libc.syscall(321, 0, 0, 0)"},
        ForbiddenSyscall{"perf_event_open", "libc.syscall(298, 0, 0, -1, -1, 0)"},
        ForbiddenSyscall{"userfaultfd", "libc.syscall(323, 0)"},
        ForbiddenSyscall{"kexec_load", "libc.syscall(246, 0, 0, 0, 0)"},
        ForbiddenSyscall{"reboot", "libc.syscall(169, 0xfee1dead, 672274793, 0x4321fedc, 0)"},
        ForbiddenSyscall{"swapon", "libc.syscall(167, b'/tmp/x', 0)"},
        ForbiddenSyscall{"acct", "libc.syscall(163, b'/tmp/x')"},
        ForbiddenSyscall{"quotactl", "libc.syscall(179, 0, b'/', 0, 0)"},
        ForbiddenSyscall{"name_to_handle_at", "libc.syscall(303, -100, b'/', 0, 0, 0)"},
        ForbiddenSyscall{"open_by_handle_at", "libc.syscall(304, 0, 0, 0)"},
        ForbiddenSyscall{"iopl", "libc.syscall(172, 3)"},
        ForbiddenSyscall{"ioperm", "libc.syscall(173, 0, 1024, 1)"},
        ForbiddenSyscall{"syslog", "libc.syscall(103, 3, 0, 0)"},
        ForbiddenSyscall{"personality", "libc.personality(0x0040000)  # ADDR_NO_RANDOMIZE"},
        ForbiddenSyscall{"personality", "libc.personality(0x0008)  # PER_LINUX32"},
        ForbiddenSyscall{"socket", "socket.socket(socket.AF_PACKET, socket.SOCK_RAW)"},
        ForbiddenSyscall{"socket", "socket.socket(40, socket.SOCK_STREAM)  # AF_VSOCK"},
        ForbiddenSyscall{"socket", "socket.socket(15, socket.SOCK_RAW, 2)  # AF_KEY"},
        ForbiddenSyscall{"socket", "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)  # AUDIT"},
        ForbiddenSyscall{"socket", "libc.socket(0x100000011, 3, 0)  # AF_PACKET, high bits"},
        ForbiddenSyscall{"socket", "socket.socket(38, socket.SOCK_SEQPACKET)  # AF_ALG"},
        ForbiddenSyscall{"kcmp", "libc.syscall(312, 1, 2, 0, 0, 0)"},
        ForbiddenSyscall{"pidfd_getfd", "libc.syscall(438, 0, 0, 0)"}));

// A syscall through a foreign ABI must end the run as a violation naming that ABI.
void expect_foreign_abi_is_a_violation(const std::string& abi) {
  if (!test::host_kernel_runs_abi(abi))
    GTEST_SKIP() << "this kernel kills a " << abi
                 << " syscall itself (no emulation of that ABI): there is no attack to run";
  Outcome o = run(helper("foreign_abi", {abi}));
  EXPECT_EQ(o.verdict, Verdict::seccomp_violation) << abi << describe(o);
  EXPECT_EQ(o.syscall.value_or(""), abi + ":getpid") << describe(o);
  EXPECT_TRUE(no_escape(o));
}

TEST(ForbiddenSyscallsOtherAbi, X32IsAViolation) { expect_foreign_abi_is_a_violation("x32"); }
TEST(ForbiddenSyscallsOtherAbi, I386IsAViolation) { expect_foreign_abi_is_a_violation("i386"); }

TEST(ForbiddenSyscallsTerminal, TiocstiIsAViolation) {
  Outcome o = run(helper("hold_terminal"));
  EXPECT_EQ(o.verdict, Verdict::seccomp_violation) << describe(o);
  EXPECT_EQ(o.syscall.value_or(""), "ioctl");
  EXPECT_TRUE(no_escape(o));
}

TEST(AllowedSyscalls, OrdinaryProgramsKeepWorking) {
  // Controls for the policy: threads and subprocesses (clone3 falls back to clone), netlink
  // route sockets, the personality query, Unix sockets, io_uring failing politely.
  Outcome o = run(python(R"(
import ctypes, socket, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
t = threading.Thread(target=lambda: None); t.start(); t.join()
print("thread ok")
print(subprocess.run(["/bin/echo", "subprocess ok"], capture_output=True, text=True).stdout.strip())
socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
print("netlink route ok")
print("personality", libc.personality(0xffffffff))
a, b = socket.socketpair(); a.send(b"x"); print("socketpair", b.recv(1))
r = libc.syscall(425, 8, ctypes.create_string_buffer(120))   # io_uring_setup
print("io_uring", r, ctypes.get_errno())
r = libc.syscall(435, 0, 0)   # clone3
print("clone3", r, ctypes.get_errno())
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  for (const char* expected : {"thread ok", "subprocess ok", "netlink route ok", "personality 0",
                               "socketpair b'x'", "io_uring -1 38", "clone3 -1 38"})
    EXPECT_NE(o.stdout_data.find(expected), std::string::npos) << expected << describe(o);
}

// ---------------------------------------------------------------------------------------
// Network

TEST(Network, HostLoopbackListenerIsUnreachable) {
  test::HostListener listener;
  Outcome o = run(python(R"(
import socket, sys
port = int(sys.argv[1])
for host in ["127.0.0.1", "::1", "localhost"]:
    try:
        socket.create_connection((host, port), timeout=2)
        print("ESCAPED: connected to", host)
    except OSError as e:
        print(host, e.errno)
)", {std::to_string(listener.port())}));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_FALSE(listener.had_connection());
}

TEST(Network, HostAbstractUnixSocketIsUnreachable) {
  test::HostAbstractSocket host_socket;
  Outcome o = run(python(R"(
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + sys.argv[1])
    print("ESCAPED: connected")
except OSError as e:
    print("abstract", e.errno)
)", {host_socket.name()}));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_FALSE(host_socket.had_connection());
}

TEST(Network, NoDnsNoRoutesOnlyLoopback) {
  Outcome o = run(python(R"(
import socket
try:
    print("ESCAPED: resolved", socket.getaddrinfo("example.com", 443))
except OSError as e:
    print("dns failed", type(e).__name__)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"\0" * 12, ("8.8.8.8", 53))
    print("ESCAPED: udp sent")
except OSError as e:
    print("udp", e.errno)
try:
    socket.create_connection(("1.1.1.1", 443), timeout=2)
    print("ESCAPED: tcp out")
except OSError as e:
    print("tcp", e.errno)
print(sorted(n for _, n in socket.if_nameindex()))
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_NE(o.stdout_data.find("udp 101"), std::string::npos) << describe(o);  // ENETUNREACH
  EXPECT_NE(o.stdout_data.find("['lo']"), std::string::npos) << describe(o);
}

TEST(Network, LoopbackIsUpWithLargeSegments) {
  // sandbox/loopback.hpp: the sandbox's own lo takes segments as large as the kernel allows
  // (BIG TCP), which is what lets the egress relay keep up with a direct download.
  Outcome o = run(python(R"(
import socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
s.send(struct.pack("=IHHII", 32, 18, 1, 1, 0) + struct.pack("=BBHiII", 0, 0, 0, 1, 0, 0))
data = s.recv(65536)
flags = struct.unpack_from("=I", data, 24)[0]
attrs, off = {}, 32
while off + 4 <= len(data):
    length, kind = struct.unpack_from("=HH", data, off)
    if length < 4:
        break
    attrs[kind] = data[off + 4:off + length]
    off += (length + 3) & ~3
u32 = lambda kind: struct.unpack("=I", attrs[kind])[0] if kind in attrs else 0
print("up" if flags & 1 else "down", u32(59), u32(41), u32(63) or u32(41))
)"));
  ASSERT_EQ(o.verdict, Verdict::ok) << describe(o);
  unsigned tso_max = 0, gso = 0, gso_ipv4 = 0;
  char state[8] = {};
  ASSERT_EQ(std::sscanf(o.stdout_data.c_str(), "%7s %u %u %u", state, &tso_max, &gso, &gso_ipv4), 4)
      << describe(o);
  EXPECT_STREQ(state, "up");
  if (tso_max < kLoopbackSegmentBytes) GTEST_SKIP() << "this kernel's lo takes " << tso_max;
  EXPECT_EQ(gso, kLoopbackSegmentBytes) << describe(o);
  EXPECT_EQ(gso_ipv4, kLoopbackSegmentBytes) << describe(o);
}

TEST(Network, RawSocketsNeedCapabilitiesWeDropped) {
  Outcome o = run(python(R"(
import socket
for proto in [socket.IPPROTO_ICMP, socket.IPPROTO_TCP, 255]:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_RAW, proto)
        print("ESCAPED: raw socket", proto)
    except OSError as e:
        print("raw", e.errno)
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_NE(o.stdout_data.find("raw 1"), std::string::npos) << describe(o);  // EPERM
}

TEST(Network, LandlockDeniesTcpBindAndConnectInside) {
  if (landlock_abi() < 4) GTEST_SKIP() << "Landlock ABI " << landlock_abi() << " has no TCP rules";
  Outcome o = run(python(R"(
import socket
s = socket.socket()
try:
    s.bind(("127.0.0.1", 8080)); print("ESCAPED: bound")
except OSError as e:
    print("bind", e.errno)
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("bind 13"), std::string::npos) << describe(o);  // EACCES
}

TEST(Network, ListenerHandedToTheSupervisorIsReachableInside) {
  // The egress layer's mechanism: a socket made in the sandbox's namespace, accepted outside.
  Spec spec = python(R"(
import socket
c = socket.create_connection(("127.0.0.1", 3128), timeout=5)
c.sendall(b"ping"); print(c.recv(4).decode())
)");
  spec.network.loopback_listeners = {3128};
  spec.network.tcp_connect_ports = {3128};
  auto sb = Sandbox::launch(spec);
  ASSERT_TRUE(sb.ok()) << sb.error().message;
  auto listeners = (*sb)->take_listeners();
  ASSERT_EQ(listeners.size(), 1u);
  std::thread server([fd = listeners[0].get()] {
    int c = ::accept(fd, nullptr, nullptr);
    char buf[4];
    if (c >= 0 && ::recv(c, buf, 4, MSG_WAITALL) == 4) (void)!::send(c, "pong", 4, 0);
    if (c >= 0) ::close(c);
  });
  Outcome o = (*sb)->wait();
  server.join();
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "pong\n");
}

// ---------------------------------------------------------------------------------------
// Limits

TEST(Limits, ForkBombIsContained) {
  Spec spec = helper("hostile", {"forkbomb"});
  spec.limits.wall_time = 2s;
  spec.limits.pids = 32;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::timeout) << describe(o);
  if (o.usage.pids_peak) {
    EXPECT_LE(*o.usage.pids_peak, 32u) << describe(o);
    // The verdict is the timeout; the flag and the message tell of the limit.
    EXPECT_EQ(o.usage.pids_limit_hit, true) << describe(o);
    EXPECT_NE(o.message.find("hit the 32-process limit"), std::string::npos) << describe(o);
  } else {
    EXPECT_FALSE(o.usage.pids_limit_hit.has_value()) << "no pids cgroup, nothing to tell";
  }
}

TEST(Limits, ProcessCountStopsAtTheLimit) {
  Spec spec = python(R"(
import os, time
children = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        children += 1
except OSError as e:
    print("fork failed", e.errno)
print("children", children)
)");
  spec.limits.pids = 16;
  Outcome o = run(spec);
  // It coped with EAGAIN and exited 0: the verdict stays ok, the usage and message say that
  // the limit was hit (docs/sandbox.md).
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("fork failed 11"), std::string::npos) << describe(o);  // EAGAIN
  EXPECT_NE(o.stdout_data.find("children 15"), std::string::npos) << describe(o);
  if (o.usage.pids_peak) {
    EXPECT_EQ(o.usage.pids_limit_hit, true) << describe(o);
    EXPECT_NE(o.message.find("exited with status 0; it hit the 16-process limit ("),
              std::string::npos)
        << describe(o);
    Outcome calm = run(python("print(1)"));
    EXPECT_EQ(calm.usage.pids_limit_hit, false) << describe(calm);
    EXPECT_EQ(calm.message.find("limit"), std::string::npos) << describe(calm);
  }
}

TEST(Limits, MemoryBombIsMemoryLimit) {
  Spec spec = python("blocks = []\nwhile True:\n    blocks.append(bytearray(16 << 20))\n");
  spec.limits.memory_bytes = 128ULL << 20;
  Outcome o = run(spec);
  if (cgroup_support().limits_memory()) {
    EXPECT_EQ(o.verdict, Verdict::memory_limit) << describe(o);
    EXPECT_EQ(o.signal, SIGKILL);
    ASSERT_TRUE(o.usage.memory_peak_bytes);
    EXPECT_LE(*o.usage.memory_peak_bytes, 128ULL << 20);
  } else {
    // rlimit fallback (airlock doctor says so): the allocation fails inside the program.
    EXPECT_EQ(o.verdict, Verdict::exit_nonzero) << describe(o);
    EXPECT_NE(o.stderr_data.find("MemoryError"), std::string::npos) << describe(o);
  }
}

TEST(Limits, TenGigabyteAllocationIsMemoryLimit) {
  Outcome o = run(python("x = bytearray(10 * 1024**3)\nprint('ESCAPED: allocated')"));
  EXPECT_TRUE(no_escape(o));
  EXPECT_EQ(o.verdict, cgroup_support().limits_memory() ? Verdict::memory_limit : Verdict::exit_nonzero)
      << describe(o);
}

TEST(Limits, CpuSpinHitsTheCpuBudget) {
  Spec spec = helper("hostile", {"spin"});
  spec.limits.cpu_time = 1s;
  spec.limits.wall_time = 20s;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::cpu_time_limit) << describe(o);
  // At least half the budget (how the verdict reads a SIGXCPU; see cpu_slack_ns).
  EXPECT_GE(o.usage.cpu_user_ms + o.usage.cpu_sys_ms, 500u) << describe(o);
  EXPECT_LT(o.usage.wall_ms, 15000u) << describe(o);
}

TEST(Limits, CpuBudgetCountsEveryProcess) {
  // Four spinning processes share one budget: per-process RLIMIT_CPU alone would allow 4x.
  if (!cgroup_support().measures_cpu()) GTEST_SKIP() << "no cgroup CPU accounting here";
  Spec spec = python(R"(
import os
for _ in range(3):
    if os.fork() == 0:
        break
while True:
    pass
)");
  spec.limits.cpu_time = 2s;
  spec.limits.wall_time = 30s;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::cpu_time_limit) << describe(o);
  EXPECT_LT(o.usage.cpu_user_ms + o.usage.cpu_sys_ms, 3000u) << describe(o);
}

TEST(Limits, SpinWithoutBudgetIsTimeout) {
  Spec spec = helper("hostile", {"spin"});
  spec.limits.wall_time = 1s;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::timeout) << describe(o);
  EXPECT_EQ(o.exit_status(), 124);
  EXPECT_GE(o.usage.wall_ms, 1000u);
  // Processes killed with the pid namespace are reaped by the kernel, not by the init: their
  // CPU time must still be counted (it comes from the cgroup). How much it got of the second
  // depends on how busy the host is, so only "counted at all" is asserted.
  if (cgroup_support().measures_cpu()) {
    EXPECT_GT(o.usage.cpu_user_ms + o.usage.cpu_sys_ms, 0u) << describe(o);
  }
}

TEST(Limits, IgnoringSigtermDoesNotOutliveTheTimeout) {
  Spec spec = helper("hostile", {"sleep-ignore-term"});
  spec.limits.wall_time = 1s;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::timeout) << describe(o);
}

TEST(Limits, DoubleForkedDaemonDiesWithTheSandbox) {
  const std::string marker = "airlock-daemon-marker-" + test::unique();
  Outcome o = run(helper("hostile", {"daemon", marker}));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(test::host_processes_with(marker), 0) << "a sandboxed daemon outlived its sandbox";
}

TEST(Limits, SandboxDiesWithItsSupervisor) {
  // A supervisor killed with SIGKILL cannot clean up: the kernel must end its sandboxes.
  const std::string marker = "airlock-orphan-marker-" + test::unique();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t supervisor = ::fork();
  if (supervisor == 0) {
    Spec spec = helper("hostile", {"daemon", marker});  // leaves `sleep 3600 MARKER` behind
    spec.argv = {"/bin/sh", "-c", "/helpers/hostile daemon " + marker + "; echo up; sleep 3600"};
    spec.output_mode = OutputMode::caller;
    auto sb = Sandbox::launch(spec);
    if (!sb.ok()) ::_exit(1);
    UniqueFd out = (*sb)->take_stdout();
    test::read_line(out.get());
    (void)!::write(ready[1], "x", 1);
    (*sb)->wait();
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the sandbox did not start";
  ::close(ready[0]);
  EXPECT_GT(test::host_processes_with(marker), 0);
  ::kill(supervisor, SIGKILL);
  ::waitpid(supervisor, nullptr, 0);
  for (int i = 0; i < 250 && test::host_processes_with(marker) > 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(test::host_processes_with(marker), 0) << "a sandbox outlived its supervisor";
  // Nothing was left to remove its cgroups: the next supervisor collects them (the daemon
  // does at start), and they must then be gone.
  if (cgroup_support().mode != CgroupMode::none) {
    EXPECT_FALSE(test::cgroups_made_by(supervisor).empty()) << "control: none was made";
  }
  remove_stale_cgroups();
  for (const auto& dir : test::cgroups_made_by(supervisor))
    ADD_FAILURE() << dir << " was left after remove_stale_cgroups()";
}

TEST(Limits, FileDescriptorsStopAtNofile) {
  Spec spec = helper("hostile", {"fds"});
  spec.limits.open_files = 64;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("opened 61, then errno 24"), std::string::npos) << describe(o);
}

TEST(Limits, FillingTheDiskStopsAtTheDiskLimit) {
  Spec spec = helper("hostile", {"fill", "/work/fill"});
  spec.limits.disk_bytes = 8ULL << 20;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  long long wrote = -1;
  int err = 0;
  ASSERT_EQ(std::sscanf(o.stdout_data.c_str(), "wrote %lld bytes, then errno %d", &wrote, &err), 2)
      << describe(o);
  EXPECT_LE(wrote, 8LL << 20);
  EXPECT_TRUE(err == ENOSPC || err == EFBIG) << err;
}

TEST(Limits, StdoutFloodIsCappedAndCounted) {
  Spec spec = python("import sys\nsys.stdout.write('x' * (5 << 20))\n");
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::output_limit) << describe(o);
  EXPECT_EQ(o.stdout_data.size(), 1u << 20);
  EXPECT_EQ(o.stdout_discarded_bytes, 4u << 20);
  EXPECT_TRUE(o.stdout_truncated);
  EXPECT_EQ(o.exit_code, 0);
}

TEST(Limits, EndlessFloodStopsAtOnceWhenAsked) {
  Spec spec = helper("hostile", {"flood"});
  spec.kill_on_output_limit = true;
  spec.limits.output_bytes = 64 << 10;
  spec.limits.wall_time = 30s;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::output_limit) << describe(o);
  EXPECT_EQ(o.stdout_data.size(), 64u << 10);
  EXPECT_LT(o.usage.wall_ms, 20000u);
}

TEST(Limits, HardRlimitsCannotBeRaised) {
  Outcome o = run(python(R"(
import resource
for name in ["RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_CORE"]:
    r = getattr(resource, name)
    soft, hard = resource.getrlimit(r)
    try:
        resource.setrlimit(r, (hard + 1, hard + 1))
        print("ESCAPED: raised", name)
    except (ValueError, OSError) as e:
        print(name, "stays", hard)
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o));
  EXPECT_NE(o.stdout_data.find("RLIMIT_NOFILE stays 256"), std::string::npos) << describe(o);
}

// ---------------------------------------------------------------------------------------
// Identity, environment and exact verdicts

TEST(Identity, NoCapabilitiesNoNewPrivsFilterInstalled) {
  Outcome o = run(python(R"(
import os
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
for k in ["Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"]:
    print(k, " ".join(status[k].split()))
import socket; print("hostname", socket.gethostname())
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  for (const char* line : {"Uid 1000 1000 1000 1000", "Gid 1000 1000 1000 1000",
                           "CapInh 0000000000000000", "CapPrm 0000000000000000",
                           "CapEff 0000000000000000", "CapBnd 0000000000000000",
                           "CapAmb 0000000000000000", "NoNewPrivs 1", "Seccomp 2",
                           "hostname airlock"})
    EXPECT_NE(o.stdout_data.find(line), std::string::npos) << line << describe(o);
  if (::geteuid() == 0) {
    EXPECT_NE(o.stdout_data.find("Groups \n"), std::string::npos) << describe(o);
  }
}

TEST(Identity, EnvironmentIsOnlyWhatWeGive) {
  ::setenv("AIRLOCK_TEST_SUPERVISOR_SECRET", "must-not-leak", 1);
  Spec spec = python("import os\nprint(sorted(os.environ.items()))");
  spec.env["TOOL_SETTING"] = "on";
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data,
            "[('HOME', '/work'), ('LANG', 'C.UTF-8'), ('PATH', '/usr/local/bin:/usr/bin:/bin'), "
            "('TOOL_SETTING', 'on')]\n")
      << describe(o);
}

TEST(Identity, NoDescriptorOfTheSupervisorReachesTheProgram) {
  UniqueFd leaked(::open("/etc/hostname", O_RDONLY));  // without O_CLOEXEC on purpose
  Outcome o = run(python("import os\nprint(sorted(int(f) for f in os.listdir('/proc/self/fd')))"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "[0, 1, 2, 3]\n") << describe(o);  // 3: listdir's own
}

TEST(Verdicts, ExitCodesAndSignalsAreReportedExactly) {
  Outcome exit3 = run(python("raise SystemExit(3)"));
  EXPECT_EQ(exit3.verdict, Verdict::exit_nonzero);
  EXPECT_EQ(exit3.exit_code, 3);
  EXPECT_EQ(exit3.exit_status(), 3);
  Outcome segv = run(python("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"));
  EXPECT_EQ(segv.verdict, Verdict::signaled) << describe(segv);
  EXPECT_EQ(segv.signal, SIGSEGV);
  EXPECT_EQ(segv.exit_status(), 128 + SIGSEGV);
  Outcome ok = run(python("print('fine')"));
  EXPECT_EQ(ok.verdict, Verdict::ok);
  EXPECT_EQ(ok.exit_status(), 0);
}

TEST(Verdicts, AReadableStopFdEndsTheRunAndIsLeftForTheCaller) {
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC));
  ASSERT_TRUE(stop);
  Spec spec;
  spec.argv = {"/bin/sleep", "30"};
  spec.stop_fd = stop.get();
  std::thread poke([&] {
    std::this_thread::sleep_for(300ms);
    std::uint64_t one = 1;
    (void)!::write(stop.get(), &one, sizeof one);
  });
  Outcome o = run(spec);
  poke.join();
  EXPECT_EQ(o.verdict, Verdict::signaled) << describe(o);
  EXPECT_NE(o.message.find("stopped by its supervisor"), std::string::npos) << describe(o);
  std::uint64_t value = 0;  // polled, never read: the caller still finds what was written
  EXPECT_EQ(::read(stop.get(), &value, sizeof value), static_cast<ssize_t>(sizeof value));
  EXPECT_EQ(value, 1u);
}

TEST(Verdicts, SetupErrorsNameWhatFailed) {
  Spec missing;
  missing.argv = {"no-such-command-anywhere"};
  Outcome o = run(missing);
  EXPECT_EQ(o.verdict, Verdict::setup_error);
  EXPECT_EQ(o.exit_status(), 125);
  EXPECT_NE(o.message.find("no-such-command-anywhere"), std::string::npos) << o.message;

  Spec bad_bind = python("pass");
  bad_bind.binds.push_back({"/nonexistent/airlock/path", "/data", false});
  o = run(bad_bind);
  EXPECT_EQ(o.verdict, Verdict::setup_error);
  EXPECT_NE(o.message.find("/nonexistent/airlock/path"), std::string::npos) << o.message;

  Spec onto_proc = python("pass");
  onto_proc.binds.push_back({"/usr", "/proc/sys", false});
  o = run(onto_proc);
  EXPECT_EQ(o.verdict, Verdict::setup_error);
  EXPECT_NE(o.message.find("/proc"), std::string::npos) << o.message;
}

// A FUSE filesystem whose daemon never answers (not even the kernel's INIT): every lookup
// beneath it waits, as on a dead NFS server, until the connection is aborted (the end).
class HungFuseMount {
 public:
  HungFuseMount() {
    fuse_.reset(::open("/dev/fuse", O_RDWR | O_CLOEXEC));
    if (!fuse_) return;
    const std::string options =
        "fd=" + std::to_string(fuse_.get()) + ",rootmode=40000,user_id=0,group_id=0,allow_other";
    mounted_ = ::mount("airlock-hung", dir_.path().c_str(), "fuse.airlock-hung", 0, options.c_str()) == 0;
  }
  ~HungFuseMount() { abort(); }
  // Aborts the connection: whatever waits on the filesystem gets ENOTCONN.
  void abort() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
    mounted_ = false;
    fuse_.reset();
  }
  bool mounted() const { return mounted_; }
  std::string path() const { return dir_.path(); }

 private:
  test::TempDir dir_;
  UniqueFd fuse_;
  bool mounted_ = false;
};

// A bind whose source lies on a filesystem that stopped answering: preparing the sandbox
// fails as setup_error once the setup time has passed, long before the wall time (a session's
// is hours), and the caller's thread is not held. The lookup left waiting ends when the
// filesystem is aborted.
TEST(Setup, ABindOnAHungFilesystemFailsAfterTheSetupTimeNotTheWallTime) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a FUSE filesystem needs root";
  HungFuseMount hung;
  if (!hung.mounted()) GTEST_SKIP() << "no FUSE here: " << std::strerror(errno);
  const std::size_t hung_before = hung_lookups();
  Spec spec = python("print('ESCAPED: it ran')");
  spec.binds.push_back({hung.path() + "/data", "/data", false});
  spec.limits.wall_time = std::chrono::hours(24);
  spec.limits.setup_time = 1500ms;
  // Without the bound the run would wait for good: after 20 s the filesystem is aborted,
  // which ends the wait (and fails the test).
  std::atomic<bool> returned{false}, aborted{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 2000 && !returned; ++i) std::this_thread::sleep_for(10ms);
    if (!returned) {
      aborted = true;
      hung.abort();
    }
  });
  Outcome o = run(spec);
  returned = true;
  watchdog.join();
  ASSERT_FALSE(aborted) << "preparing the sandbox waited on the hung filesystem until it was aborted";
  EXPECT_EQ(o.verdict, Verdict::setup_error) << describe(o);
  EXPECT_NE(o.message.find("did not answer a lookup within 1500 ms"), std::string::npos) << o.message;
  EXPECT_EQ(o.stdout_data, "");
  EXPECT_EQ(hung_lookups(), hung_before + 1);
  hung.abort();
  for (int i = 0; i < 200 && hung_lookups() > hung_before; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(hung_lookups(), hung_before) << "the lookup left waiting ended with the filesystem";

  Spec fine = python("print('ran')");  // and the next run is prepared as before
  fine.limits.setup_time = 1500ms;
  EXPECT_EQ(run(fine).stdout_data, "ran\n");
}

TEST(Io, StdinIsFedAndWorkdirIsHome) {
  Spec spec = python("import os, sys\nprint(sys.stdin.read().upper(), os.getcwd(), os.environ['HOME'])");
  spec.stdin_source.kind = StdinSource::Kind::bytes;
  spec.stdin_source.bytes = "hello";
  spec.workdir = "/home/tool";
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "HELLO /home/tool /home/tool\n");
}

TEST(Io, ProgramThatNeverReadsItsStdinCannotKillTheSupervisor) {
  // 4 MiB of input for a program that exits at once: the supervisor's writes hit a pipe with
  // no reader. This test binary does not ignore SIGPIPE, so a plain write() would kill it.
  Spec spec;
  spec.argv = {"/bin/true"};
  spec.stdin_source.kind = StdinSource::Kind::bytes;
  spec.stdin_source.bytes.assign(4u << 20, 'x');
  for (int i = 0; i < 20; ++i) {
    Outcome o = run(spec);
    ASSERT_EQ(o.verdict, Verdict::ok) << describe(o);
  }
}

// ---------------------------------------------------------------------------------------
// Terminals (Spec::tty): a pty of the sandbox's own devpts instance, nothing of the host's

Spec with_tty(Spec spec, std::uint16_t rows = 24, std::uint16_t columns = 80) {
  spec.tty = Terminal{};
  spec.tty->rows = rows;
  spec.tty->columns = columns;
  return spec;
}

TEST(Terminal, ProgramGetsATerminalOfItsOwnWithTheSpecsSize) {
  Outcome o = run(with_tty(python(R"(
import fcntl, os, struct, termios
print("isatty", os.isatty(0), os.isatty(1), os.isatty(2))
print("ttyname", os.ttyname(0), os.ttyname(1), os.ttyname(2))
rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(1, termios.TIOCGWINSZ, b"\0" * 8))
print("winsize", rows, cols)
print("session leader", os.getsid(0) == os.getpid(), "foreground", os.tcgetpgrp(0) == os.getpgrp())
print("pts", sorted(os.listdir("/dev/pts")), os.readlink("/dev/ptmx"))
with open("/dev/tty", "w") as tty: tty.write("through /dev/tty\n")
print("fds", sorted(int(f) for f in os.listdir("/proc/self/fd")))
import sys; print("to stderr", file=sys.stderr)
)"), 33, 101));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  for (const char* line :
       {"isatty True True True\r\n", "ttyname /dev/pts/0 /dev/pts/0 /dev/pts/0\r\n",
        "winsize 33 101\r\n", "session leader True foreground True\r\n",
        "pts ['0', 'ptmx'] pts/ptmx\r\n", "through /dev/tty\r\n", "fds [0, 1, 2, 3]\r\n",
        "to stderr\r\n"})
    EXPECT_NE(o.stdout_data.find(line), std::string::npos) << line << describe(o);
  EXPECT_EQ(o.stderr_data, "");  // the terminal carries both streams
}

TEST(Terminal, TtyPrintsThePtyOfTheNewInstance) {
  Spec spec;
  spec.argv = {"tty"};
  Outcome o = run(with_tty(spec));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "/dev/pts/0\r\n") << describe(o);
}

TEST(Terminal, HostPtysAreNotVisible) {
  // Host ptys of ours, at least one numbered above 0 (the sandbox's own pty is 0 in its
  // instance): none may be listed, opened or share the sandbox's devpts.
  struct stat host_devpts {};
  ASSERT_EQ(::stat("/dev/pts", &host_devpts), 0) << strerror(errno);
  std::vector<UniqueFd> host_ptys;
  std::vector<std::string> args = {std::to_string(host_devpts.st_dev)};
  int highest = -1;
  while (highest < 1) {
    UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    ASSERT_TRUE(master) << strerror(errno);
    ASSERT_EQ(::unlockpt(master.get()), 0);
    int number = -1;
    ASSERT_EQ(::ioctl(master.get(), TIOCGPTN, &number), 0);
    std::string path = "/dev/pts/" + std::to_string(number);
    ASSERT_TRUE(std::filesystem::exists(path)) << path;  // control: it is there on the host
    highest = std::max(highest, number);
    args.push_back(std::to_string(number));
    host_ptys.push_back(std::move(master));
  }
  Outcome o = run(with_tty(python(R"(
import os, sys
host_dev = int(sys.argv[1])
print("entries", sorted(os.listdir("/dev/pts")))
print("same devpts as the host", os.stat("/dev/pts").st_dev == host_dev)
print("stdin on our devpts", os.fstat(0).st_dev == os.stat("/dev/pts").st_dev)
for n in sys.argv[2:]:
    if n == "0":
        continue  # the sandbox's own pty has that number in its instance
    try:
        os.close(os.open("/dev/pts/" + n, os.O_RDWR | os.O_NOCTTY))
        print("ESCAPED: opened host pty", n)
    except OSError as e:
        print("host pty", n, "errno", e.errno)
)", args)));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_TRUE(no_escape(o)) << describe(o);
  EXPECT_NE(o.stdout_data.find("entries ['0', 'ptmx']\r\n"), std::string::npos) << describe(o);
  EXPECT_NE(o.stdout_data.find("same devpts as the host False\r\n"), std::string::npos)
      << describe(o);
  EXPECT_NE(o.stdout_data.find("stdin on our devpts True\r\n"), std::string::npos) << describe(o);
  EXPECT_NE(o.stdout_data.find("host pty " + std::to_string(highest) + " errno 2\r\n"),
            std::string::npos)
      << describe(o);
}

TEST(Terminal, TerminalIoctlsWorkOnReopenedAndNewPtys) {
  // Under Landlock (ABI >= 5 handles device ioctls): the pty reopened by name, /dev/tty and a
  // second pty from /dev/ptmx must all take terminal ioctls.
  Outcome o = run(with_tty(python(R"(
import fcntl, os, termios
fd = os.open(os.ttyname(0), os.O_RDWR | os.O_NOCTTY)
print("reopened", termios.tcgetattr(fd)[3] & termios.ICANON != 0, len(fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)))
tty = os.open("/dev/tty", os.O_RDWR)
print("dev tty", termios.tcgetattr(tty)[3] & termios.ECHO != 0)
m, s = os.openpty()
print("new pty", os.ttyname(s))
termios.tcsetattr(s, termios.TCSANOW, termios.tcgetattr(s))
os.write(s, b"ping\n"); print("master got", os.read(m, 100))
)")));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  for (const char* line : {"reopened True 8\r\n", "dev tty True\r\n", "new pty /dev/pts/1\r\n",
                           "master got b'ping\\r\\n'\r\n"})
    EXPECT_NE(o.stdout_data.find(line), std::string::npos) << line << describe(o);
}

TEST(Terminal, TiocstiOnItsOwnTerminalIsAViolation) {
  for (const char* request : {"TIOCSTI", "TIOCLINUX"}) {
    Outcome o = run(with_tty(python(R"(
import fcntl, os, sys, termios
print("stdin is a tty", os.isatty(0), flush=True)
fcntl.ioctl(0, getattr(termios, sys.argv[1], 0x541C), b"x" * 8)
print("ESCAPED:", sys.argv[1], "returned")
)", {request})));
    EXPECT_EQ(o.verdict, Verdict::seccomp_violation) << request << describe(o);
    EXPECT_EQ(o.syscall.value_or(""), "ioctl") << describe(o);
    EXPECT_NE(o.stdout_data.find("stdin is a tty True"), std::string::npos) << describe(o);
    EXPECT_TRUE(no_escape(o)) << describe(o);
  }
}

TEST(Terminal, OutputThroughTheTerminalIsCappedAndCounted) {
  Spec spec = with_tty(python("import sys\nsys.stdout.write('x' * 300000)\nsys.stdout.flush()\n"));
  spec.limits.output_bytes = 64 << 10;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::output_limit) << describe(o);
  EXPECT_EQ(o.stdout_data, std::string(64 << 10, 'x'));
  EXPECT_TRUE(o.stdout_truncated);
  EXPECT_EQ(o.stdout_discarded_bytes, 300000u - (64u << 10));
  EXPECT_EQ(o.exit_code, 0);
}

TEST(Terminal, OutputAfterTheTerminalIsClosedAndReopenedIsRead) {
  // With every descriptor of its terminal closed, then /dev/tty reopened: what it writes
  // must still come out, and a write larger than the pty holds must not block it for good.
  Spec spec = with_tty(python(R"(
import os, time
print("before", flush=True)
for fd in (0, 1, 2):
    os.close(fd)
time.sleep(0.3)
with open("/dev/tty", "w") as tty:
    tty.write("x" * 200000)
    tty.write("\ndone\n")
)"));
  spec.limits.wall_time = 15s;
  Outcome o = run(spec);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data.rfind("before\r\n", 0), 0u) << describe(o);
  EXPECT_EQ(std::count(o.stdout_data.begin(), o.stdout_data.end(), 'x'), 200000) << describe(o);
  EXPECT_NE(o.stdout_data.find("\r\ndone\r\n"), std::string::npos) << describe(o);
}

TEST(Terminal, InputIsTypedIntoTheTerminalAndEnds) {
  Spec line = with_tty(python("print(input().upper())"));
  line.stdin_source.kind = StdinSource::Kind::bytes;
  line.stdin_source.bytes = "hello\n";
  Outcome o = run(line);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "hello\r\nHELLO\r\n") << describe(o);  // the echo, then the answer

  // Input without a final newline and a reader that waits for end-of-file: it must end.
  Spec partial = with_tty(python("import sys\nprint(repr(sys.stdin.read()))"));
  partial.stdin_source.kind = StdinSource::Kind::bytes;
  partial.stdin_source.bytes = "no newline";
  partial.limits.wall_time = 20s;
  o = run(partial);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("'no newline'\r\n"), std::string::npos) << describe(o);

  // More input than the pty holds at once: the end-of-file still arrives after the last line.
  Spec many = with_tty(python("import sys\nprint('lines', len(sys.stdin.readlines()))"));
  many.stdin_source.kind = StdinSource::Kind::bytes;
  for (int i = 0; i < 20000; ++i) many.stdin_source.bytes += std::to_string(i) + "\n";
  many.limits.wall_time = 20s;
  o = run(many);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("lines 20000\r\n"), std::string::npos) << describe(o);

  // No input at all: end-of-file at once, as with a pipe.
  Spec none = with_tty(python("import sys\nprint(repr(sys.stdin.read()))"));
  none.limits.wall_time = 20s;
  o = run(none);
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_EQ(o.stdout_data, "''\r\n") << describe(o);
}

TEST(Terminal, WithoutTtyThereIsNoTerminalAtAll) {
  Outcome o = run(python(R"(
import os
print("isatty", os.isatty(0), os.isatty(1), os.isatty(2))
print("exist", [os.path.lexists(p) for p in ["/dev/pts", "/dev/ptmx", "/dev/tty", "/dev/console"]])
print("dev", sorted(os.listdir("/dev")))
)"));
  EXPECT_EQ(o.verdict, Verdict::ok) << describe(o);
  EXPECT_NE(o.stdout_data.find("isatty False False False\n"), std::string::npos) << describe(o);
  EXPECT_NE(o.stdout_data.find("exist [False, False, False, False]\n"), std::string::npos)
      << describe(o);
  EXPECT_NE(o.stdout_data.find("dev ['fd', 'full', 'null', 'random', 'shm', 'stderr', 'stdin', "
                               "'stdout', 'urandom', 'zero']\n"),
            std::string::npos)
      << describe(o);
}

TEST(Terminal, SpecsThatCannotHaveATerminalAreRefused) {
  Spec caller = with_tty(python("pass"));
  caller.output_mode = OutputMode::caller;
  EXPECT_FALSE(validate_spec(caller));
  Spec empty = with_tty(python("pass"), 0, 80);
  Outcome o = run(empty);
  EXPECT_EQ(o.verdict, Verdict::setup_error) << describe(o);
  EXPECT_NE(o.message.find("window size"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace airlock::sandbox

namespace airlock::sandbox {
namespace {

// Each ctest entry says which regime it asked for (tests/sandbox/CMakeLists.txt and
// tests/run-unprivileged.sh); this fails if a runner silently fell back to another one.
TEST(Regime, IsTheOneThisRunAskedFor) {
  const char* uid = std::getenv("AIRLOCK_TEST_EXPECT_UID");
  const char* cgroup = std::getenv("AIRLOCK_TEST_EXPECT_CGROUP");
  const auto& cg = cgroup_support();
  const std::string want_uid = uid ? uid : "", want = cgroup ? cgroup : "";
  if (want_uid == "unprivileged") {
    EXPECT_NE(::geteuid(), 0u);
  }
  if (want == "none") {
    EXPECT_EQ(cg.mode, CgroupMode::none) << cg.why_not;
  } else if (want == "v2") {
    EXPECT_EQ(cg.mode, CgroupMode::v2) << cg.why_not;
  } else if (want == "v2-limits") {  // a pure v2 host with a delegated subtree (tests/vm)
    EXPECT_EQ(cg.mode, CgroupMode::v2) << cg.why_not;
    EXPECT_TRUE(cg.limits_memory()) << cg.why_not;
    EXPECT_TRUE(cg.limits_pids()) << cg.why_not;
  } else if (want == "limits") {
    EXPECT_NE(cg.mode, CgroupMode::none) << cg.why_not;
    EXPECT_TRUE(cg.limits_memory()) << cg.why_not;
    EXPECT_TRUE(cg.limits_pids()) << cg.why_not;
  }
}

}  // namespace
}  // namespace airlock::sandbox
