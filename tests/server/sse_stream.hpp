// A GET /mcp notification stream read as a client reads it: opened (its answer's status
// known), then read on a thread of its own until the server ends it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace airlock::server::test {

class SseStream {
 public:
  // GETs /mcp with `key` and `headers` (Mcp-Session-Id, MCP-Protocol-Version); status() is
  // known when this returns.
  SseStream(std::uint16_t port, const std::string& key, const std::map<std::string, std::string>& headers);
  ~SseStream();
  SseStream(const SseStream&) = delete;
  SseStream& operator=(const SseStream&) = delete;

  int status() const { return status_; }
  // The JSON-RPC messages received so far.
  std::vector<nlohmann::json> messages() const;
  // Waits until `done` holds for the messages, or the stream has ended, or `bound` has passed
  // (a bound on a failing test, not a timing it asserts): whether it holds.
  bool wait_for(const std::function<bool(const std::vector<nlohmann::json>&)>& done,
                std::chrono::seconds bound = std::chrono::seconds(60)) const;
  // Waits until the server has ended the stream (within `bound`): whether it has.
  bool wait_ended(std::chrono::seconds bound = std::chrono::seconds(60)) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int status_ = 0;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::string body_;
  bool ended_ = false;
  std::thread reader_;
};

}  // namespace airlock::server::test
