// A blocking HTTP/1.1 client on one keep-alive connection to 127.0.0.1 (Boost.Beast), for the
// benchmarks: a request out, the whole response (a chunked or SSE body read to its end) in.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/result.hpp"

namespace airlock::bench {

struct HttpReply {
  int status = 0;
  std::string content_type;
  std::string session_id;  // Mcp-Session-Id, if any
  std::string body;
};

class HttpClient {
 public:
  explicit HttpClient(std::uint16_t port);
  ~HttpClient();
  Status connect();
  // `headers`: added to Host, Content-Type (JSON) and Connection: keep-alive.
  Result<HttpReply> post(const std::string& target, const std::string& body,
                         const std::map<std::string, std::string>& headers);
  Result<HttpReply> get(const std::string& target);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace airlock::bench
