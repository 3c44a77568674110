// A WebSocket client for tests (Boost.Beast, blocking): opens a daemon's WebSocket endpoint with
// the headers a caller would send, types into it and reads what it sends back, each read
// bounded by a timeout so a test that waits for something that never comes fails instead of
// hanging.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace airlock::server::test {

class WebSocketClient {
 public:
  struct Opened;
  // Connects to 127.0.0.1:`port` and asks for `target` to become a WebSocket. Null with
  // `status` set to the HTTP status of a refusal (0: no answer at all), `body` to its body.
  static std::unique_ptr<WebSocketClient> open(std::uint16_t port, const std::string& target,
                                               const std::map<std::string, std::string>& headers, int* status,
                                               std::string* body = nullptr);
  ~WebSocketClient();

  bool send_binary(const std::string& bytes);
  bool send_text(const nlohmann::json& message);
  // Reads messages until what came in binary holds `marker` (or the connection closes, or
  // `timeout` passes); returns everything binary read by this call. Text messages are kept
  // in texts().
  std::string read_until(const std::string& marker, std::chrono::milliseconds timeout);
  // Reads until the server closes (or `timeout`): true when it sent a close frame.
  bool read_to_close(std::chrono::milliseconds timeout);
  const std::vector<nlohmann::json>& texts() const { return texts_; }
  std::uint16_t close_code() const { return close_code_; }
  // Drops the TCP connection without a close frame (a client that vanished).
  void drop();

 private:
  explicit WebSocketClient(std::unique_ptr<Opened> opened);
  bool read_one(std::chrono::milliseconds timeout, std::string& binary);

  std::unique_ptr<Opened> opened_;
  std::vector<nlohmann::json> texts_;
  std::uint16_t close_code_ = 0;
  bool closed_ = false;
};

}  // namespace airlock::server::test
