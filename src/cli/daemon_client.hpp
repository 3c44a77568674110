// The daemon's HTTP API as its command-line clients use it (airlock call, tools list,
// approvals): --server, --key and the TLS options, and one request.
#pragma once

#include <CLI/CLI.hpp>
#include <boost/beast/http/verb.hpp>
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
  std::string body;
};

// One request to the daemon. Errors (unreachable, bad URL or key, TLS) come back as an
// Error; those of the URL, key and options before anything is sent.
Result<Reply> request(const ClientOptions& o, boost::beast::http::verb verb, const std::string& path,
                      const std::string& body);
void add_client_options(CLI::App* cmd, ClientOptions& o);
// --key, else $AIRLOCK_API_KEY.
void key_from_environment(ClientOptions& o);

}  // namespace airlock::cli
