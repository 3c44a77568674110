#include "sandbox/warm/warm.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace airlock::sandbox {
namespace {

Status await_ready(int control, std::chrono::milliseconds timeout) {
  pollfd pfd{control, POLLIN, 0};
  int rc;
  do rc = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  while (rc < 0 && errno == EINTR);
  if (rc == 0)
    return Error::make("setup_error", "the warm template was not ready within " +
                                          std::to_string(timeout.count()) + " ms");
  char byte = 0;
  ssize_t n = ::recv(control, &byte, 1, MSG_DONTWAIT);
  if (n != 1 || byte != kWarmTemplateReady)
    return Error::make("setup_error",
                       "the warm template exited before it was ready (see its log)");
  return {};
}

}  // namespace

bool WarmTemplate::has_ended() const {
  // After its ready byte the template never writes: anything to read is its end (EOF).
  pollfd pfd{control_.get(), POLLIN | POLLRDHUP, 0};
  int rc;
  do rc = ::poll(&pfd, 1, 0);
  while (rc < 0 && errno == EINTR);
  return rc != 0;
}

std::string warm_library_path() {
  for (const char* path : {
#ifdef AIRLOCK_WARM_LIBRARY_INSTALLED
           AIRLOCK_WARM_LIBRARY_INSTALLED,
#endif
#ifdef AIRLOCK_WARM_LIBRARY_BUILT
           AIRLOCK_WARM_LIBRARY_BUILT,
#endif
           ""})
    if (*path && ::access(path, R_OK) == 0) return path;
  return "";
}

WarmTemplate::WarmTemplate(std::unique_ptr<Sandbox> sandbox, UniqueFd control)
    : sandbox_(std::move(sandbox)),
      control_(std::move(control)),
      cgroup_tree_(sandbox_->warm_cgroup_tree()) {}

Result<std::unique_ptr<WarmTemplate>> WarmTemplate::launch(
    Spec spec, std::chrono::milliseconds ready_timeout) {
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
    return Error::make("setup_error",
                       std::string("socketpair for the warm template: ") + strerror(errno));
  UniqueFd ours(sp[0]), theirs(sp[1]);
  spec.warm_template_fd = theirs.get();
  auto sandbox = Sandbox::launch(spec);
  if (!sandbox) return sandbox.error();
  theirs.reset();
  if (auto r = await_ready(ours.get(), ready_timeout); !r) {
    (*sandbox)->kill();
    (void)(*sandbox)->wait();
    return r.error();
  }
  return std::unique_ptr<WarmTemplate>(new WarmTemplate(std::move(*sandbox), std::move(ours)));
}

Result<std::unique_ptr<Sandbox>> WarmTemplate::start_call(const Spec& call) {
  return Sandbox::start_warm_call(control_.get(), send_mu_, call, cgroup_tree_);
}

void WarmTemplate::retire() {
  std::lock_guard lock(send_mu_);
  ::shutdown(control_.get(), SHUT_WR);
}

void WarmTemplate::kill() { sandbox_->kill(); }

Outcome WarmTemplate::wait() { return sandbox_->wait(); }

}  // namespace airlock::sandbox
