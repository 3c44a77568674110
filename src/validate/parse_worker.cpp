#include "validate/parse_worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>

#include "common/no_sigpipe.hpp"
#include "sandbox/sandbox.hpp"

namespace airlock::validate {

using Clock = std::chrono::steady_clock;

sandbox::Spec parser_sandbox_spec(const ParseWorkerConfig& config,
                                  const std::vector<std::string>& args) {
  sandbox::Spec spec;
  // -I: isolated (no environment, no user site, no cwd on sys.path); -B: no bytecode files.
  spec.argv = {config.interpreter, "-I", "-B", kParserScriptInSandbox};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.binds.push_back({config.script, kParserScriptInSandbox, false});
  struct stat walker {};
  if (!config.native_walker.empty() && ::access(config.native_walker.c_str(), R_OK) == 0 &&
      ::stat(config.native_walker.c_str(), &walker) == 0 && (walker.st_mode & S_IROTH) != 0) {
    // Beside the script, under its own name: the ABI tag in it is what lets only the
    // interpreter it was built for import it. (One this user cannot read, or that the sandbox
    // user could not, is left out: the worker then walks in Python.)
    std::string_view name = config.native_walker;
    name.remove_prefix(name.rfind('/') + 1);
    spec.binds.push_back({config.native_walker, std::string(kParserDirInSandbox) + "/" + std::string(name), false});
  }
  spec.limits.memory_bytes = config.memory_bytes;
  spec.limits.wall_time = config.lifetime;
  spec.limits.pids = 4;
  spec.limits.disk_bytes = 4ULL << 20;
  spec.limits.open_files = 64;
  spec.limits.output_bytes = 64ULL << 20;
  spec.hostname = "airlock-validate";
  // The parser's own memory (the PEG parser's arena, token buffers) comes from glibc's malloc,
  // which returns the top of the heap to the kernel after every parse; the next parse then
  // page-faults it back: ~300 faults and 0.6-0.8 ms of a 300-line parse. Keeping up to 32 MiB
  // freed makes the worker's parse as fast as its own floor. (-I ignores PYTHON* variables, not
  // this one.)
  spec.env["GLIBC_TUNABLES"] = "glibc.malloc.trim_threshold=33554432";
  return spec;
}

// One running worker: the sandbox is launched and supervised on its own thread (wait() must
// run on the launching thread); the pipes are ours.
struct ParseWorker::Process {
  std::thread supervisor;
  UniqueFd to_worker;
  UniqueFd from_worker;
  std::string buffered;  // bytes read past the last reply
  sandbox::Sandbox* sandbox = nullptr;  // valid while the supervisor thread runs
  std::mutex sandbox_mutex;
  std::string ending;  // how the process ended (verdict, message, stderr), once it has
  std::promise<void> exited;
  std::shared_future<void> exited_future;

  void kill() {
    std::lock_guard lock(sandbox_mutex);
    if (sandbox) sandbox->kill();
  }
  ~Process() {
    to_worker.reset();  // EOF: the worker leaves its loop
    if (supervisor.joinable()) {
      if (exited_future.wait_for(std::chrono::milliseconds(500)) != std::future_status::ready)
        kill();
      supervisor.join();
    }
  }
};

ParseWorker::ParseWorker(ParseWorkerConfig config) : config_(std::move(config)) {}

ParseWorker::~ParseWorker() {
  std::lock_guard lock(mutex_);
  stop_locked();
}

unsigned ParseWorker::starts() const {
  std::lock_guard lock(mutex_);
  return starts_;
}

unsigned ParseWorker::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

Status ParseWorker::start() {
  std::lock_guard lock(mutex_);
  if (process_) return Status::success();
  return start_locked();
}

void ParseWorker::stop_locked() { process_.reset(); }

Status ParseWorker::start_locked() {
  struct stat st {};
  if (::stat(config_.script.c_str(), &st) != 0)
    return Error::make("parse_failed", "parser script " + config_.script + ": " + strerror(errno));
  if ((st.st_mode & S_IROTH) == 0)
    return Error::make("parse_failed", "parser script " + config_.script +
                                           " must be world-readable (the sandbox runs as nobody)");
  auto process = std::make_unique<Process>();
  process->exited_future = process->exited.get_future().share();
  sandbox::Spec spec = parser_sandbox_spec(config_, {"serve"});
  spec.output_mode = sandbox::OutputMode::caller;

  std::promise<Status> launched;
  auto launched_future = launched.get_future();
  Process* raw = process.get();
  process->supervisor = std::thread([raw, spec, &launched] {
    auto sandbox = sandbox::Sandbox::launch(spec);
    if (!sandbox) {
      launched.set_value(sandbox.error());
      raw->exited.set_value();
      return;
    }
    raw->to_worker = (*sandbox)->take_stdin();
    raw->from_worker = (*sandbox)->take_stdout();
    {
      std::lock_guard lock(raw->sandbox_mutex);
      raw->sandbox = sandbox->get();
    }
    launched.set_value(Status::success());
    sandbox::Outcome outcome = (*sandbox)->wait();
    raw->ending = std::string(sandbox::verdict_name(outcome.verdict)) + ": " + outcome.message +
                  (outcome.stderr_data.empty() ? "" : "; stderr: " + outcome.stderr_data.substr(0, 400));
    {
      std::lock_guard lock(raw->sandbox_mutex);
      raw->sandbox = nullptr;
    }
    raw->exited.set_value();
  });
  Status status = launched_future.get();
  if (!status.ok()) {
    process->supervisor.join();
    return Error::make("parse_failed", "the parse worker could not start: " + status.error().message);
  }
  ::fcntl(process->to_worker.get(), F_SETFL, ::fcntl(process->to_worker.get(), F_GETFL) | O_NONBLOCK);
  ::fcntl(process->from_worker.get(), F_SETFL, ::fcntl(process->from_worker.get(), F_GETFL) | O_NONBLOCK);
  process_ = std::move(process);
  started_at_ = Clock::now();
  ++starts_;
  return Status::success();
}

namespace {

enum class IoResult { ok, timeout, closed };

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left);
}

IoResult write_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    ssize_t n = write_without_sigpipe(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return IoResult::closed;
    pollfd p{fd, POLLOUT, 0};
    int wait = remaining_ms(deadline);
    if (wait == 0) return IoResult::timeout;
    if (::poll(&p, 1, wait) == 0) return IoResult::timeout;
    if (p.revents & (POLLERR | POLLHUP)) return IoResult::closed;
  }
  return IoResult::ok;
}

// Reads until `buffer` holds at least `size` bytes.
IoResult read_until(int fd, std::string& buffer, std::size_t size, Clock::time_point deadline) {
  char chunk[65536];
  while (buffer.size() < size) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      buffer.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return IoResult::closed;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return IoResult::closed;
    pollfd p{fd, POLLIN, 0};
    int wait = remaining_ms(deadline);
    if (wait == 0 || ::poll(&p, 1, wait) == 0) return IoResult::timeout;
  }
  return IoResult::ok;
}

// Reads until `buffer` contains '\n'.
IoResult read_line(int fd, std::string& buffer, Clock::time_point deadline) {
  while (buffer.find('\n') == std::string::npos) {
    IoResult r = read_until(fd, buffer, buffer.size() + 1, deadline);
    if (r != IoResult::ok) return r;
    // A header is a number and a newline.
    if (buffer.find('\n') == std::string::npos && buffer.size() > 32) return IoResult::closed;
  }
  return IoResult::ok;
}

}  // namespace

namespace {

// A reply payload: JSON, or "ALTB", a 4-byte little-endian length, that much JSON and the
// binary tree (ast_dump.py).
Result<ParsedSource> decode_reply(std::string payload) {
  ParsedSource parsed;
  std::string_view json = payload;
  if (payload.rfind("ALTB", 0) == 0) {
    if (payload.size() < 8)
      return Error::make("parse_failed", "the parse worker sent a truncated binary reply");
    std::uint32_t size = 0;
    for (int i = 3; i >= 0; --i) size = size << 8 | static_cast<unsigned char>(payload[4 + i]);
    if (size > payload.size() - 8)
      return Error::make("parse_failed", "the parse worker sent a truncated binary reply");
    json = std::string_view(payload).substr(8, size);
    parsed.tree_bytes = payload.substr(8 + size);
    if (parsed.tree_bytes.empty())
      return Error::make("parse_failed", "the parse worker sent a binary reply without a tree");
  }
  parsed.reply = Json::parse(json, nullptr, false);
  if (parsed.reply.is_discarded())
    return Error::make("parse_failed", "the parse worker sent JSON that does not parse");
  return parsed;
}

}  // namespace

Result<ParsedSource> ParseWorker::exchange_locked(std::string_view source,
                                          std::chrono::milliseconds timeout) {
  Process& p = *process_;
  auto deadline = Clock::now() + timeout;
  std::string header = std::to_string(source.size()) + "\n";
  IoResult r = write_all(p.to_worker.get(), header, deadline);
  if (r == IoResult::ok) r = write_all(p.to_worker.get(), source, deadline);
  if (r == IoResult::ok) r = read_line(p.from_worker.get(), p.buffered, deadline);
  std::size_t size = 0;
  if (r == IoResult::ok) {
    auto newline = p.buffered.find('\n');
    try {
      size = std::stoull(p.buffered.substr(0, newline));
    } catch (const std::exception&) {
      stop_locked();
      return Error::make("parse_failed", "the parse worker sent a malformed reply header");
    }
    p.buffered.erase(0, newline + 1);
    r = read_until(p.from_worker.get(), p.buffered, size, deadline);
  }
  if (r == IoResult::timeout) {
    process_->kill();
    stop_locked();
    return Error::make("parse_timeout", "the parser did not answer within " +
                                            std::to_string(timeout.count()) +
                                            " ms; the worker was killed and will be restarted");
  }
  if (r == IoResult::closed) {
    std::string ending;
    if (p.exited_future.wait_for(std::chrono::milliseconds(200)) == std::future_status::ready)
      ending = " (" + p.ending + ")";
    stop_locked();
    return Error::make("parse_failed",
                       "the parse worker ended during the request" + ending + "; it will be restarted");
  }
  std::string payload = p.buffered.substr(0, size);
  p.buffered.erase(0, size);
  auto parsed = decode_reply(std::move(payload));
  if (!parsed) stop_locked();  // out of step or compromised: start afresh
  return parsed;
}

Result<ParsedSource> ParseWorker::parse(std::string_view source) {
  return parse(source, config_.request_timeout);
}

Result<ParsedSource> ParseWorker::parse(std::string_view source, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mutex_);
  ++requests_;
  // A worker that ended (crash, lifetime) or is near the end of its wall clock is replaced
  // before the request, so no request fails for the worker's own reasons.
  if (process_ && (process_->exited_future.wait_for(std::chrono::seconds(0)) ==
                       std::future_status::ready ||
                   Clock::now() - started_at_ > config_.lifetime * 9 / 10))
    stop_locked();
  if (!process_) {
    Status started = start_locked();
    if (!started.ok()) return started.error();
  }
  return exchange_locked(source, timeout);
}

}  // namespace airlock::validate
