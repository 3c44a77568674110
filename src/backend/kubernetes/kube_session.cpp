#include "backend/kubernetes/kube_session.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "backend/kubernetes/pod_watch.hpp"
#include "common/no_sigpipe.hpp"

namespace airlock::backend::kubernetes {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using sandbox::ExecEnd;

struct KubernetesSessionBackend::Shared {
  Shared(KubeEndpoint endpoint, KubernetesOptions o, SessionPodOptions s)
      : client(std::move(endpoint)), options(std::move(o)), session(std::move(s)),
        api(client, options.namespace_name, options.retry) {}
  KubeClient client;
  KubernetesOptions options;
  SessionPodOptions session;
  KubeApi api;
};

namespace {

using Shared = KubernetesSessionBackend::Shared;
constexpr const char* kWorkDir = "/work";
constexpr std::chrono::seconds kCommandTimeout{60};  // a file operation's or signal's own exec

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string session_pod_name(const std::string& id) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string base = label_value(id).substr(0, 40);
  for (char& c : base)
    if (c == '.') c = '-';
  while (!base.empty() && base.back() == '-') base.pop_back();
  std::string suffix;
  for (int i = 0; i < 6; ++i) suffix += digits[rng() % 36];
  return "airlock-s-" + base + "-" + suffix;
}

// The errno a command's complaint names (tar, rm, mv, mkdir, as GNU coreutils and BusyBox
// word them).
int errno_of(const std::string& text) {
  static const std::pair<const char*, int> known[] = {
      {"No such file", ENOENT},       {"File exists", EEXIST},          {"Directory not empty", ENOTEMPTY},
      {"Is a directory", EISDIR},     {"Not a directory", ENOTDIR},     {"Permission denied", EACCES},
      {"Read-only file system", EROFS}, {"No space left", ENOSPC},      {"Disk quota", EDQUOT},
      {"contains '..'", EXDEV},       {"Cannot stat", ENOENT}};
  for (const auto& [words, err] : known)
    if (text.find(words) != std::string::npos) return err;
  return EIO;
}

// Reads `fd` to its end (or `limit` bytes: then false), giving up when `stop` is set.
bool read_all(int fd, std::string& out, const std::atomic<bool>* stop = nullptr, std::uint64_t limit = 0) {
  std::array<char, 16384> buf;
  for (;;) {
    if (stop) {
      struct pollfd p{fd, POLLIN, 0};
      int ready = ::poll(&p, 1, 100);
      if (ready == 0) {
        if (stop->load()) return false;
        continue;
      }
    }
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buf.data(), static_cast<std::size_t>(n));
    if (limit > 0 && out.size() > limit) return false;
  }
}

bool write_unless_stopped(int fd, const char* data, std::size_t size, const std::atomic<bool>* stop = nullptr) {
  while (size > 0) {
    if (stop) {
      struct pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 100) == 0) {
        if (stop->load()) return false;
        continue;
      }
    }
    ssize_t n = write_without_sigpipe(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Exactly `size` bytes, unless the stream ends first.
bool read_exactly(int fd, char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string octal(std::uint64_t value, std::size_t digits) {
  std::string out(digits, '0');
  for (std::size_t i = digits; i-- > 0 && value > 0; value >>= 3) out[i] = static_cast<char>('0' + (value & 7));
  return out;
}

std::uint64_t tar_number(const char* field, std::size_t size) {
  std::uint64_t value = 0;
  if (static_cast<unsigned char>(field[0]) & 0x80) {  // GNU base-256
    for (std::size_t i = 1; i < size; ++i) value = (value << 8) | static_cast<unsigned char>(field[i]);
    return value;
  }
  for (std::size_t i = 0; i < size && field[i]; ++i)
    if (field[i] >= '0' && field[i] <= '7') value = (value << 3) | static_cast<std::uint64_t>(field[i] - '0');
  return value;
}

}  // namespace

namespace {

// cgroup v1's cpuacct.stat counts in USER_HZ ticks, which the kernel fixes at 100 a second
// for user space on every architecture a node runs (x86-64, arm64): 10 ms each.
constexpr std::uint64_t kNsPerUserHzTick = 10'000'000;

// "KEY VALUE" lines into their numbers; a line that is not exactly a key and a whole number
// is left out (its key then counts as missing).
std::map<std::string, std::uint64_t> stat_lines(const std::string& text) {
  std::map<std::string, std::uint64_t> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string key, value, extra;
    if (!(fields >> key >> value) || (fields >> extra)) continue;
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec == std::errc() && end == value.data() + value.size()) out[key] = n;
  }
  return out;
}

}  // namespace

// cgroup v2 first (user_usec, system_usec: microseconds), then v1 (user, system: ticks).
std::optional<sandbox::CpuTime> parse_cgroup_cpu(const std::string& text) {
  const auto stat = stat_lines(text);
  auto both = [&](const char* user, const char* sys, std::uint64_t ns_each) -> std::optional<sandbox::CpuTime> {
    auto u = stat.find(user), s = stat.find(sys);
    if (u == stat.end() || s == stat.end()) return std::nullopt;
    const std::uint64_t most = std::numeric_limits<std::uint64_t>::max() / ns_each;
    if (u->second > most || s->second > most) return std::nullopt;  // no counter gets there: not a reading
    return sandbox::CpuTime{u->second * ns_each, s->second * ns_each};
  };
  if (auto v2 = both("user_usec", "system_usec", 1000)) return v2;
  return both("user", "system", kNsPerUserHzTick);
}

// One file in a ustar stream, as `tar -x` takes it: its header, its bytes, the padding and the
// two empty blocks that end the archive. A name over 100 bytes is split into prefix/name.
Result<std::string> ustar_archive(const std::string& name, const std::string& content) {
  std::string header(512, '\0');
  std::string prefix, base = name;
  if (name.size() > 100) {
    std::size_t slash = name.rfind('/', 155);
    while (slash != std::string::npos && name.size() - slash - 1 > 100) slash = std::string::npos;
    if (slash == std::string::npos || slash == 0)
      return Error::make("invalid_path", "'" + name + "': too long a path for a tar stream");
    prefix = name.substr(0, slash);
    base = name.substr(slash + 1);
  }
  auto put = [&](std::size_t at, const std::string& text) { header.replace(at, text.size(), text); };
  put(0, base);
  put(100, octal(0644, 7));
  put(108, octal(65534, 7));
  put(116, octal(65534, 7));
  put(124, octal(content.size(), 11));
  put(136, octal(static_cast<std::uint64_t>(unix_now()), 11));
  put(148, std::string(8, ' '));
  header[156] = '0';
  put(257, std::string("ustar\0" "00", 8));
  put(345, prefix);
  unsigned sum = 0;
  for (unsigned char c : header) sum += c;
  put(148, octal(sum, 6) + std::string("\0 ", 2));
  std::string archive = header + content;
  archive.append((512 - content.size() % 512) % 512, '\0');
  archive.append(1024, '\0');
  return archive;
}

namespace {

class KubernetesSession final : public Session {
 public:
  KubernetesSession(std::shared_ptr<Shared> shared, PodPlan plan,
                    std::unique_ptr<egress::EgressGateway::Admission> admission, Clock::time_point deadline)
      : shared_(std::move(shared)), plan_(std::move(plan)), admission_(std::move(admission)),
        deadline_(deadline), started_(Clock::now()) {
    watcher_ = std::thread([this] { watch(); });
    clock_ = std::thread([this] { keep_time(); });
  }
  ~KubernetesSession() override { (void)end(); }

  Result<sandbox::StartedExec> exec(const sandbox::SessionExec& request) override { return start(request, std::nullopt); }
  Result<sandbox::StartedExec> exec_on_terminal(const sandbox::SessionExec& request, sandbox::WindowSize size) override {
    return start(request, size);
  }

  std::optional<ExecEnd> wait(std::uint32_t id, std::chrono::milliseconds timeout) override {
    std::shared_ptr<Entry> entry = find(id);
    if (!entry) return std::nullopt;
    if (entry->transfer) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, timeout, [&] { return entry->end.has_value(); });
      return entry->end;
    }
    auto end = entry->exec->wait(timeout);
    if (!end) return std::nullopt;
    return finish(*entry, *end);
  }

  // Through an exec of `kill` in the pod, at the pid the exec's wrapper wrote: to the process
  // alone (an exec's process in a pod is not a process group's leader of its own everywhere).
  Status signal(std::uint32_t id, int sig) override {
    std::shared_ptr<Entry> entry = find(id);
    if (!entry || entry->transfer) return Error::make("not_found", "no exec " + std::to_string(id) + " in this session");
    if (ended()) return Error::make("session_ended", "the session has ended");
    {
      std::lock_guard lock(mu_);
      if (entry->end) return Status::success();
      entry->signalled = sig;
    }
    std::string complaint;
    for (int attempt = 0; attempt < 10; ++attempt) {  // the wrapper may not have written its pid yet
      auto ran = run({"/bin/sh", "-c", kExecKiller, std::to_string(sig), entry->pidfile}, "");
      if (!ran) return ran.error();
      if (ran->end.has_code && ran->end.code == 0) return Status::success();
      complaint = ran->err;
      if (errno_of(complaint) != ENOENT) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Error::make("signal_failed", "kill in the pod: " + complaint);
  }

  RunResult end() override {
    std::lock_guard end_lock(end_mu_);
    if (result_) return *result_;
    {
      std::lock_guard lock(mu_);
      over_ = true;
      cv_.notify_all();
    }
    breaker_.break_now();
    if (watcher_.joinable()) watcher_.join();
    if (clock_.joinable()) clock_.join();
    stop_ = true;
    std::map<std::uint32_t, std::shared_ptr<Entry>> entries;
    {
      std::lock_guard lock(mu_);
      entries.swap(entries_);
    }
    for (auto& [id, entry] : entries) {
      if (entry->exec) entry->exec->hang_up();
      if (entry->worker.joinable()) entry->worker.join();
    }
    entries.clear();
    (void)take_cpu();  // what the pod used since the last exec: the session's total, not an exec's
    delete_objects();
    RunResult r;
    unsigned misses = 0;
    {
      std::lock_guard lock(mu_);
      if (lost_) r = *lost_;
      r.usage.cpu_user_ms = cpu_total_.user_ns / 1'000'000;
      r.usage.cpu_sys_ms = cpu_total_.sys_ns / 1'000'000;
      misses = cpu_misses_;
    }
    if (!lost_) {
      r.verdict = sandbox::Verdict::ok;
      r.exit_code = 0;
      r.message = "the session ended; its pod " + plan_.name + " was deleted";
    }
    if (misses > 0)
      r.message += "; " + std::to_string(misses) + " reading(s) of its CPU counter failed (" + kCgroupV2CpuStat +
                   ", " + kCgroupV1CpuacctStat + "): the CPU between them was charged by a later reading, or not at all";
    if (admission_) r.egress = admission_->close();
    r.usage.wall_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count());
    result_ = r;
    return r;
  }

  bool ended() const override {
    std::lock_guard lock(mu_);
    return over_;
  }
  // What the pod's cgroup counted up to the last reading (after each exec, or read_cpu_now: take_cpu).
  std::optional<sandbox::CpuTime> cpu_used() const override {
    std::lock_guard lock(mu_);
    return cpu_total_;
  }
  // One reading now (a pods/exec of `cat`): its delta goes into the total as an exec's end's
  // does, so whatever used the pod since the previous reading is counted once.
  std::optional<sandbox::CpuTime> read_cpu_now() override {
    (void)take_cpu();
    return cpu_used();
  }
  Status freeze(bool) override {
    return Error::make("freezer_unavailable",
                       "a session on the kubernetes backend cannot be paused: the API server has no pause for a "
                       "pod's containers (the node's cgroup freezer is the kubelet's, not reachable through the API)");
  }
  Status can_snapshot_memory() const override {
    return Error::make("memory_snapshot_unsupported",
                       "a session on the kubernetes backend cannot be snapshotted with its memory: Kubernetes has "
                       "no API to restore a checkpoint into a new pod (the kubelet's container checkpoint, alpha, "
                       "only writes an archive on its node); snapshot without memory (the workspace's files)");
  }

  Result<sandbox::FileTransfer> read_file(const std::string& path) override;
  Result<sandbox::FileTransfer> write_file(const std::string& path) override;
  Status remove_file(const std::string& path) override {
    auto p = inside(path);
    if (!p) return p.error();
    if (p->empty()) return Error::make("invalid_path", "the work dir itself cannot be removed");
    return simple({"rm", "-d", "--", std::string(kWorkDir) + "/" + *p}, *p);
  }
  Status move_file(const std::string& from, const std::string& to) override {
    auto a = inside(from);
    if (!a) return a.error();
    auto b = inside(to);
    if (!b) return b.error();
    if (a->empty() || b->empty()) return Error::make("invalid_path", "the work dir itself cannot be moved");
    return simple({"mv", "-T", "--", std::string(kWorkDir) + "/" + *a, std::string(kWorkDir) + "/" + *b}, *a);
  }
  Status make_directory(const std::string& path) override {
    auto p = inside(path);
    if (!p) return p.error();
    if (p->empty()) return Status::success();
    return simple({"mkdir", "-p", "--", std::string(kWorkDir) + "/" + *p}, *p);
  }

 private:
  struct Entry {
    bool transfer = false;
    std::shared_ptr<PodExec> exec;  // a command's, or a file read's (end() hangs it up)
    std::string pidfile;
    std::optional<int> signalled;
    std::optional<ExecEnd> end;
    std::mutex finishing;  // the end is made once, whoever waits
    std::thread worker;  // a transfer's
  };
  struct Ran {
    PodExecEnd end;
    std::string out, err;
  };

  Result<std::string> inside(const std::string& path) {
    if (ended()) return Error::make("session_ended", "the session has ended");
    return sandbox::workspace_path(path);
  }

  std::shared_ptr<Entry> find(std::uint32_t id) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : it->second;
  }

  Result<std::uint32_t> add(std::shared_ptr<Entry> entry) {
    std::lock_guard lock(mu_);
    if (over_) return Error::make("session_ended", "the session has ended");
    std::uint32_t id = ++next_id_;
    entries_[id] = std::move(entry);
    return id;
  }

  PodExecRequest exec_request(std::vector<std::string> command, bool with_stdin,
                              std::optional<sandbox::WindowSize> terminal) const {
    PodExecRequest r;
    r.namespace_name = plan_.namespace_name;
    r.pod = plan_.name;
    r.command = std::move(command);
    r.stdin = with_stdin;
    r.terminal = terminal;
    r.protocols = shared_->session.exec_protocols;
    return r;
  }

  static ExecEnd exec_end(const Entry& entry, const PodExecEnd& end) {
    ExecEnd out;
    if (!end.has_code) {  // it could not start, or the connection broke
      out.exited = true;
      out.code = 126;
      return out;
    }
    if (entry.signalled && end.code == 128 + *entry.signalled) {
      out.exited = false;
      out.code = *entry.signalled;
      return out;
    }
    out.exited = true;
    out.code = end.code;
    return out;
  }

  // The exec's end, made once however many wait for it: with the CPU the pod used since the
  // last reading (take_cpu), whatever used it (this exec, or what an earlier one left running).
  ExecEnd finish(Entry& entry, const PodExecEnd& end) {
    std::lock_guard once(entry.finishing);
    {
      std::lock_guard lock(mu_);
      if (entry.end) return *entry.end;
    }
    ExecEnd out = exec_end(entry, end);
    const sandbox::CpuTime cpu = take_cpu();
    out.user_us = cpu.user_ns / 1000;
    out.sys_us = cpu.sys_ns / 1000;
    std::lock_guard lock(mu_);
    entry.end = out;
    return out;
  }

  // The pod's CPU counter now (an exec of `cat` of both cgroup versions' files: the one that
  // does not exist is cat's complaint, its exit code not looked at), or nullopt.
  std::optional<sandbox::CpuTime> read_cpu() {
    auto ran = run({"cat", kCgroupV2CpuStat, kCgroupV1CpuacctStat}, "");
    if (!ran) return std::nullopt;
    return parse_cgroup_cpu(ran->out);
  }

  // What the pod used since the last reading, taken once: readings one at a time, each delta
  // added to the session's total. A reading that fails charges nothing and keeps the last one,
  // so the next that succeeds charges what was missed (counted in cpu_misses_). A lost pod is
  // not read.
  sandbox::CpuTime take_cpu() {
    std::lock_guard reading(cpu_reading_);
    {
      std::lock_guard lock(mu_);
      if (lost_) return {};
    }
    const auto now = read_cpu();
    std::lock_guard lock(mu_);
    if (!now) {
      ++cpu_misses_;
      return {};
    }
    // A counter below the last reading started again (a new container): all of it is new.
    auto since = [](std::uint64_t now_ns, std::uint64_t last_ns) { return now_ns >= last_ns ? now_ns - last_ns : now_ns; };
    const sandbox::CpuTime delta{since(now->user_ns, cpu_read_.user_ns), since(now->sys_ns, cpu_read_.sys_ns)};
    cpu_read_ = *now;
    cpu_total_.user_ns += delta.user_ns;
    cpu_total_.sys_ns += delta.sys_ns;
    return delta;
  }

  Result<sandbox::StartedExec> start(const sandbox::SessionExec& request, std::optional<sandbox::WindowSize> terminal) {
    if (request.argv.empty()) return Error::make("invalid_argument", "an exec needs a program (argv is empty)");
    if (!request.cwd.empty() && request.cwd.front() != '/')
      return Error::make("invalid_argument", "cwd must be absolute: " + request.cwd);
    auto entry = std::make_shared<Entry>();
    auto id = add(entry);
    if (!id) return id.error();
    entry->pidfile = "/tmp/.airlock-exec-" + std::to_string(*id);
    std::vector<std::string> command = {"/bin/sh", "-c", kExecWrapper, entry->pidfile,
                                        request.cwd.empty() ? kWorkDir : request.cwd};
    if (!request.env.empty()) {
      command.insert(command.end(), {"env", "--"});
      for (const auto& [name, value] : request.env) command.push_back(name + "=" + value);
    }
    command.insert(command.end(), request.argv.begin(), request.argv.end());
    auto started = PodExec::start(shared_->client, exec_request(std::move(command), true, terminal));
    if (!started) {
      std::lock_guard lock(mu_);
      entries_.erase(*id);
      return Error::make("exec_failed", started.error().message);
    }
    sandbox::StartedExec out;
    out.id = *id;
    if (terminal) {
      out.terminal = (*started)->take_terminal();
    } else {
      out.stdin_w = (*started)->take_stdin();
      out.stdout_r = (*started)->take_stdout();
      out.stderr_r = (*started)->take_stderr();
    }
    std::lock_guard lock(mu_);
    if (over_) {  // it ended meanwhile: end() has taken the entries already
      entries_.erase(*id);
      return Error::make("session_ended", "the session has ended");
    }
    entry->exec = std::move(*started);
    return out;
  }

  // A command of the backend's own (kill, rm, mv, mkdir, cat), to its end.
  Result<Ran> run(std::vector<std::string> command, const std::string& input) {
    auto started = PodExec::start(shared_->client, exec_request(std::move(command), !input.empty(), std::nullopt));
    if (!started) return Error::make("file_error", started.error().message);
    PodExec& exec = **started;
    if (!input.empty()) {
      UniqueFd in = exec.take_stdin();
      write_unless_stopped(in.get(), input.data(), input.size());
    }
    Ran ran;
    UniqueFd out = exec.take_stdout(), err = exec.take_stderr();
    read_all(out.get(), ran.out);
    read_all(err.get(), ran.err);
    auto end = exec.wait(kCommandTimeout);
    if (!end) return Error::make("file_error", "the command in the pod did not end within " + std::to_string(kCommandTimeout.count()) + " s");
    ran.end = *end;
    return ran;
  }

  Status simple(std::vector<std::string> command, const std::string& path) {
    auto ran = run(std::move(command), "");
    if (!ran) return ran.error();
    if (ran->end.has_code && ran->end.code == 0) return Status::success();
    return sandbox::file_error(errno_of(ran->err + ran->end.message), path);
  }

  void set_end(Entry& entry, int code) {
    std::lock_guard lock(mu_);
    entry.end = ExecEnd{true, code, 0, 0, 0};
    cv_.notify_all();
  }

  // The session ends by itself: its pod was lost, or its life is over. The pod and its
  // objects are deleted; the execs' connections end with it.
  void over(RunResult why) {
    {
      std::lock_guard lock(mu_);
      if (over_) return;
      over_ = true;
      lost_ = std::move(why);
      for (auto& [id, entry] : entries_)
        if (entry->exec) entry->exec->hang_up();
      cv_.notify_all();
    }
    delete_objects();
  }

  void watch() {
    PodEnd end;
    for (;;) {
      end = watch_pod(shared_->api, plan_.name, deadline_ + std::chrono::seconds(5), breaker_);
      if (end.kind == PodEnd::Kind::cancelled || breaker_.broken()) return;
      if (end.kind != PodEnd::Kind::api_failed) break;
      // A long quiet life: the API server ends each watch (its request timeout) without an
      // event, which watch_pod counts as the API failing. The pod still Running: go on.
      auto pod = shared_->api.get("pods", plan_.name);
      if (pod && (*pod)["status"].value("phase", "") == "Running") continue;
      if (!pod && pod.error().message.find(": 404 ") != std::string::npos) {
        end = PodEnd{PodEnd::Kind::vanished, json::object(), "the pod was deleted while it ran"};
        break;
      }
      std::unique_lock lock(mu_);  // the API failing: again in a second, unless the session ends
      if (cv_.wait_for(lock, std::chrono::seconds(1), [&] { return over_; })) return;
    }
    RunResult r;
    std::string reason = end.pod.contains("status") ? end.pod["status"].value("reason", "") : "";
    if (end.kind == PodEnd::Kind::overran || reason == "DeadlineExceeded") {
      r.verdict = sandbox::Verdict::timeout;
      r.message = "the session reached its maximum lifetime; its pod was deleted";
    } else {
      r.verdict = sandbox::Verdict::signaled;
      r.signal = SIGKILL;
      std::string what = end.kind == PodEnd::Kind::vanished ? "was deleted from outside the daemon"
                         : end.kind == PodEnd::Kind::finished
                             ? "ended (phase " + (end.pod.contains("status") ? end.pod["status"].value("phase", "?") : std::string("?")) +
                                   (reason.empty() ? "" : ", " + reason) + ")"
                             : "was lost (" + end.message + ")";
      r.message = std::string(kReasonAborted) + ": the session's pod " + plan_.name + " " + what;
    }
    over(std::move(r));
  }

  void keep_time() {
    std::unique_lock lock(mu_);
    if (cv_.wait_until(lock, deadline_, [&] { return over_; })) return;
    lock.unlock();
    RunResult r;
    r.verdict = sandbox::Verdict::timeout;
    r.message = "the session reached its maximum lifetime; its pod was deleted";
    over(std::move(r));
    breaker_.break_now();
  }

  void delete_objects() {
    (void)shared_->api.remove("networkpolicies", plan_.name);
    (void)shared_->api.remove("secrets", plan_.name);
    (void)shared_->api.remove("pods", plan_.name);
  }

  std::shared_ptr<Shared> shared_;
  PodPlan plan_;
  std::unique_ptr<egress::EgressGateway::Admission> admission_;
  Clock::time_point deadline_, started_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint32_t, std::shared_ptr<Entry>> entries_;
  std::uint32_t next_id_ = 0;
  bool over_ = false;
  std::optional<RunResult> lost_;  // why it ended by itself
  std::atomic<bool> stop_{false};
  WatchBreaker breaker_;
  std::thread watcher_, clock_;
  std::mutex end_mu_;
  std::optional<RunResult> result_;
  // The pod's CPU counter (take_cpu): one reading at a time; the last reading, the session's
  // total of what has been taken (under mu_), and how many readings failed.
  std::mutex cpu_reading_;
  sandbox::CpuTime cpu_read_{}, cpu_total_{};
  unsigned cpu_misses_ = 0;
};

// `tar -c` of the one path, whose header says what it is; the bytes follow to the caller's pipe.
Result<sandbox::FileTransfer> KubernetesSession::read_file(const std::string& path) {
  auto p = inside(path);
  if (!p) return p.error();
  if (p->empty()) return Error::make("is_a_directory", "'.': a directory's listing is not read from a session on the kubernetes backend");
  auto started = PodExec::start(shared_->client, exec_request({"tar", "-cf", "-", "-C", kWorkDir, "--", *p}, false, std::nullopt));
  if (!started) return Error::make("file_error", started.error().message);
  std::shared_ptr<PodExec> exec(std::move(*started));
  auto out = std::make_shared<UniqueFd>(exec->take_stdout());
  UniqueFd err = exec->take_stderr();
  std::array<char, 512> header{};
  bool have = read_exactly(out->get(), header.data(), header.size());
  // GNU's long names and pax headers come first: skipped to the file's own header.
  while (have && (header[156] == 'L' || header[156] == 'K' || header[156] == 'x' || header[156] == 'g')) {
    std::uint64_t skip = (tar_number(&header[124], 12) + 511) / 512 * 512;
    std::string discard(static_cast<std::size_t>(skip), '\0');
    have = read_exactly(out->get(), discard.data(), discard.size()) && read_exactly(out->get(), header.data(), header.size());
  }
  if (!have) {
    std::string rest, complaint;
    read_all(out->get(), rest);
    read_all(err.get(), complaint);
    auto end = exec->wait(kCommandTimeout);
    return sandbox::file_error(errno_of(complaint + (end ? end->message : "")), *p);
  }
  const char type = header[156];
  if (type == '5') return sandbox::file_error(EISDIR, *p);
  if (type != '0' && type != '\0' && type != '7')
    return Error::make("not_a_regular_file", "'" + *p + "': not a regular file (a symlink is not followed)");
  const std::uint64_t size = tar_number(&header[124], 12);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error::make("file_error", std::string("pipe: ") + std::strerror(errno));
  auto entry = std::make_shared<Entry>();
  entry->transfer = true;
  entry->exec = exec;
  auto id = add(entry);
  if (!id) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return id.error();
  }
  auto to_caller = std::make_shared<UniqueFd>(pipe_fds[1]);
  auto err_fd = std::make_shared<UniqueFd>(std::move(err));
  entry->worker = std::thread([this, entry, exec, out, to_caller, err_fd, size] {
    std::array<char, 16384> buf;
    std::uint64_t left = size;
    bool ok = true;
    while (left > 0 && ok) {
      ssize_t n = ::read(out->get(), buf.data(), static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size())));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) { ok = false; break; }
      left -= static_cast<std::uint64_t>(n);
      ok = write_unless_stopped(to_caller->get(), buf.data(), static_cast<std::size_t>(n), &stop_);
    }
    to_caller->reset();
    std::string rest, complaint;
    read_all(out->get(), rest, &stop_);
    read_all(err_fd->get(), complaint, &stop_);
    auto end = exec->wait(kCommandTimeout);
    set_end(*entry, ok && end && end->has_code && end->code == 0 ? 0 : EIO);
  });
  sandbox::FileTransfer transfer;
  transfer.id = *id;
  transfer.size = size;
  transfer.pipe.reset(pipe_fds[0]);
  return transfer;
}

// The caller's bytes, gathered (a tar header needs the size first, bounded by the disk
// limit), go to `tar -x -k` (it refuses to replace what is there) as one file's archive.
Result<sandbox::FileTransfer> KubernetesSession::write_file(const std::string& path) {
  auto p = inside(path);
  if (!p) return p.error();
  if (p->empty()) return sandbox::file_error(EISDIR, *p);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error::make("file_error", std::string("pipe: ") + std::strerror(errno));
  auto entry = std::make_shared<Entry>();
  entry->transfer = true;
  auto id = add(entry);
  if (!id) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return id.error();
  }
  auto from_caller = std::make_shared<UniqueFd>(pipe_fds[0]);
  const std::string name = *p;
  const std::uint64_t limit = plan_.limits.disk_bytes;
  entry->worker = std::thread([this, entry, from_caller, name, limit] {
    std::string content;
    if (!read_all(from_caller->get(), content, &stop_, limit)) return set_end(*entry, stop_ ? EIO : EFBIG);
    from_caller->reset();
    auto archive = ustar_archive(name, content);
    if (!archive) return set_end(*entry, ENAMETOOLONG);
    auto ran = run({"tar", "-xkf", "-", "-C", kWorkDir}, *archive);
    if (!ran) return set_end(*entry, EIO);
    if (ran->end.has_code && ran->end.code == 0) return set_end(*entry, 0);
    set_end(*entry, errno_of(ran->err + ran->end.message));
  });
  sandbox::FileTransfer transfer;
  transfer.id = *id;
  transfer.pipe.reset(pipe_fds[1]);
  return transfer;
}

Result<std::string> wait_until_running(KubeApi& api, const std::string& name, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(20);
  for (;;) {
    auto pod = api.get("pods", name);
    if (!pod) return pod.error();
    const json& status = (*pod)["status"];
    std::string phase = status.value("phase", "");
    if (phase == "Running") return std::string();
    if (phase == "Succeeded" || phase == "Failed")
      return Error::make("setup_error", "the session's pod " + name + " ended before it ran (phase " + phase + ")");
    if (status.contains("containerStatuses"))
      for (const auto& c : status["containerStatuses"])
        if (c.contains("state") && c["state"].contains("waiting")) {
          std::string reason = c["state"]["waiting"].value("reason", "");
          if (reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "InvalidImageName" ||
              reason.find("ContainerConfigError") != std::string::npos || reason == "CreateContainerError")
            return Error::make("setup_error", "the session's pod " + name + " cannot start: " + reason + ": " +
                                                  c["state"]["waiting"].value("message", ""));
        }
    if (Clock::now() >= deadline)
      return Error::make("setup_error", "the session's pod " + name + " was not Running within " +
                                            std::to_string(timeout.count()) + " ms (phase " + (phase.empty() ? "Pending" : phase) + ")");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
}

}  // namespace

KubernetesSessionBackend::KubernetesSessionBackend(KubeEndpoint endpoint, KubernetesOptions options, SessionPodOptions session)
    : shared_(std::make_shared<Shared>(std::move(endpoint), std::move(options), std::move(session))) {}

KubernetesSessionBackend::~KubernetesSessionBackend() = default;

Result<std::unique_ptr<Session>> KubernetesSessionBackend::start_session(const RunRequest& request, const RunContext& context) {
  const KubernetesOptions& options = shared_->options;
  auto fail = [](const std::string& step, const Error& error) {
    return Error::make("setup_error", "the session's pod (" + step + "): " + error.message);
  };
  PodPlan plan;
  plan.image = request.placement.image.empty() ? options.image : request.placement.image;
  if (plan.image.empty()) return Error::make("setup_error", "no image for the session: set tiers.<risk>.kubernetes.image");
  if (!request.mounts.empty())
    return Error::make("setup_error", "the session's template has mounts (" + request.mounts.front().host_path +
                                          "), which a session pod does not get: host directories do not exist in the cluster");
  auto cidrs = egress_cidrs(request.egress, options.gateway != nullptr);
  if (!cidrs) return fail("egress", cidrs.error());
  plan.egress = std::move(*cidrs);
  plan.name = session_pod_name(context.invocation_id);
  plan.namespace_name = options.namespace_name;
  plan.invocation_id = context.invocation_id;
  plan.tool_name = context.tool_name.empty() ? "session" : context.tool_name;
  plan.instance = options.instance;
  auto life = request.limits.wall_time;
  plan.expires_at = unix_now() + std::chrono::duration_cast<std::chrono::seconds>(life + options.pending_allowance).count() + 1;
  plan.runtime_class = options.runtime_class;
  plan.argv = {"/bin/sh", "-c", kSessionIdleScript};
  plan.env = request.env;
  plan.credentials = request.credentials;
  plan.limits = request.limits;
  plan.placement = request.placement;

  std::unique_ptr<egress::EgressGateway::Admission> admission;
  if (options.gateway && request.egress.has_egress()) {
    auto policy = egress::EgressPolicy::compile(request.egress);
    if (!policy) return fail("egress", policy.error());
    if (options.forbidden)
      for (const auto& e : *options.forbidden) policy->forbid(e);
    auto admitted = options.gateway->admit(std::move(*policy), context.rule_set, context.invocation_id);
    if (!admitted) return fail("egress gateway", admitted.error());
    admission = std::move(*admitted);
    plan.proxy = options.gateway_route;
    plan.proxy->username = admission->username();
    plan.proxy->password = admission->password();
  }

  KubeApi& api = shared_->api;
  auto cleanup = [&] {
    (void)api.remove("networkpolicies", plan.name);
    (void)api.remove("secrets", plan.name);
    (void)api.remove("pods", plan.name);
    if (admission) (void)admission->close();
  };
  auto pod = api.create("pods", pod_json(plan));
  if (!pod) {
    if (admission) (void)admission->close();
    return fail("create", pod.error());
  }
  std::string uid = (*pod)["metadata"].value("uid", "");
  Status made = Status::success();
  if (auto secret = api.create("secrets", secret_json(plan, uid)); !secret) made = fail("its Secret", secret.error());
  else if (auto policy = api.create("networkpolicies", network_policy_json(plan, uid)); !policy)
    made = fail("its NetworkPolicy", policy.error());
  else if (auto lifted = api.json_patch("pods", plan.name,
                                        json::array({{{"op", "test"}, {"path", "/spec/schedulingGates/0/name"}, {"value", kSchedulingGate}},
                                                     {{"op", "remove"}, {"path", "/spec/schedulingGates"}}}));
           !lifted)
    made = fail("lift its scheduling gate", lifted.error());
  if (made) {
    auto running = wait_until_running(api, plan.name, shared_->session.start_timeout);
    if (!running) made = running.error();
  }
  if (!made) {
    cleanup();
    return made.error();
  }
  auto deadline = Clock::now() + life;
  return std::unique_ptr<Session>(new KubernetesSession(shared_, std::move(plan), std::move(admission), deadline));
}

}  // namespace airlock::backend::kubernetes
