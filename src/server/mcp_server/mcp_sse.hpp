// The text/event-stream answer of a POST to /mcp: the notifications a call sends before its
// answer, then the answer, each one Server-Sent Event. The stream starts with the first
// notification; an answer that comes first (a refusal, a call without progress) goes out as
// plain JSON with its own status. The GET /mcp stream is one too, opened at once and ended by
// close(); a null notification is a keep-alive comment.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"

namespace airlock::server {

class McpEventStream : public std::enable_shared_from_this<McpEventStream> {
 public:
  // `reply`: the HTTP answer, called once. `gone`: called if the client leaves mid-stream.
  McpEventStream(std::function<void(HttpResponse)> reply, std::function<void()> gone)
      : reply_(std::move(reply)), gone_(std::move(gone)) {}

  // One event; a null `notification` is a keep-alive comment, sent only once streaming.
  void notify(const nlohmann::json& notification);
  // The last message: an event when streaming, else `plain` as the whole answer.
  void finish(const nlohmann::json& message, HttpResponse plain);
  // Starts the stream now, with no event yet (GET /mcp).
  void open();
  // Ends a started stream without a last message.
  void close();

  static std::string event(const nlohmann::json& message);

 private:
  void attach(std::shared_ptr<BodyWriter> writer);
  // Under mu_: the answer that starts the stream, its reply taken (call it outside the lock).
  std::function<void(HttpResponse)> start_locked();
  void send_start(std::function<void(HttpResponse)> reply);

  std::mutex mu_;
  std::function<void(HttpResponse)> reply_;
  std::function<void()> gone_;
  bool started_ = false, finished_ = false;
  std::shared_ptr<BodyWriter> writer_;  // set once the server hands the body over
  std::vector<std::string> pending_;    // events written before that
};

}  // namespace airlock::server
