// An MCP server run directly as a child over stdio, without Airlock: the reference a gateway
// call is measured against. Newline-delimited JSON-RPC both ways (the stdio transport).
#pragma once

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace airlock::bench {

class StdioServer {
 public:
  // `argv[0]` is an absolute path. The server's stderr goes to /dev/null.
  static Result<std::unique_ptr<StdioServer>> spawn(const std::vector<std::string>& argv);
  ~StdioServer();
  // initialize, then notifications/initialized.
  Status initialize();
  // The answer (result or error) to a request.
  Result<nlohmann::json> request(const std::string& method, const nlohmann::json& params);
  // The result of tools/call (notifications the server sends meanwhile are skipped).
  Result<nlohmann::json> call_tool(const std::string& name, const nlohmann::json& arguments);

 private:
  StdioServer() = default;
  Status send(const nlohmann::json& message);
  Result<nlohmann::json> response(long id);  // up to 10 s for it
  Result<std::string> line();
  pid_t pid_ = -1;
  int to_server_ = -1, from_server_ = -1;
  std::string buffer_;
  long next_id_ = 1;
};

}  // namespace airlock::bench
