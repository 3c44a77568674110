// The MCP server's open notification channels, where notifications/tools/list_changed goes
// when the set of tools changes: the GET /mcp stream of a session (2025-06-18, 2025-11-25),
// a stdio connection's session, and each subscriptions/listen stream (2026-07-28). Every
// channel is told of every change: what a client may call is decided at its tools/list, so a
// change that leaves its own list alike costs it one listing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace airlock::server {

// Sends one notification; a null message is a keep-alive (an SSE comment, nothing on stdio).
using McpSend = std::function<void(const nlohmann::json& message)>;

class McpListeners {
 public:
  static constexpr std::size_t kMaxListeners = 4096;  // sessions are bounded alike (mcp_sessions.hpp)
  static constexpr std::chrono::seconds kKeepAlive{15};  // idle proxies close silent connections

  struct Listener {
    std::string session;  // the MCP session it belongs to ("": a stateless subscription)
    McpSend send;
    std::function<void()> end;  // ends the channel (its session ended, the daemon stops); may be empty
  };
  McpListeners() = default;
  ~McpListeners();
  McpListeners(const McpListeners&) = delete;
  McpListeners& operator=(const McpListeners&) = delete;

  // Keeps `listener` under `key`, ending the one it replaces (one GET stream per session).
  // False when kMaxListeners are open (nothing kept).
  bool add(const std::string& key, Listener listener);
  // Forgets `key` without ending it (its client left, or cancelled it).
  void remove(const std::string& key);
  // Ends and forgets every channel of `session` (deleted, evicted).
  void end_session(const std::string& session);
  void end_all();  // the daemon stops
  void notify_all(const nlohmann::json& notification);
  // Only the channels of MCP session `session` (its GET stream, its stdio connection).
  void notify_session(const std::string& session, const nlohmann::json& notification);
  // Only the channel kept under `key` (a subscriptions/listen stream), when it is still open.
  void notify_key(const std::string& key, const nlohmann::json& notification);
  std::size_t size() const;

 private:
  void keep_alive_loop();
  void end_outside_lock(std::vector<std::function<void()>> ends);

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Listener> listeners_;
  bool stopping_ = false;
  std::thread keeper_;  // started with the first listener
};

}  // namespace airlock::server
