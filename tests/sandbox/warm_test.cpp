// Warm templates (sandbox/warm/warm.hpp) as an executable threat model: what one call leaves
// behind, or holds while it runs, must not reach another call of the same template; and a
// warm call's limits give the verdicts a cold run gives. The tool is the real runner in
// template mode with the real libairlock_warm.so.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "sandbox/cgroup.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/warm/warm.hpp"
#include "test_support.hpp"

namespace airlock::sandbox {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// One tool whose run(args) does what args["do"] says.
constexpr const char* kTool = R"PY(
import os, socket, subprocess, sys, threading, time

STATE = "clean"

def leave_everything_behind(args):
    global STATE
    STATE = "dirty"
    os.path.airlock_left = "dirty"
    open("/tmp/left", "w").write("x")
    open("left", "w").write("x")
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
    subprocess.Popen(["sleep", "30"])
    LISTENERS.extend(listen(9000, "airlock-warm-left"))
    os.environ["AIRLOCK_LEFT"] = "dirty"
    return {"done": True}

LISTENERS = []

def listen(port, name):
    # An abstract Unix socket always; TCP where Landlock lets it bind (ABI < 4 only).
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0" + name)
    abstract.listen()
    listeners = [abstract]
    try:
        tcp = socket.socket()
        tcp.bind(("127.0.0.1", port))
        tcp.listen()
        listeners.append(tcp)
    except PermissionError:
        pass
    return listeners

def tcp_connects(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False

def abstract_connects(name):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\0" + name)
        return True
    except OSError:
        return False

def processes():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())

def look(args):
    return {
        "state": STATE,
        "module_attribute": getattr(os.path, "airlock_left", None),
        "tmp_file": os.path.exists("/tmp/left"),
        "work_file": os.path.exists("left"),
        "threads": threading.active_count(),
        "processes": processes(),
        "tcp_9000": tcp_connects(9000),
        "abstract": abstract_connects("airlock-warm-left"),
        "env": os.environ.get("AIRLOCK_LEFT"),
    }

def hold(args):
    # Listens, then waits for the other call to have tried.
    held = listen(9001, "airlock-warm-hold")
    time.sleep(args["seconds"])
    return {"pid": os.getpid(), "processes": processes()}

def probe(args):
    seen = processes()
    try:
        os.kill(-1, 9)  # every process it may signal, but itself and its init
    except OSError:
        pass
    return {"pid": os.getpid(), "processes": seen,
            "tcp_9001": tcp_connects(9001), "abstract": abstract_connects("airlock-warm-hold")}

def heap_has(prefix, suffix):
    # Looks for prefix+suffix without ever making that string: each hit of the prefix is
    # checked for the suffix right after it.
    p, s = prefix.encode(), suffix.encode()
    found = []
    environ = open("/proc/self/environ", "rb").read()
    if p + s in environ:
        found.append("environ")
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1] or (len(fields) > 5 and fields[5].startswith("[v")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except OSError:
                continue
            at = chunk.find(p)
            while at >= 0:
                if chunk[at + len(p):at + len(p) + len(s)] == s:
                    found.append(fields[0])
                    break
                at = chunk.find(p, at + 1)
    return found

def secret(args):
    return {"found": heap_has(args["prefix"], args["suffix"]),
            "env": os.environ.get("AIRLOCK_SECRET") is not None}

def reach_init(args):
    # Init shares the template's memory: each way in must be refused.
    reached = {}
    for name in ("mem", "environ", "maps", "fd", "root"):
        path = "/proc/1/" + name
        try:
            if name == "root":
                os.listdir(path)
            elif name == "fd":  # the numbers are listed; following one is the way in
                opened = 0
                for fd in os.listdir(path):
                    try:
                        os.close(os.open(path + "/" + fd, os.O_RDONLY | os.O_NONBLOCK))
                        opened += 1
                    except OSError:
                        pass
                if not opened:
                    raise PermissionError(path)
            else:
                with open(path, "rb", 0) as f:
                    if name == "mem":
                        start = int(open("/proc/1/maps").readline().split("-")[0], 16)
                        f.seek(start)
                    f.read(16)
            reached[name] = True
        except OSError as e:
            reached[name] = False
            reached[name + "_refused"] = str(e)
    # Python's SIGINT handler, run in the template's memory, would end the template. (Landlock
    # may refuse the signal itself: init is outside the tool's domain.)
    try:
        os.kill(1, 2)
        reached["signal_sent"] = True
    except PermissionError:
        reached["signal_sent"] = False
    time.sleep(0.2)
    return reached

def bomb(args):
    hog = []
    while True:
        hog.append(bytearray(16 << 20))

def spin(args):
    while True:
        pass

def fork_many(args):
    children = 0
    try:
        for _ in range(200):
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            children += 1
    except OSError as e:
        return {"children": children, "errno": e.errno}
    return {"children": children, "errno": None}

def through_proxy_port(args):
    # A networked call: says its name on the proxy's port (its own listener, which the test
    # reads), then tries to bind that port and another: its Landlock refuses both.
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    s.sendall(args["say"].encode())
    binds = {}
    for port in (3128, 3129):
        try:
            socket.socket().bind(("127.0.0.1", port))
            binds[str(port)] = "bound"
        except OSError as e:
            binds[str(port)] = e.errno
    return {"binds": binds}

def cgroup_view(args):
    return {"cgroup": open("/proc/self/cgroup").read().splitlines()}

def run(args):
    return globals()[args["do"]](args)
)PY";

// A template like the runner's template mode whose call burns a second and a half of CPU
// before it reads any input (as a prepared child's setup does, in its cgroup), in three
// processes of half a second each (each process has RLIMIT_CPU too), says so in /out, then
// does what its input says: "spin" spins, anything else is echoed.
constexpr const char* kSpinningTemplate = R"PY(
import ctypes, os, sys, time
warm = ctypes.CDLL("/airlock-warm/libairlock_warm.so")
os.write(7, b"R")
while True:
    got = warm.airlock_warm_receive(7)
    if got == 0:
        sys.exit(0)
    if got == 1 and warm.airlock_warm_start() == 0:
        break
    warm.airlock_warm_reap()
def burn():
    start = time.process_time()
    while time.process_time() - start < 0.5:
        pass
    os._exit(0)
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        burn()
    os.waitpid(pid, 0)
open("/out/spun", "w").close()
what = sys.stdin.read()
while what == "spin":
    pass
sys.stdout.write(what)
sys.stdout.flush()
os._exit(0)
)PY";

// A template (tool code imported, no Landlock, no seccomp) that goes for its cgroup tree
// (cgroup v2: WarmCgroupTree, seen read-only) before it says it is ready: it tries to raise
// its own and the tree's limits, to add a cgroup, and to climb out of the tree's mount. What
// it got goes to /out/tried; then it serves calls like the runner (echoing the input).
constexpr const char* kTreeClimbingTemplate = R"PY(
import ctypes, errno, json, os, sys
warm = ctypes.CDLL("/airlock-warm/libairlock_warm.so")
tree = "/airlock-warm-cgroup"
tried = {"tree": os.path.isdir(tree)}
for name in ("template/memory.max", "template/pids.max", "memory.max", "cgroup.procs",
             "cgroup.subtree_control", "template/cgroup.procs"):
    try:
        with open(os.path.join(tree, name), "w") as f:
            f.write("max")
        tried[name] = "written"
    except OSError as e:
        tried[name] = errno.errorcode.get(e.errno, str(e.errno))
try:
    os.mkdir(tree + "/more")
    tried["mkdir"] = "made"
except OSError as e:
    tried["mkdir"] = errno.errorcode.get(e.errno, str(e.errno))
up, root = os.stat(tree + "/.."), os.stat("/")
tried["parent_is_the_sandbox_root"] = (up.st_dev, up.st_ino) == (root.st_dev, root.st_ino)
open("/out/tried", "w").write(json.dumps(tried))
os.write(7, b"R")
while True:
    got = warm.airlock_warm_receive(7)
    if got == 0:
        sys.exit(0)
    if got == 1 and warm.airlock_warm_start() == 0:
        break
    warm.airlock_warm_reap()
sys.stdout.write(sys.stdin.read())
sys.stdout.flush()
os._exit(0)
)PY";

// What the template runs: a tool module (runtime.python), or nothing but the runner, each
// call's code arriving with its arguments (runtime.python-code: the same tool as a cell), or
// a tool module with network rules: shaped as backend::SandboxEgress::behind_proxy shapes it
// (the proxy's listener, the only port it may connect to), each call opening its listener in
// its own network namespace (tests/egress/warm_egress_test.cpp runs the proxy's probes on it).
enum class Runtime { module, code, networked };
constexpr std::uint16_t kProxyPort = 3128;

class WarmTemplateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    library_ = warm_library_path();
    ASSERT_FALSE(library_.empty()) << "libairlock_warm.so is not built";
    tool_dir_.write("tool.py", kTool);
    if (auto why = warm_calls_unsupported()) {
      // Where the run asked for warm calls (tests/vm: a pure v2 host), their absence fails.
      if (std::getenv("AIRLOCK_TEST_EXPECT_WARM")) FAIL() << "warm calls are refused: " << *why;
      GTEST_SKIP() << "warm calls are refused here (WarmCallsAreRefusedWithoutCgroups): " << *why;
    }
  }

  virtual Runtime runtime() const { return Runtime::module; }

  std::vector<std::string> template_argv() const {
    if (runtime() == Runtime::code) return {"python3", "-I", "-S", "/airlock/airlock_runner.py", "code-template"};
    return {"python3", "-I", "-S", "/airlock/airlock_runner.py", "template", "/tool/tool.py"};
  }

  // A call's arguments: the tool's own, or (python-code) the tool as the call's code.
  json arguments_for(const json& arguments) const {
    if (runtime() == Runtime::code) return {{"code", kTool}, {"arguments", arguments}};
    return arguments;
  }

  Spec base_spec() const {
    Spec spec;
    spec.binds.push_back({AIRLOCK_RUNNER_DIR, "/airlock", false});
    spec.binds.push_back({library_, kWarmLibraryInSandbox, false});
    spec.binds.push_back({tool_dir_.path(), "/tool", false});
    spec.limits.wall_time = 60s;
    if (runtime() == Runtime::networked) spec.network = {{kProxyPort}, {kProxyPort}};
    return spec;
  }

  // Launched on the test's thread, which then supervises it from another (wait()).
  std::unique_ptr<WarmTemplate> start_template() {
    Spec spec = base_spec();
    spec.argv = template_argv();
    spec.limits.pids = 1024;
    auto t = WarmTemplate::launch(spec, 10s);
    EXPECT_TRUE(t) << (t ? "" : t.error().message);
    return t ? std::move(*t) : nullptr;
  }

  // The template's binds (its Landlock rules are the call's), the call's own limits and input.
  Spec call_spec(const json& arguments, const json& env = json::object()) const {
    Spec spec = base_spec();
    spec.argv = template_argv();
    spec.limits.wall_time = 30s;
    spec.stdin_source.kind = StdinSource::Kind::bytes;
    spec.stdin_source.bytes = json{{"env", env}, {"arguments", arguments_for(arguments)}}.dump();
    return spec;
  }

  static Outcome call(WarmTemplate& t, const Spec& spec) {
    auto sandbox = t.start_call(spec);
    if (!sandbox) {
      Outcome o;
      o.verdict = Verdict::setup_error;
      o.message = sandbox.error().message;
      return o;
    }
    // A networked call's child hands over its listener, made in its own network namespace.
    EXPECT_EQ((*sandbox)->take_listeners().size(), spec.network.loopback_listeners.size());
    return (*sandbox)->wait();
  }

  // What run(args) returned (a python-code call answers {"result": ..., "stdout": ...}).
  json result_of(const Outcome& o) const {
    EXPECT_EQ(o.verdict, Verdict::ok) << test::describe(o);
    auto j = json::parse(o.stdout_data, nullptr, false);
    EXPECT_TRUE(j.is_object()) << test::describe(o);
    if (runtime() == Runtime::code && j.is_object()) {
      EXPECT_TRUE(j.contains("result")) << j;
      return j.value("result", json());
    }
    return j;
  }

  // A cold run of the same tool in the same limits, for comparison.
  Outcome cold(const Spec& call) const {
    Spec spec = base_spec();
    spec.argv = {"python3", "-I", "-S", "/airlock/airlock_runner.py", "module", "/tool/tool.py"};
    if (runtime() == Runtime::code) spec.argv = {"python3", "-I", "-S", "/airlock/airlock_runner.py", "code"};
    spec.limits = call.limits;
    spec.network = {};  // sandbox::run serves no listener; the proxy is the backend's
    spec.stdin_source.kind = StdinSource::Kind::bytes;
    spec.stdin_source.bytes = json::parse(call.stdin_source.bytes)["arguments"].dump();
    return run(spec);
  }

  std::string library_;
  test::TempDir tool_dir_;
};

// The threat model every template of the runner keeps, run on a module tool's and on a
// python-code tool's.
class WarmToolTest : public WarmTemplateTest, public ::testing::WithParamInterface<Runtime> {
 protected:
  Runtime runtime() const override { return GetParam(); }
};

std::string runtime_name(const ::testing::TestParamInfo<Runtime>& p) {
  switch (p.param) {
    case Runtime::code: return "PythonCode";
    case Runtime::networked: return "Networked";
    case Runtime::module: break;
  }
  return "Module";
}

INSTANTIATE_TEST_SUITE_P(Runtimes, WarmToolTest,
                         ::testing::Values(Runtime::module, Runtime::code, Runtime::networked),
                         runtime_name);

// Supervises a template on a thread of its own, as the daemon does; retires it at the end.
struct Supervised {
  std::unique_ptr<WarmTemplate> t;
  std::future<Outcome> ended;
  explicit Supervised(std::unique_ptr<WarmTemplate> tmpl) : t(std::move(tmpl)) {
    WarmTemplate* raw = t.get();
    ended = std::async(std::launch::async, [raw] { return raw->wait(); });
  }
  ~Supervised() {
    if (!t) return;
    t->retire();
    ended.wait();
  }
};

TEST_P(WarmToolTest, WhatOneCallLeavesBehindTheNextDoesNotSee) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  json first = result_of(call(*s.t, call_spec({{"do", "leave_everything_behind"}})));
  EXPECT_EQ(first["done"], true);
  json second = result_of(call(*s.t, call_spec({{"do", "look"}})));
  EXPECT_EQ(second["state"], "clean") << second;
  EXPECT_TRUE(second["module_attribute"].is_null()) << second;
  EXPECT_EQ(second["tmp_file"], false) << second;
  EXPECT_EQ(second["work_file"], false) << second;
  EXPECT_EQ(second["threads"], 1) << second;
  EXPECT_EQ(second["tcp_9000"], false) << second;
  EXPECT_EQ(second["abstract"], false) << second;
  EXPECT_TRUE(second["env"].is_null()) << second;
  // Its own pid namespace: its init (1) and itself, nothing of the first call or the template.
  EXPECT_EQ(second["processes"].size(), 2u) << second;
}

TEST_P(WarmToolTest, TwoConcurrentCallsCannotSeeSignalOrConnectToEachOther) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  auto holder = std::async(std::launch::async, [&] {
    return call(*s.t, call_spec({{"do", "hold"}, {"seconds", 3}}));
  });
  std::this_thread::sleep_for(1500ms);  // the holder is listening by now
  json probe = result_of(call(*s.t, call_spec({{"do", "probe"}})));
  json held = result_of(holder.get());
  // The holder outlived the probe's kill(-1, SIGKILL) and answered: result_of checks "ok".
  EXPECT_EQ(probe["tcp_9001"], false) << probe;
  EXPECT_EQ(probe["abstract"], false) << probe;
  EXPECT_EQ(probe["processes"].size(), 2u) << probe;
  EXPECT_EQ(held["processes"].size(), 2u) << held;
}

TEST_P(WarmToolTest, ACredentialOfOneCallIsNotInTheNextCallsMemory) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  const std::string prefix = "airlock-secret-" + test::unique(), suffix = test::unique();
  const json look = {{"do", "secret"}, {"prefix", prefix}, {"suffix", suffix}};
  // The scan finds it where it is: the call that was given it.
  json holder = result_of(call(*s.t, call_spec(look, {{"AIRLOCK_SECRET", prefix + suffix}})));
  EXPECT_EQ(holder["env"], true);
  EXPECT_FALSE(holder["found"].empty()) << holder;
  json next = result_of(call(*s.t, call_spec(look)));
  EXPECT_EQ(next["env"], false);
  EXPECT_TRUE(next["found"].empty()) << next;
}

// The call's init shares the template's memory: the tool can neither read nor write it through
// /proc/1 (mem, environ, maps, fd, root), and a SIGINT to init does not run the template's
// (Python's) handler in its memory: the template goes on and the next call runs.
TEST_P(WarmToolTest, TheToolCannotReachItsInitWhichSharesTheTemplatesMemory) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  json reached = result_of(call(*s.t, call_spec({{"do", "reach_init"}})));
  for (const char* way : {"mem", "environ", "maps", "fd", "root"})
    EXPECT_EQ(reached[way], false) << way << ": " << reached;
  EXPECT_EQ(result_of(call(*s.t, call_spec({{"do", "look"}})))["state"], "clean");
}

TEST_P(WarmToolTest, AMemoryBombGetsTheVerdictItGetsCold) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  Spec bomb = call_spec({{"do", "bomb"}});
  bomb.limits.memory_bytes = 96ULL << 20;
  Outcome warm = call(*s.t, bomb), cold_run = cold(bomb);
  EXPECT_EQ(cold_run.verdict, Verdict::memory_limit) << test::describe(cold_run);
  EXPECT_EQ(warm.verdict, cold_run.verdict) << test::describe(warm);
  // The template itself is unharmed: the next call runs.
  EXPECT_EQ(call(*s.t, call_spec({{"do", "look"}})).verdict, Verdict::ok);
}

TEST_P(WarmToolTest, ACpuSpinGetsTheVerdictItGetsCold) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  Spec spin = call_spec({{"do", "spin"}});
  spin.limits.cpu_time = 500ms;
  Outcome warm = call(*s.t, spin), cold_run = cold(spin);
  EXPECT_EQ(cold_run.verdict, Verdict::cpu_time_limit) << test::describe(cold_run);
  EXPECT_EQ(warm.verdict, cold_run.verdict) << test::describe(warm);
}

// The call's own pids limit holds, not the template's (1024): on v2 its init is cloned into
// the call's cgroup, on v1 init and tool join it; either way 15 children and the 16th refused.
TEST_P(WarmToolTest, AProcessCountStopsAtTheCallsLimit) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  Spec many = call_spec({{"do", "fork_many"}});
  many.limits.pids = 16;
  Outcome o = call(*s.t, many);
  json forked = result_of(o);
  EXPECT_EQ(forked["children"], 15) << forked;
  EXPECT_EQ(forked["errno"], 11) << forked;  // EAGAIN
  EXPECT_EQ(o.usage.pids_limit_hit, true) << test::describe(o);
}

// The call sees its own cgroup as the root of its cgroup namespace ("/" in each hierarchy):
// nothing of the host's, the daemon's or the template's tree.
TEST_P(WarmToolTest, ACallSeesOnlyItsOwnCgroup) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  json seen = result_of(call(*s.t, call_spec({{"do", "cgroup_view"}})));
  ASSERT_TRUE(seen["cgroup"].is_array()) << seen;
  ASSERT_FALSE(seen["cgroup"].empty()) << seen;
  for (const auto& line : seen["cgroup"]) {
    const std::string text = line.get<std::string>();
    EXPECT_EQ(text.substr(text.rfind(':')), ":/") << seen;
  }
}

TEST_P(WarmToolTest, AKilledTemplateRefusesCallsWithASetupError) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  s.t->kill();
  s.ended.wait();
  Outcome o = call(*s.t, call_spec({{"do", "look"}}));
  EXPECT_EQ(o.verdict, Verdict::setup_error) << test::describe(o);
}

bool wait_for_file(const std::string& path, std::chrono::seconds limit) {
  for (auto until = std::chrono::steady_clock::now() + limit;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(20ms))
    if (::access(path.c_str(), F_OK) == 0) return true;
  return false;
}

// A prepared child (started without input, handed its call later) is billed only for what it
// uses after the hand-over: the 1.5 s of CPU it burnt while waiting do not spend the call's
// budget of one second, and a spin after the hand-over still gets cpu_time_limit.
TEST_F(WarmTemplateTest, APreparedChildIsBilledOnlyFromTheHandOver) {
  test::TempDir out;
  ASSERT_EQ(::chmod(out.path().c_str(), 0777), 0);
  tool_dir_.write("spinning_template.py", kSpinningTemplate);
  Spec spec = base_spec();
  spec.binds.push_back({out.path(), "/out", true});
  spec.argv = {"python3", "-I", "-S", "/tool/spinning_template.py"};
  Spec tmpl = spec;
  tmpl.limits.pids = 1024;
  auto launched = WarmTemplate::launch(tmpl, 10s);
  ASSERT_TRUE(launched) << launched.error().message;
  Supervised s(std::move(*launched));
  spec.limits.cpu_time = 1000ms;
  for (const std::string input : {"finish", "spin"}) {
    ::unlink((out.path() + "/spun").c_str());
    auto child = s.t->start_call(spec);  // prepared: no input yet
    ASSERT_TRUE(child) << child.error().message;
    if (!wait_for_file(out.path() + "/spun", 120s)) {
      Spec finish = spec;
      finish.stdin_source.kind = StdinSource::Kind::bytes;
      (void)(*child)->hand_over(finish);
      FAIL() << "the prepared child never said it had spun: " << test::describe((*child)->wait());
    }
    Spec call = spec;
    call.stdin_source.kind = StdinSource::Kind::bytes;
    call.stdin_source.bytes = input;
    Spec other = call;
    other.limits.memory_bytes *= 2;  // another sandbox than the one prepared
    EXPECT_FALSE((*child)->hand_over(other));
    ASSERT_TRUE((*child)->hand_over(call));
    EXPECT_FALSE((*child)->hand_over(call)) << "handed over twice";
    Outcome o = (*child)->wait();
    if (input == "finish") {
      EXPECT_EQ(o.verdict, Verdict::ok) << test::describe(o);
      EXPECT_EQ(o.stdout_data, "finish");
      EXPECT_LT(o.usage.cpu_user_ms + o.usage.cpu_sys_ms, 1500u) << test::describe(o);
    } else {
      EXPECT_EQ(o.verdict, Verdict::cpu_time_limit) << test::describe(o);
    }
  }
}

// cgroup v2: the template sees its tree (the common ancestor it clones its calls' inits
// into) read-only, from a mount rooted at the tree: it cannot change a limit, add a cgroup or
// move a process by writing, nor reach anything above the tree; its calls still start.
TEST_F(WarmTemplateTest, ATemplateCannotWriteOrLeaveItsCgroupTree) {
  if (cgroup_support().mode != CgroupMode::v2) GTEST_SKIP() << "the tree is cgroup v2's";
  test::TempDir out;
  ASSERT_EQ(::chmod(out.path().c_str(), 0777), 0);
  tool_dir_.write("climbing_template.py", kTreeClimbingTemplate);
  Spec spec = base_spec();
  spec.binds.push_back({out.path(), "/out", true});
  spec.argv = {"python3", "-I", "-S", "/tool/climbing_template.py"};
  Spec tmpl = spec;
  tmpl.limits.pids = 1024;
  auto launched = WarmTemplate::launch(tmpl, 10s);
  ASSERT_TRUE(launched) << launched.error().message;
  Supervised s(std::move(*launched));
  json tried = json::parse(out.read("tried"), nullptr, false);
  ASSERT_TRUE(tried.is_object()) << out.read("tried");
  EXPECT_EQ(tried["tree"], true) << tried;
  for (const char* name : {"template/memory.max", "template/pids.max", "memory.max", "cgroup.procs",
                           "cgroup.subtree_control", "template/cgroup.procs", "mkdir"})
    EXPECT_EQ(tried[name], "EROFS") << name << ": " << tried;
  EXPECT_EQ(tried["parent_is_the_sandbox_root"], true) << tried;
  Spec call = spec;
  call.stdin_source.kind = StdinSource::Kind::bytes;
  call.stdin_source.bytes = "echo";
  Outcome o = WarmTemplateTest::call(*s.t, call);
  EXPECT_EQ(o.verdict, Verdict::ok) << test::describe(o);
  EXPECT_EQ(o.stdout_data, "echo");
}

// A child prepared before another call had a credential, and handed its own call only after
// that call ended, has nothing of it: not in its environment, not anywhere in its memory.
class WarmNetworkedTest : public WarmTemplateTest {
 protected:
  Runtime runtime() const override { return Runtime::networked; }
};

// The first bytes waiting on a listener, "" when no connection is pending.
std::string first_connection(const UniqueFd& listener) {
  pollfd pending{listener.get(), POLLIN, 0};
  if (::poll(&pending, 1, 0) != 1) return "";
  int c = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return "";
  char buf[16] = {};
  ssize_t n = ::recv(c, buf, sizeof buf, MSG_DONTWAIT);
  ::close(c);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "(empty)";
}

// Two calls alive at once each open the proxy's port in their own network namespace: what one
// sends there reaches its own listener (its own call's proxy, in the daemon), never the other's;
// and neither may bind a port once its own policy is in place.
TEST_F(WarmNetworkedTest, EachCallsProxyListenerIsItsOwn) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  auto a = s.t->start_call(call_spec({{"do", "through_proxy_port"}, {"say", "A"}}));
  auto b = s.t->start_call(call_spec({{"do", "through_proxy_port"}, {"say", "B"}}));
  ASSERT_TRUE(a && b) << (a ? b.error().message : a.error().message);
  auto la = (*a)->take_listeners(), lb = (*b)->take_listeners();
  ASSERT_EQ(la.size(), 1u);
  ASSERT_EQ(lb.size(), 1u);
  json ra = result_of((*a)->wait()), rb = result_of((*b)->wait());
  EXPECT_EQ(first_connection(la[0]), "A");
  EXPECT_EQ(first_connection(lb[0]), "B");
  EXPECT_EQ(first_connection(la[0]), "") << "a second connection on A's listener";
  EXPECT_EQ(first_connection(lb[0]), "") << "a second connection on B's listener";
  if (landlock_abi() >= 4) {
    for (const json& r : {ra, rb}) {
      EXPECT_EQ(r["binds"]["3128"], EACCES) << r;
      EXPECT_EQ(r["binds"]["3129"], EACCES) << r;
    }
  }
}

TEST_P(WarmToolTest, APreparedChildThatWaitedGetsNothingOfAnEarlierCall) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  Spec shape = call_spec(json::object());
  shape.stdin_source = {};
  auto waiting = s.t->start_call(shape);
  ASSERT_TRUE(waiting) << waiting.error().message;
  const std::string prefix = "airlock-secret-" + test::unique(), suffix = test::unique();
  const json look = {{"do", "secret"}, {"prefix", prefix}, {"suffix", suffix}};
  json holder = result_of(call(*s.t, call_spec(look, {{"AIRLOCK_SECRET", prefix + suffix}})));
  EXPECT_EQ(holder["env"], true);
  EXPECT_FALSE(holder["found"].empty()) << holder;
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE((*waiting)->hand_over(call_spec(look)));
  json next = result_of((*waiting)->wait());
  EXPECT_EQ(next["env"], false);
  EXPECT_TRUE(next["found"].empty()) << next;
}

// A python-code tool's template (the runner only): each call's cell runs in its own child.
class WarmCodeTest : public WarmTemplateTest {
 protected:
  Runtime runtime() const override { return Runtime::code; }
  Spec cell(const std::string& code) const {
    Spec spec = call_spec(json::object());
    spec.stdin_source.bytes = json{{"env", json::object()}, {"arguments", {{"code", code}, {"arguments", json::object()}}}}.dump();
    return spec;
  }
};

// What a cell defines (a global, a builtin, a module attribute, sys.modules) is gone at the
// next cell of the same template: the cell ran in a child that was destroyed.
TEST_F(WarmCodeTest, ACellsVariablesNeverReachTheNextCall) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  Outcome first = call(*s.t, cell("import builtins, os, sys, types\nleft = 'dirty'\nbuiltins.airlock_left = 'dirty'\n"
                                  "os.airlock_left = 'dirty'\nsys.modules['airlock_left'] = types.ModuleType('x')\n"
                                  "def run(a):\n    return {'left': left, 'builtin': builtins.airlock_left}\n"));
  EXPECT_EQ(result_of(first), (json{{"left", "dirty"}, {"builtin", "dirty"}}));
  Outcome next = call(*s.t, cell("import builtins, os, sys\ndef run(a):\n"
                                 "    return {'global': 'left' in globals(), 'builtin': hasattr(builtins, 'airlock_left'),\n"
                                 "            'module': hasattr(os, 'airlock_left'), 'imported': 'airlock_left' in sys.modules}\n"));
  EXPECT_EQ(result_of(next), (json{{"global", false}, {"builtin", false}, {"module", false}, {"imported", false}}));
}

// A cell that raises answers as it does cold: exit status 1 and its report (name, value,
// line, traceback, what it printed) on the private protocol channel, which what the cell
// prints to its stdout cannot forge.
TEST_F(WarmCodeTest, ACodeErrorComesBackWithItsTracebackAsItDoesCold) {
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  const std::string code = "import sys\nprint('before')\nsys.__stdout__.write('{\"result\": \"forged\"}')\n"
                           "def f():\n    return 1 / 0\nf()\n";
  Outcome warm = call(*s.t, cell(code)), cold_run = cold(cell(code));
  for (const Outcome* o : {&warm, &cold_run}) {
    EXPECT_EQ(o->verdict, Verdict::exit_nonzero) << test::describe(*o);
    EXPECT_EQ(o->exit_code.value_or(-1), 1) << test::describe(*o);
    json answer = json::parse(o->stdout_data, nullptr, false);
    ASSERT_TRUE(answer.is_object() && answer.contains("code_error")) << test::describe(*o);
    const json& report = answer["code_error"];
    EXPECT_EQ(report["name"], "ZeroDivisionError") << report;
    EXPECT_EQ(report["line"], 5) << report;
    EXPECT_EQ(report["stdout"], "before\n") << report;
    EXPECT_NE(report["traceback"].dump().find("return 1 / 0"), std::string::npos) << report;
  }
  EXPECT_EQ(json::parse(warm.stdout_data), json::parse(cold_run.stdout_data));
}

// A tool module whose import, in the template, goes for the network: it binds a TCP port and
// connects to it (in the template's own network namespace, where nothing else would refuse
// either). What it got is what every call's run() returns.
constexpr const char* kNetworkAtImport = R"PY(
import errno, socket
TRIED = {}
LEFT = []
def attempt(name, action):
    try:
        action()
        TRIED[name] = "done"
    except OSError as e:
        TRIED[name] = errno.errorcode.get(e.errno, str(e.errno))
def bind():
    s = socket.socket()
    s.bind(("127.0.0.1", 9100))
    s.listen()
    LEFT.append(s)
attempt("bind", bind)
attempt("connect", lambda: socket.create_connection(("127.0.0.1", 9100 if LEFT else 9101), timeout=1).close())
def run(args):
    return TRIED
)PY";

// A tool module whose import makes raw system calls the call's filter refuses; run() returns
// the errno each got.
constexpr const char* kSyscallsAtImport = R"PY(
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
TRIED = {}
for name, nr in (("keyctl", 250), ("bpf", 321), ("userfaultfd", 323)):
    rc = libc.syscall(nr, 0, 0, 0, 0)
    TRIED[name] = "done" if rc >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
def run(args):
    return TRIED
)PY";

// The template's import runs under the call's TCP rules (Landlock, ABI 4): no bind, no connect.
TEST_F(WarmTemplateTest, TheToolsImportInTheTemplateCannotBindOrConnectTcp) {
  if (landlock_abi() < 4) GTEST_SKIP() << "Landlock below ABI 4 has no TCP rules";
  tool_dir_.write("tool.py", kNetworkAtImport);
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  json tried = result_of(call(*s.t, call_spec(json::object())));
  EXPECT_EQ(tried["bind"], "EACCES") << tried;
  EXPECT_EQ(tried["connect"], "EACCES") << tried;
}

// The template's import runs under the call's filter (less only what its calls' set-up
// needs): a system call the call may not make is refused. It fails ENOSYS rather than ending
// the template as a seccomp_violation: the template's filter has no listener, since each
// call's needs the one the kernel allows (child.cpp, install_seccomp). Unfiltered, each of
// these fails otherwise (EINVAL, EPERM) or succeeds.
TEST_F(WarmTemplateTest, TheToolsImportInTheTemplateCannotMakeASyscallTheCallsFilterRefuses) {
  tool_dir_.write("tool.py", kSyscallsAtImport);
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  json tried = result_of(call(*s.t, call_spec(json::object())));
  for (const char* name : {"keyctl", "bpf", "userfaultfd"}) EXPECT_EQ(tried[name], "ENOSYS") << name << ": " << tried;
}

// What the template may do beyond a call (namespaces, mount) is what each call's set-up needs;
// the same tool module warm still starts its calls, and they still refuse the syscall.
TEST_F(WarmTemplateTest, ACallOfATemplateUnderItsPolicyStillRefusesTheCallsSyscalls) {
  tool_dir_.write("tool.py", "import ctypes\ndef run(args):\n    ctypes.CDLL(None).syscall(args['nr'], 0, 0, 0, 0)\n    return {}\n");
  Supervised s(start_template());
  ASSERT_TRUE(s.t);
  for (int nr : {272 /* unshare */, 165 /* mount */}) {
    Outcome o = call(*s.t, call_spec({{"nr", nr}}));
    EXPECT_EQ(o.verdict, Verdict::seccomp_violation) << nr << ": " << test::describe(o);
  }
  EXPECT_EQ(call(*s.t, call_spec({{"nr", 39 /* getpid */}})).verdict, Verdict::ok);
}

// Without a cgroup memory limit and CPU accounting a warm call's verdicts could not be a cold
// run's (its init is not the supervisor's child: no rusage): it is refused, naming why, and
// the daemon runs the call cold. Runs where cgroups are missing (AIRLOCK_CGROUP=none, an
// unprivileged user without a delegated cgroup).
TEST(WarmWithoutCgroups, WarmCallsAreRefusedWithoutCgroups) {
  if (!warm_calls_unsupported()) GTEST_SKIP() << "this host has the cgroups warm calls need";
  Spec spec;
  spec.argv = {"python3", "-I", "-S", "-c", "pass"};
  std::mutex mu;
  auto call = Sandbox::start_warm_call(-1, mu, spec);
  ASSERT_FALSE(call);
  EXPECT_NE(call.error().message.find("warm calls need a cgroup"), std::string::npos)
      << call.error().message;
}

}  // namespace
}  // namespace airlock::sandbox
