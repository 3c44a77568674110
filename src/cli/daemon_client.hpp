// The daemon's HTTP API as its command-line clients use it (airlock call, tools list,
// approvals): --server, --key and the TLS options, and one request.
#pragma once

#include <CLI/CLI.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <string>

#include "common/result.hpp"

namespace airlock::cli {

struct ClientOptions {
  std::string server = "http://127.0.0.1:8750";
  std::string key;
  std::string cacert;     // https: the CAs to verify the server with; "": the system's
  std::string cert, key_file;  // https: a client certificate and its key (mTLS)
  std::string subject_token;   // the user's token: the Airlock-Subject-Token header
};

struct Reply {
  int status = 0;
  std::string body;            // empty when it went to Streams::answer_fd
  bool file_content = false;   // application/octet-stream: a session file's content, not JSON
  std::uint64_t streamed = 0;  // bytes written to Streams::answer_fd
};

// A request whose body or answer does not pass through memory (a session's files).
struct Streams {
  // >= 0: the body, application/octet-stream, is read from this descriptor (a file, a pipe) in
  // chunks and sent with chunked transfer encoding, never held whole.
  int body_fd = -1;
  // >= 0: a 2xx application/octet-stream answer's body is written to this descriptor as it
  // arrives; any other answer (an error, a JSON listing) comes back in Reply::body.
  int answer_fd = -1;
};

// One request to the daemon. Errors (unreachable, bad URL or key, TLS, a local file that
// cannot be read or written) come back as an Error; those of the URL, key and options before
// anything is sent.
Result<Reply> request(const ClientOptions& o, boost::beast::http::verb verb, const std::string& path,
                      const std::string& body);
Result<Reply> request(const ClientOptions& o, boost::beast::http::verb verb, const std::string& path,
                      const Streams& streams);
void add_client_options(CLI::App* cmd, ClientOptions& o);
// --key, else $AIRLOCK_API_KEY.
void key_from_environment(ClientOptions& o);

}  // namespace airlock::cli
