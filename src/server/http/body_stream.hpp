// A streamed response body between the handler that produces it (any thread) and the
// connection that sends it (its executor): an ordered, bounded queue with the client's
// departure reported once. The connection is woken to pull; it never blocks the writer.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "server/http/http_message.hpp"

namespace airlock::server {

class BodyStream final : public BodyWriter {
 public:
  // `wake` asks the sender to pull (it must not pull inline: it is called under a lock).
  // More than `max_queued_bytes` written and not yet pulled: the client reads too slowly;
  // the write fails and the sender is told to abort (overflowed()).
  BodyStream(std::function<void()> wake, std::size_t max_queued_bytes);

  bool write(std::string bytes) override;
  void finish() override;
  void on_client_gone(std::function<void()> callback) override;
  void abort() override;  // the sender drops the client, as for an overflow
  bool wait_below(std::size_t bytes, std::chrono::milliseconds timeout) override;

  // The sender's side.
  struct Next {
    enum Kind { kNothing, kBytes, kLast } kind = kNothing;
    std::string bytes;  // kBytes: the next bytes, in order
  };
  Next next();  // kLast once, after finish() and the queue is empty
  // A write found the queue full: the sender must drop the client (even mid-send).
  bool overflowed();
  // The client has gone, or the sender stops: later writes return false, the wake is dropped
  // (so nothing is posted to a sender that no longer exists), and if finish() had not been
  // called the callback fires (here, or at registration if it comes later).
  void client_gone();

 private:
  std::function<void()> take_gone_callback_locked();

  std::mutex mu_;
  std::condition_variable drained_;  // next() took bytes, or the client has gone
  std::function<void()> wake_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  const std::size_t max_queued_bytes_;
  bool finished_ = false;  // finish() was called
  bool last_taken_ = false;
  bool overflow_ = false;
  bool gone_ = false;
  bool gone_fired_ = false;
  std::function<void()> on_gone_;
};

// One chunk of a chunked body, framed (RFC 9112 section 7.1), and the last chunk.
std::string frame_chunk(std::string_view bytes);
std::string frame_last_chunk();

// Runs `stream` and collects what it writes, framed as chunks, until it finishes; then the
// last chunk. A stream that has not finished within `deadline` or has written more than
// `max_bytes` is treated as a client that left (handle_raw_request: no socket to wait on).
std::string collect_chunked(const std::function<void(std::shared_ptr<BodyWriter>)>& stream,
                            std::chrono::milliseconds deadline, std::size_t max_bytes);

}  // namespace airlock::server
