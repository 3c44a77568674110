// The relay: bytes both ways between the client and the upstream once a protocol has
// connected them, counted against the sandbox's byte budgets.
#include <sys/socket.h>

#include <cerrno>

#include "egress/session.hpp"

namespace airlock::egress {
namespace {

// Per direction of a relayed connection. Smaller buffers cost throughput on a fast loopback
// (64 KiB: half); larger ones gain nothing measurable.
constexpr std::size_t kRelayBuffer = 256 * 1024;

}  // namespace

// Relays both directions until both have ended, through a buffer per direction. This beats
// splice() through a pipe here (docs/performance.md): spliced data goes out in page-sized
// pieces, copied data in full segments, which the sandbox's loopback takes up to 512 KiB
// at a time (sandbox/loopback.hpp).
void Session::relay() {
  last_activity_ = Clock::now();
  watch_idle();
  error_code ignored;
  client_.non_blocking(true, ignored);
  upstream_.non_blocking(true, ignored);
  up_.from = &client_, up_.to = &upstream_, up_.upward = true;
  down_.from = &upstream_, down_.to = &client_, down_.upward = false;
  for (Direction* d : {&up_, &down_})
    d->buffer = std::make_unique_for_overwrite<char[]>(kRelayBuffer);
  pump(up_);
  pump(down_);
}

// Moves what is readable on d.from to d.to, without blocking: reads a buffer's worth,
// writes it all, then reads again, waiting on the socket that is not ready.
void Session::pump(Direction& d) {
  for (;;) {
    if (finished_) return;
    if (d.pending > 0) {  // first write out what was read
      ssize_t m = ::send(d.to->native_handle(), d.buffer.get() + d.offset, d.pending, MSG_NOSIGNAL);
      if (m > 0) {
        d.offset += static_cast<std::size_t>(m);
        d.pending -= static_cast<std::size_t>(m);
        last_activity_ = Clock::now();
        continue;
      }
      if (m < 0 && errno == EINTR) continue;
      if (m < 0 && errno == EAGAIN) return pump_when(*d.to, tcp::socket::wait_write, d);
      return finish();
    }
    if (d.eof) return end_direction(d);
    ssize_t n = ::recv(d.from->native_handle(), d.buffer.get(), kRelayBuffer, 0);
    if (n > 0) {
      d.offset = 0;
      d.pending = static_cast<std::size_t>(n);
      last_activity_ = Clock::now();
      bool within = d.upward ? count_up(d.pending) : count_down(d.pending);
      if (!within)
        return finish(std::string("the sandbox's egress byte budget (") +
                      (d.upward ? "up" : "down") + ") is spent");
      continue;
    }
    if (n == 0) {
      d.eof = true;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return pump_when(*d.from, tcp::socket::wait_read, d);
    return finish();
  }
}

// Pumps d again once `socket` is ready as `what` says.
void Session::pump_when(tcp::socket& socket, tcp::socket::wait_type what, Direction& d) {
  socket.async_wait(what, [this, self = self(), &d](error_code ec) {
    if (ec) return finish();
    pump(d);
  });
}

// Passes the half-close on; the session ends when both directions have.
void Session::end_direction(Direction& d) {
  error_code ignored;
  d.to->shutdown(tcp::socket::shutdown_send, ignored);
  (d.upward ? up_done_ : down_done_) = true;
  if (up_done_ && down_done_) finish();
}

void Session::watch_idle() {
  auto idle = tenant_->policy.limits().idle_timeout;
  auto due = last_activity_ + idle;
  timer_.expires_at(due);
  timer_.async_wait([this, self = self(), idle](error_code ec) {
    if (ec || finished_) return;
    if (Clock::now() - last_activity_ >= idle) return finish("idle timeout");
    watch_idle();
  });
}

bool Session::count_up(std::size_t n) {
  record_.bytes_up += n;
  tenant_->bytes_up += n;
  return tenant_->bytes_up <= tenant_->policy.limits().max_bytes_up;
}

bool Session::count_down(std::size_t n) {
  record_.bytes_down += n;
  tenant_->bytes_down += n;
  return tenant_->bytes_down <= tenant_->policy.limits().max_bytes_down;
}

}  // namespace airlock::egress
