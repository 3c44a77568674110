// One kept-alive HTTP/1.1 connection to the daemon (plain or TLS, verified as every CLI
// connection is: daemon_connection.hpp), for a client that sends many requests and reads
// answers as they stream (the MCP bridge). Not thread-safe: one request at a time; abort()
// alone may be called from another thread.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cli/daemon_connection.hpp"
#include "common/result.hpp"

namespace airlock::cli {

struct AnswerHead {
  int status = 0;
  std::string content_type;  // without parameters, lower case
  boost::beast::http::fields fields;
};

class KeepAliveConnection {
 public:
  // `tls`: the context for an https server (client_context), kept by the caller.
  KeepAliveConnection(ServerAddress server, boost::asio::ssl::context* tls) : server_(std::move(server)), tls_(tls) {}

  using OnHead = std::function<void(const AnswerHead&)>;
  // A piece of the body; false stops reading (the connection is then closed).
  using OnBody = std::function<bool(std::string_view)>;

  // Sends `req` (Host and keep-alive set here) and reads its answer. A connection the server
  // had closed while idle is reopened once, when nothing of the answer had come. Errors: code
  // "connection" or "tls".
  Status exchange(boost::beast::http::request<boost::beast::http::string_body>& req, const OnHead& on_head,
                  const OnBody& on_body);

  // From any thread: a blocked exchange returns (with an error), the connection closes and
  // none is opened again.
  void abort();

 private:
  Status open();
  Status refuse_if_aborted();
  void close();
  template <class Stream>
  Status exchange_on(Stream& stream, boost::beast::http::request<boost::beast::http::string_body>& req,
                     const OnHead& on_head, const OnBody& on_body, bool& answer_started);

  ServerAddress server_;
  boost::asio::ssl::context* tls_;
  boost::asio::io_context io_;
  std::optional<boost::beast::tcp_stream> plain_;
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> secure_;
  std::atomic<int> socket_fd_{-1};
  std::atomic<bool> aborted_{false};
  boost::beast::flat_buffer buffer_;
};

}  // namespace airlock::cli
