// The text/event-stream answer of a POST to /mcp: the notifications a call sends before its
// answer, then the answer, each one Server-Sent Event. The stream starts with the first
// notification; an answer that comes first (a refusal, a call without progress) goes out as
// plain JSON with its own status.
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

  void notify(const nlohmann::json& notification);
  // The last message: an event when streaming, else `plain` as the whole answer.
  void finish(const nlohmann::json& message, HttpResponse plain);

  static std::string event(const nlohmann::json& message);

 private:
  void attach(std::shared_ptr<BodyWriter> writer);

  std::mutex mu_;
  std::function<void(HttpResponse)> reply_;
  std::function<void()> gone_;
  bool started_ = false, finished_ = false;
  std::shared_ptr<BodyWriter> writer_;  // set once the server hands the body over
  std::vector<std::string> pending_;    // events written before that
};

}  // namespace airlock::server
