#include "server/http/body_stream.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <condition_variable>

namespace airlock::server {

BodyStream::BodyStream(std::function<void()> wake, std::size_t max_queued_bytes)
    : wake_(std::move(wake)), max_queued_bytes_(max_queued_bytes) {}

bool BodyStream::write(std::string bytes) {
  std::lock_guard lock(mu_);
  if (gone_ || overflow_ || finished_) return false;
  if (bytes.empty()) return true;  // an empty chunk would end the body
  if (queued_bytes_ + bytes.size() > max_queued_bytes_) {
    overflow_ = true;  // the sender drops the connection, then reports the client gone
    queue_.clear();
    queued_bytes_ = 0;
    drained_.notify_all();
    if (wake_) wake_();
    return false;
  }
  queued_bytes_ += bytes.size();
  queue_.push_back(std::move(bytes));
  if (wake_) wake_();
  return true;
}

void BodyStream::finish() {
  std::lock_guard lock(mu_);
  if (gone_ || overflow_ || finished_) return;
  finished_ = true;
  if (wake_) wake_();
}

void BodyStream::abort() {
  std::lock_guard lock(mu_);
  if (gone_ || overflow_ || finished_) return;
  overflow_ = true;
  queue_.clear();
  queued_bytes_ = 0;
  if (wake_) wake_();
}

bool BodyStream::wait_below(std::size_t bytes, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  drained_.wait_for(lock, timeout, [&] { return gone_ || overflow_ || queued_bytes_ < bytes; });
  return !gone_ && !overflow_ && queued_bytes_ < bytes;
}

void BodyStream::on_client_gone(std::function<void()> callback) {
  std::function<void()> fire;
  {
    std::lock_guard lock(mu_);
    on_gone_ = std::move(callback);
    fire = take_gone_callback_locked();
  }
  if (fire) fire();
}

BodyStream::Next BodyStream::next() {
  std::lock_guard lock(mu_);
  if (gone_ || overflow_) return {};
  if (!queue_.empty()) {
    Next n{Next::kBytes, std::move(queue_.front())};
    queue_.pop_front();
    queued_bytes_ -= n.bytes.size();
    drained_.notify_all();
    return n;
  }
  if (finished_ && !last_taken_) {
    last_taken_ = true;
    return {Next::kLast, {}};
  }
  return {};
}

bool BodyStream::overflowed() {
  std::lock_guard lock(mu_);
  return overflow_;
}

void BodyStream::client_gone() {
  std::function<void()> fire;
  {
    std::lock_guard lock(mu_);
    gone_ = true;
    wake_ = nullptr;
    queue_.clear();
    queued_bytes_ = 0;
    fire = take_gone_callback_locked();
    drained_.notify_all();
  }
  if (fire) fire();
}

std::function<void()> BodyStream::take_gone_callback_locked() {
  if (!gone_ || finished_ || gone_fired_ || !on_gone_) return {};
  gone_fired_ = true;
  return std::exchange(on_gone_, nullptr);
}

std::string frame_chunk(std::string_view bytes) {
  namespace http = boost::beast::http;
  return boost::beast::buffers_to_string(
      http::make_chunk(boost::asio::buffer(bytes.data(), bytes.size())));
}

std::string frame_last_chunk() {
  return boost::beast::buffers_to_string(boost::beast::http::make_chunk_last());
}

namespace {

// Where the writer's wakes land while collect_chunked waits; shared, so that a wake racing
// with the end of the collection touches nothing freed.
struct Doorbell {
  std::mutex mu;
  std::condition_variable cv;
  bool rung = false;
  void ring() {
    std::lock_guard lock(mu);
    rung = true;
    cv.notify_all();
  }
  // False once `until` has passed with no ring.
  bool wait(std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(mu);
    if (!cv.wait_until(lock, until, [this] { return rung; })) return false;
    rung = false;
    return true;
  }
};

}  // namespace

std::string collect_chunked(const std::function<void(std::shared_ptr<BodyWriter>)>& stream,
                            std::chrono::milliseconds deadline, std::size_t max_bytes) {
  auto bell = std::make_shared<Doorbell>();
  auto body = std::make_shared<BodyStream>([bell] { bell->ring(); }, max_bytes);
  const auto until = std::chrono::steady_clock::now() + deadline;
  stream(body);
  std::string out;
  std::size_t total = 0;
  for (;;) {
    auto next = body->next();
    if (next.kind == BodyStream::Next::kBytes) {
      total += next.bytes.size();
      if (total > max_bytes) break;
      out += frame_chunk(next.bytes);
    } else if (next.kind == BodyStream::Next::kLast) {
      out += frame_last_chunk();
      break;
    } else if (body->overflowed() || !bell->wait(until)) {
      break;  // incomplete: no last chunk, as from a connection closed mid-body
    }
  }
  body->client_gone();  // after the last chunk this only drops the wake
  return out;
}

}  // namespace airlock::server
