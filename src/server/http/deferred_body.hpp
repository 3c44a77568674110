// A streamed response body that its producer starts writing before the connection has taken
// the writer (HttpResponse::stream is called once the head is sent): what is written
// meanwhile waits here, in order, and goes out when the writer arrives.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/http/http_message.hpp"

namespace airlock::server {

class DeferredBody {
 public:
  // A response whose body is this one's.
  static HttpResponse response(const std::shared_ptr<DeferredBody>& body, std::string content_type);

  void attach(std::shared_ptr<BodyWriter> writer);
  bool write(std::string bytes);  // false once the client has gone
  void finish();
  void abort();  // the client sees an incomplete body
  // BodyWriter::wait_below, once the writer is there (waiting for it first, within `timeout`).
  bool wait_below(std::size_t bytes, std::chrono::milliseconds timeout);

 private:
  enum class End { none, finished, aborted };
  std::mutex mu_;
  std::condition_variable attached_;
  std::shared_ptr<BodyWriter> writer_;
  std::vector<std::string> pending_;
  End end_ = End::none;
};

}  // namespace airlock::server
