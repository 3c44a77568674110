#include "mcp/stdio_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/no_sigpipe.hpp"
#include "mcp/line_reader.hpp"
#include "mcp/stdio_client_impl.hpp"

namespace airlock::mcp {
namespace {

Error server_failed(const std::string& message) {
  return Error::make("tool_server_failed", message);
}

Status write_with_deadline(int fd, const std::string& data, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write_without_sigpipe(fd, data.data() + off, data.size() - off);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return server_failed(std::string("writing to the server's stdin: ") + std::strerror(errno));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return server_failed("the server stopped reading its stdin (a write waited " +
                           std::to_string(timeout.count()) + " ms)");
    pollfd pfd{fd, POLLOUT, 0};
    (void)::poll(&pfd, 1, static_cast<int>(left.count()));
  }
  return {};
}

}  // namespace

StdioClient::StdioClient(UniqueFd to_server, UniqueFd from_server, StdioClientOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->to_server = std::move(to_server);
  impl_->from_server = std::move(from_server);
  impl_->wake.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  int flags = ::fcntl(impl_->to_server.get(), F_GETFL);
  if (flags >= 0) (void)::fcntl(impl_->to_server.get(), F_SETFL, flags | O_NONBLOCK);
  impl_->reader = std::thread([impl = impl_.get()] { impl->read_loop(); });
}

StdioClient::~StdioClient() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  std::uint64_t one = 1;
  (void)!::write(impl_->wake.get(), &one, sizeof one);
  impl_->reader.join();
  impl_->close(Error::make("stopped", "the server's instance was stopped"));
}

bool StdioClient::closed() const {
  std::lock_guard lock(impl_->mu);
  return impl_->is_closed;
}

bool StdioClient::server_hung_up() const {
  std::lock_guard lock(impl_->mu);
  return impl_->hung_up;
}

Error StdioClient::close_reason() const {
  std::lock_guard lock(impl_->mu);
  return impl_->reason;
}

Status StdioClient::Impl::send(const nlohmann::json& message) {
  std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  std::lock_guard lock(write_mu);
  return write_with_deadline(to_server.get(), line, options.write_timeout);
}

void StdioClient::Impl::forget(std::int64_t id, const std::string& token) {
  std::lock_guard lock(mu);
  pending.erase(id);
  if (!token.empty()) by_progress_token.erase(token);
}

// The caller gives up on a request (cancel, timeout): it fails now, and the server is told.
void StdioClient::Impl::cancel_request(std::int64_t id, const Error& why) {
  {
    std::lock_guard lock(mu);
    auto it = pending.find(id);
    if (it == pending.end() || it->second->outcome) return;
    it->second->outcome = why;
    cv.notify_all();
  }
  (void)send(make_notification("notifications/cancelled",
                               {{"requestId", id}, {"reason", why.message}}));
}

Result<nlohmann::json> StdioClient::Impl::request(const std::string& method,
                                                  nlohmann::json params,
                                                  const RequestOptions& ro) {
  auto p = std::make_shared<PendingRequest>();
  p->progress = ro.progress;
  std::int64_t id;
  std::string token;
  {
    std::lock_guard lock(mu);
    if (is_closed) return server_failed(reason.message);
    id = next_id++;
    pending[id] = p;
    if (ro.progress) {
      token = "airlock-" + std::to_string(id);
      by_progress_token[token] = p;
      params["_meta"]["progressToken"] = token;
    }
  }
  if (auto sent = send(make_request(id, method, std::move(params))); !sent) {
    forget(id, token);
    return sent.error();
  }
  {
    CancelHook hook(ro.cancel, [this, id] {
      cancel_request(id, Error::make("cancelled", "the call was cancelled"));
    });
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, ro.timeout, [&] { return p->outcome.has_value(); })) {
      lock.unlock();
      cancel_request(id, Error::make("timeout", "the server did not answer " + method +
                                                    " within " +
                                                    std::to_string(ro.timeout.count()) + " ms"));
    }
  }
  forget(id, token);
  std::lock_guard lock(mu);
  return *p->outcome;
}

void StdioClient::Impl::close(Error why) {
  {
    std::lock_guard lock(mu);
    if (is_closed) return;
    is_closed = true;
    reason = why;
    for (auto& [id, p] : pending)
      if (!p->outcome) p->outcome = server_failed(why.message);
    cv.notify_all();
  }
}

void StdioClient::Impl::read_loop() {
  LineReader lines(from_server.get(), wake.get(), options.max_line_bytes);
  Error why;
  for (;;) {
    auto line = lines.next();
    if (!line) {
      why = server_failed("protocol error: the server wrote " + line.error().message);
      break;
    }
    if (!*line) {
      why = server_failed("the server closed its stdout");
      std::lock_guard lock(mu);
      hung_up = !stopping;
      break;
    }
    if (line->value().empty()) continue;
    if (auto handled = handle_line(line->value()); !handled) {
      why = handled.error();
      break;
    }
  }
  bool stopped, eof;
  {
    std::lock_guard lock(mu);
    stopped = stopping;
    eof = hung_up;
  }
  if (stopped) return;  // the destructor closes
  close(why);
  if (options.on_closed) options.on_closed(why, eof);
}

}  // namespace airlock::mcp
