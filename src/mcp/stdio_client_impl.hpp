// StdioClient's internals, shared by its transport (stdio_client.cpp) and its MCP methods
// (stdio_client_methods.cpp). Not for other users.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "mcp/jsonrpc.hpp"
#include "mcp/stdio_client.hpp"

namespace airlock::mcp {

// One request waiting for its answer.
struct PendingRequest {
  std::optional<Result<nlohmann::json>> outcome;  // the result, or why there is none
  std::function<void(const pipeline::Progress&)> progress;
};

struct RequestOptions {
  std::chrono::milliseconds timeout{30'000};
  CancelSignal* cancel = nullptr;
  std::function<void(const pipeline::Progress&)> progress;  // set: a progressToken is sent
};

struct StdioClient::Impl {
  StdioClientOptions options;
  UniqueFd to_server, from_server, wake;
  std::mutex write_mu;  // one message at a time on the server's stdin

  mutable std::mutex mu;
  std::condition_variable cv;
  std::int64_t next_id = 1;
  std::map<std::int64_t, std::shared_ptr<PendingRequest>> pending;
  std::map<std::string, std::shared_ptr<PendingRequest>> by_progress_token;
  bool stopping = false;
  bool is_closed = false;
  bool hung_up = false;  // EOF on the server's stdout
  Error reason;
  nlohmann::json server_capabilities = nlohmann::json::object();  // under mu
  std::thread reader;

  // A JSON-RPC error answer comes back as code "rpc_error", message "<code>: <message>".
  Result<nlohmann::json> request(const std::string& method, nlohmann::json params,
                                 const RequestOptions& options);
  Status send(const nlohmann::json& message);
  void cancel_request(std::int64_t id, const Error& why);
  void forget(std::int64_t id, const std::string& token);
  void close(Error why);  // fails every pending request with tool_server_failed

  void read_loop();
  Status handle_line(const std::string& line);
  void on_response(const Message& m);
  void on_server_request(const Message& m);
  void on_notification(const Message& m);
};

}  // namespace airlock::mcp
