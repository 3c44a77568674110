#include "sandbox/session/session.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <algorithm>
#include <cstring>
#include <utility>
#include <mutex>
#include <thread>

#include "sandbox/fd_passing.hpp"
#include "sandbox/plan.hpp"
#include "sandbox/session/session_protocol.hpp"

namespace airlock::sandbox {

using namespace session_protocol;

// Shared by the caller, the supervising thread (launch, then wait until the sandbox has
// ended) and the reader of the init's replies.
struct SessionSandbox::State {
  mutable std::mutex mu;
  std::condition_variable cv;
  UniqueFd control;  // ours; closing it ends the session
  std::mutex send_mu;
  std::map<std::string, std::string> env;  // the session's, as the sandbox's program would have it
  std::string workdir;
  std::uint32_t next_id = 1;
  std::map<std::uint32_t, Reply> starts;  // 'S' or 'F' replies not yet taken
  std::map<std::uint32_t, UniqueFd> terminals;  // a terminal exec's pty master, with its 'S'
  std::map<std::uint32_t, ExecEnd> ends;
  Sandbox* sandbox = nullptr;  // while the supervisor runs it
  bool launched = false, supervised = false, replies_ended = false;
  std::optional<Error> launch_error;
  Outcome outcome;
  std::thread supervisor, reader;
};

namespace {

// Keeps the calling thread's stack out of the process's clones while it lives (MADV_DONTFORK).
// Every sandbox's child is a clone of the whole supervising process and copies its page
// tables: without this, each open session's two threads would add their stacks' to every
// later session's init (measured: 3 MiB of page tables per init with 500 sessions open). Only
// for a thread that clones nothing while it holds one (a clone runs on its caller's stack);
// undone at its end, as glibc gives a finished thread's stack to the next one.
class StackNotForked {
 public:
  StackNotForked() {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    if (pthread_attr_getstack(&attr, &base_, &size_) != 0 || ::madvise(base_, size_, MADV_DONTFORK) != 0) size_ = 0;
    pthread_attr_destroy(&attr);
  }
  ~StackNotForked() {
    if (size_ > 0) (void)::madvise(base_, size_, MADV_DOFORK);
  }
  StackNotForked(const StackNotForked&) = delete;
  StackNotForked& operator=(const StackNotForked&) = delete;

 private:
  void* base_ = nullptr;
  std::size_t size_ = 0;
};

void read_replies(SessionSandbox::State& st) {
  StackNotForked not_forked;
  for (;;) {
    Reply r;
    ReceivedFds fds;
    ssize_t n = receive_message(st.control.get(), &r, sizeof r, fds, 0);
    if (n < 0 && errno == EINTR) continue;
    std::vector<UniqueFd> passed;
    for (std::size_t i = 0; i < fds.count; ++i) passed.emplace_back(fds.fds[i]);
    std::lock_guard lock(st.mu);
    if (n != static_cast<ssize_t>(sizeof r) || fds.data_truncated) {  // the init has gone (or said nonsense)
      st.replies_ended = true;
      st.cv.notify_all();
      return;
    }
    if (r.tag == 'X')
      st.ends[r.id] = ExecEnd{r.exited == 1, r.code, r.user_us, r.sys_us, r.max_rss_kb};
    else
      st.starts[r.id] = r;
    if (r.tag == 'S' && passed.size() == 1) st.terminals[r.id] = std::move(passed.front());
    st.cv.notify_all();
  }
}

void supervise(SessionSandbox::State& st, Spec spec, UniqueFd theirs, SessionHooks hooks) {
  spec.session_control_fd = theirs.get();
  auto launched = Sandbox::launch(spec);
  theirs.reset();  // the init has its copy
  if (launched && hooks.launched) hooks.launched(**launched);
  {
    std::lock_guard lock(st.mu);
    if (!launched) st.launch_error = launched.error();
    else st.sandbox = launched->get();
    st.launched = true;
    st.cv.notify_all();
  }
  if (!launched) return;
  StackNotForked not_forked;  // from now on this thread only waits
  Outcome outcome = (*launched)->wait();
  if (hooks.ended) hooks.ended();
  std::lock_guard lock(st.mu);
  st.sandbox = nullptr;
  st.outcome = std::move(outcome);
  st.supervised = true;
  st.cv.notify_all();
  launched->reset();
}

Status bad(const std::string& what) { return Error::make("invalid_argument", what); }

// The Exec message: header, cwd, argv, env, each string NUL-terminated.
Result<std::string> exec_message(const SessionSandbox::State& st, std::uint32_t id, const SessionExec& request,
                                 const std::optional<WindowSize>& terminal) {
  if (request.argv.empty() || request.argv.front().empty()) return bad("no command to run").error();
  const std::string cwd = request.cwd.empty() ? st.workdir : request.cwd;
  if (cwd.front() != '/') return bad("the working directory must be absolute: " + cwd).error();
  auto env = st.env;
  for (const auto& [k, v] : request.env) env[k] = v;
  std::vector<std::string> strings{cwd};
  strings.insert(strings.end(), request.argv.begin(), request.argv.end());
  for (const auto& [k, v] : env) {
    if (k.empty() || k.find('=') != std::string::npos) return bad("environment variable name '" + k + "' is not a valid name").error();
    strings.push_back(k + "=" + v);
  }
  if (request.argv.size() > kMaxArgs || env.size() > kMaxArgs) return bad("more than 1024 arguments or variables").error();
  ExecHeader h{'E', id, static_cast<std::uint32_t>(request.argv.size()), static_cast<std::uint32_t>(env.size())};
  if (terminal) {
    if (terminal->rows == 0 || terminal->columns == 0)
      return bad("the terminal's window size must be at least 1x1").error();
    h.rows = terminal->rows;
    h.columns = terminal->columns;
  }
  std::string message(reinterpret_cast<const char*>(&h), sizeof h);
  for (const auto& s : strings) {
    if (s.find('\0') != std::string::npos) return bad("an argument, the directory or a variable contains a NUL byte").error();
    message += s;
    message += '\0';
  }
  if (message.size() > kMaxMessageBytes) return bad("the command, directory and environment exceed 64 KiB").error();
  return message;
}

Status send_request(int socket, const std::string& message, const int* fds, std::size_t nfds) {
  if (!send_message(socket, message.data(), message.size(), fds, nfds))
    return Error::make("session_ended", std::string("the session's init is gone: ") + std::strerror(errno));
  return {};
}

bool over(const SessionSandbox::State& st) { return st.supervised || st.replies_ended; }

// An id for a new request, unless the session is over.
Result<std::uint32_t> next_id(SessionSandbox::State& st) {
  std::lock_guard lock(st.mu);
  if (over(st) || !st.control) return Error::make("session_ended", "the session has ended");
  return st.next_id++;
}

// The init's first reply to request `id` (Started, Failed or Done), once it has come; nothing
// when the session ends first.
std::optional<Reply> await_reply(SessionSandbox::State& st, std::uint32_t id) {
  std::unique_lock lock(st.mu);
  st.cv.wait(lock, [&] { return st.starts.count(id) || over(st); });
  auto it = st.starts.find(id);
  if (it == st.starts.end()) return std::nullopt;
  Reply r = it->second;
  st.starts.erase(it);
  return r;
}

// Sends a File request and waits for its Done reply.
Result<Reply> file_request(SessionSandbox::State& st, FileOp op, const std::vector<std::string>& paths, int fd) {
  auto id = next_id(st);
  if (!id) return id.error();
  FileHeader h{'P', *id, op};
  std::string message(reinterpret_cast<const char*>(&h), sizeof h);
  for (const auto& p : paths) {
    message += p;
    message += '\0';
  }
  if (message.size() > kMaxMessageBytes) return Error::make("invalid_path", "the path is too long");
  {
    std::lock_guard send_lock(st.send_mu);
    if (auto sent = send_request(st.control.get(), message, &fd, fd >= 0 ? 1 : 0); !sent) return sent.error();
  }
  auto r = await_reply(st, *id);
  if (!r) return Error::make("session_ended", "the session ended during the file operation");
  if (r->err != 0) return file_error(r->err, paths.front());
  return *r;
}

Result<std::pair<UniqueFd, UniqueFd>> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::make("setup_error", std::string("pipe: ") + std::strerror(errno));
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

}  // namespace

Error file_error(int err, const std::string& path) {
  const std::string where = "'" + (path.empty() ? std::string(".") : path) + "': ";
  switch (err) {
    case ENOENT:
      return Error::make("file_not_found", where + "no such file or directory");
    case EXDEV:
    case ELOOP:
      return Error::make("outside_workspace", where + "leads out of the session's workspace (a '..' or a symlink)");
    case EISDIR:
      return Error::make("is_a_directory", where + "is a directory");
    case ENOTDIR:
      return Error::make("not_a_directory", where + "a part of the path is not a directory");
    case ENOTEMPTY:
      return Error::make("directory_not_empty", where + "the directory is not empty");
    case EEXIST:
      return Error::make("file_exists", where + "something is there already");
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return Error::make("disk_limit", where + "the session's disk limit is reached");
    case EACCES:
    case EPERM:
    case EROFS:
      return Error::make("permission_denied", where + "not writable or readable by the session");
    case EINVAL:
    case ENAMETOOLONG:
      return Error::make("invalid_path", where + "not a path the workspace can have");
    default:
      return Error::make("file_error", where + std::strerror(err));
  }
}

Result<std::string> workspace_path(const std::string& path) {
  if (path.size() > 4096) return Error::make("invalid_path", "the path is longer than 4096 bytes");
  if (path.find('\0') != std::string::npos) return Error::make("invalid_path", "the path contains a NUL byte");
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    const std::string part = path.substr(start, slash - start);
    start = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return Error::make("invalid_path", "'" + path + "': '..' is not allowed");
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

SessionSandbox::SessionSandbox(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<SessionSandbox>> SessionSandbox::start(Spec spec, SessionHooks hooks) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    return Error::make("setup_error", std::string("socketpair (the session's control socket): ") + std::strerror(errno));
  auto st = std::make_shared<State>();
  st->control.reset(pair[0]);
  UniqueFd theirs(pair[1]);
  spec.argv = {"airlock-session"};  // never executed: the init serves execs instead
  spec.stdin_source = StdinSource{};
  spec.output_mode = OutputMode::collect;
  st->env = {{"PATH", kDefaultPath}, {"HOME", spec.workdir}, {"LANG", "C.UTF-8"}};
  for (const auto& [k, v] : spec.env) st->env[k] = v;
  st->workdir = spec.workdir;
  spec.limits.freezable = true;  // pause and resume
  if (auto valid = validate_spec(spec); !valid) return valid.error();
  st->supervisor = std::thread(supervise, std::ref(*st), std::move(spec), std::move(theirs), std::move(hooks));
  std::unique_lock lock(st->mu);
  st->cv.wait(lock, [&] { return st->launched; });
  if (st->launch_error) {
    Error e = *st->launch_error;
    lock.unlock();
    st->supervisor.join();
    return e;
  }
  lock.unlock();
  st->reader = std::thread(read_replies, std::ref(*st));
  return std::unique_ptr<SessionSandbox>(new SessionSandbox(std::move(st)));
}

SessionSandbox::~SessionSandbox() { (void)end(); }

namespace {

// Sends an Exec message with its descriptors and waits for the init's answer.
Result<Reply> send_exec(SessionSandbox::State& st, std::uint32_t id, const std::string& message, const int* fds,
                        std::size_t nfds, const std::string& program) {
  {
    std::lock_guard send_lock(st.send_mu);
    if (auto sent = send_request(st.control.get(), message, fds, nfds); !sent) return sent.error();
  }
  auto r = await_reply(st, id);
  if (!r) return Error::make("session_ended", "the session ended before the command started");
  if (r->tag != 'S') return Error::make("exec_failed", program + ": " + std::strerror(r->err));
  return *r;
}

// A terminal exec: the init opens the pty inside; its master comes back with the start.
Result<StartedExec> start_on_terminal(SessionSandbox::State& st, std::uint32_t id, const std::string& message,
                                      const std::string& program) {
  auto r = send_exec(st, id, message, nullptr, 0, program);
  if (!r) return r.error();
  StartedExec started;
  started.id = id;
  started.pid = r->pid;
  std::lock_guard lock(st.mu);
  auto it = st.terminals.find(id);
  if (it == st.terminals.end()) return Error::make("exec_failed", program + ": the init sent no terminal");
  started.terminal = std::move(it->second);
  st.terminals.erase(it);
  return started;
}

}  // namespace

Result<StartedExec> SessionSandbox::exec_on_terminal(const SessionExec& request, WindowSize size) {
  auto id = next_id(*state_);
  if (!id) return id.error();
  auto message = exec_message(*state_, *id, request, size);
  if (!message) return message.error();
  return start_on_terminal(*state_, *id, *message, request.argv.front());
}

Result<StartedExec> SessionSandbox::exec(const SessionExec& request) {
  auto& st = *state_;
  auto id = next_id(st);
  if (!id) return id.error();
  auto message = exec_message(st, *id, request, std::nullopt);
  if (!message) return message.error();
  auto in = make_pipe();
  if (!in) return in.error();
  auto out = make_pipe();
  if (!out) return out.error();
  auto err = make_pipe();
  if (!err) return err.error();
  const int fds[3] = {in->first.get(), out->second.get(), err->second.get()};
  auto r = send_exec(st, *id, *message, fds, 3, request.argv.front());
  if (!r) return r.error();
  // The exec has its own copies of the other ends (ours close as this returns): EOF on its
  // output means it closed them.
  StartedExec started;
  started.id = *id;
  started.pid = r->pid;
  started.stdin_w = std::move(in->second);
  started.stdout_r = std::move(out->first);
  started.stderr_r = std::move(err->first);
  return started;
}

std::optional<ExecEnd> SessionSandbox::wait(std::uint32_t id, std::chrono::milliseconds timeout) {
  auto& st = *state_;
  std::unique_lock lock(st.mu);
  st.cv.wait_for(lock, timeout, [&] { return st.ends.count(id) || over(st); });
  auto it = st.ends.find(id);
  if (it == st.ends.end()) return std::nullopt;
  ExecEnd end = it->second;
  st.ends.erase(it);
  return end;
}

Status SessionSandbox::signal(std::uint32_t id, int sig) {
  auto& st = *state_;
  {
    std::lock_guard lock(st.mu);
    if (over(st) || !st.control) return Error::make("session_ended", "the session has ended");
  }
  SignalMessage m{'K', id, sig};
  std::lock_guard send_lock(st.send_mu);
  return send_request(st.control.get(), std::string(reinterpret_cast<const char*>(&m), sizeof m), nullptr, 0);
}

Result<FileTransfer> SessionSandbox::read_file(const std::string& path) {
  auto pipe = make_pipe();
  if (!pipe) return pipe.error();
  auto done = file_request(*state_, FileOp::read, {path}, pipe->second.get());
  if (!done) return done.error();
  FileTransfer t;
  t.id = done->id;
  t.directory = S_ISDIR(done->file_type);
  t.size = done->size;
  if (!t.directory && !S_ISREG(done->file_type))
    return Error::make("not_a_regular_file", "'" + path + "' is neither a regular file nor a directory");
  t.pipe = std::move(pipe->first);  // the copier holds the write end: EOF is its end
  return t;
}

Result<FileTransfer> SessionSandbox::write_file(const std::string& path) {
  if (path.empty()) return Error::make("is_a_directory", "'.': the workspace itself is a directory");
  auto pipe = make_pipe();
  if (!pipe) return pipe.error();
  auto done = file_request(*state_, FileOp::write, {path}, pipe->first.get());
  if (!done) return done.error();
  FileTransfer t;
  t.id = done->id;
  t.pipe = std::move(pipe->second);
  return t;
}

Status SessionSandbox::remove_file(const std::string& path) {
  if (path.empty()) return Error::make("invalid_path", "the workspace itself cannot be removed");
  auto done = file_request(*state_, FileOp::remove, {path}, -1);
  if (!done) return done.error();
  return {};
}

Status SessionSandbox::move_file(const std::string& from, const std::string& to) {
  if (from.empty() || to.empty()) return Error::make("invalid_path", "the workspace itself cannot be moved");
  auto done = file_request(*state_, FileOp::move, {from, to}, -1);
  if (!done) return done.error();
  return {};
}

Status SessionSandbox::make_directory(const std::string& path) {
  if (path.empty()) return {};  // the workspace is there
  auto done = file_request(*state_, FileOp::make_directory, {path}, -1);
  if (!done) return done.error();
  return {};
}

Status SessionSandbox::freeze(bool frozen) {
  std::lock_guard lock(state_->mu);
  if (!state_->sandbox || over(*state_)) return Error::make("session_ended", "the session has ended");
  return state_->sandbox->freeze(frozen);
}

Outcome SessionSandbox::end() {
  auto& st = *state_;
  {
    std::lock_guard lock(st.mu);  // a paused session's init must run to see the end
    if (st.sandbox) (void)st.sandbox->freeze(false);
  }
  {
    std::lock_guard send_lock(st.send_mu);
    if (st.control) ::shutdown(st.control.get(), SHUT_RDWR);  // the init sees the end; the reader too
  }
  if (st.reader.joinable()) st.reader.join();
  if (st.supervisor.joinable()) st.supervisor.join();
  std::lock_guard lock(st.mu);
  return st.outcome;
}

bool SessionSandbox::ended() const {
  std::lock_guard lock(state_->mu);
  return over(*state_);
}

std::optional<CpuTime> SessionSandbox::cpu_used() const {
  std::lock_guard lock(state_->mu);
  return state_->sandbox ? state_->sandbox->cpu_used() : std::nullopt;
}

}  // namespace airlock::sandbox
