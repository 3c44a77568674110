// airlock call TOOL --input JSON and airlock tools list: a client of the daemon's HTTP API.
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <vector>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/daemon_client.hpp"
#include "cli/daemon_connection.hpp"
#include "common/result.hpp"
#include "policy/names.hpp"
#include "common/no_sigpipe.hpp"
#include "common/percent_encoding.hpp"

namespace airlock::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace ssl = asio::ssl;

// For messages: JSON-quoted, so control characters show as escapes.
std::string printable(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

constexpr std::size_t kMaxAnswerBytes = 256 * 1024 * 1024;  // an answer held in memory
constexpr std::size_t kChunkBytes = 64 * 1024;                // a streamed body's piece
constexpr const char* kOctetStream = "application/octet-stream";

http::request<http::string_body> make_request(const ServerAddress& server, const ClientOptions& o,
                                              http::verb verb, const std::string& path,
                                              const std::string& body, const Streams& streams) {
  http::request<http::string_body> req{verb, path, 11};
  req.set(http::field::host, server.authority);
  req.set(http::field::user_agent, "airlock-cli");
  // One answer (an exec's too, not its event stream); a file's content where one is streamed.
  req.set(http::field::accept, streams.answer_fd >= 0 ? "application/octet-stream, application/json"
                                                      : "application/json");
  if (!o.key.empty()) req.set(http::field::authorization, "Bearer " + o.key);
  if (!o.subject_token.empty()) req.set("Airlock-Subject-Token", o.subject_token);
  if (streams.body_fd >= 0) {
    req.set(http::field::content_type, kOctetStream);
  } else if (verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
  }
  return req;
}

// A local file (or stdin, stdout) that could not be read or written: no fault of the daemon's.
struct LocalFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class Fields>
bool is_octet_stream(const Fields& head) {
  const std::string_view type = head[http::field::content_type];
  return type.substr(0, type.find(';')) == kOctetStream;
}

void write_file_chunk(int fd, std::string_view chunk) {
  if (!write_all(fd, chunk))
    throw LocalFileError(std::string("cannot write the file: ") + std::strerror(errno));
}

// Sends the head, then the body read from `fd` one chunk at a time (chunked transfer encoding).
template <class Stream>
void write_streamed(Stream& stream, const http::request<http::string_body>& head, int fd) {
  http::request<http::buffer_body> req{head.base()};
  req.chunked(true);
  req.body().data = nullptr;
  req.body().more = true;
  http::request_serializer<http::buffer_body> serializer{req};
  http::write_header(stream, serializer);
  std::vector<char> chunk(kChunkBytes);
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw LocalFileError(std::string("cannot read the file: ") + std::strerror(errno));
    req.body().data = n > 0 ? chunk.data() : nullptr;
    req.body().size = static_cast<std::size_t>(n);
    req.body().more = n > 0;  // none: the last chunk goes out
    boost::system::error_code ec;
    http::write(stream, serializer, ec);
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
    if (n == 0) return;
  }
}

// Reads the answer: a 2xx application/octet-stream body goes to `fd` as it arrives, any other
// into Reply::body (at most kMaxAnswerBytes).
template <class Stream>
Reply read_streamed(Stream& stream, beast::flat_buffer& buffer, int fd) {
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // a file of any size
  http::read_header(stream, buffer, parser);
  Reply reply;
  reply.status = static_cast<int>(parser.get().result_int());
  reply.file_content = is_octet_stream(parser.get());
  const bool to_fd = reply.status / 100 == 2 && reply.file_content;
  std::vector<char> chunk(kChunkBytes);
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    boost::system::error_code ec;
    http::read(stream, buffer, parser, ec);
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
    const std::size_t n = chunk.size() - parser.get().body().size;
    if (to_fd) {
      write_file_chunk(fd, std::string_view(chunk.data(), n));
      reply.streamed += n;
    } else if (reply.body.size() + n > kMaxAnswerBytes) {
      throw boost::system::system_error(http::error::body_limit);
    } else {
      reply.body.append(chunk.data(), n);
    }
  }
  return reply;
}

template <class Stream>
Reply exchange(Stream& stream, const http::request<http::string_body>& req, const Streams& streams) {
  if (streams.body_fd < 0) {
    http::write(stream, req);
  } else {
    try {
      write_streamed(stream, req, streams.body_fd);
    } catch (const boost::system::system_error& e) {
      // The daemon may answer a body it refuses (a 413, a 404) before reading all of it, and
      // close: its answer, when one came, says more than the broken pipe.
      if (e.code() != asio::error::broken_pipe && e.code() != asio::error::connection_reset) throw;
    }
  }
  beast::flat_buffer buffer;
  if (streams.answer_fd >= 0) return read_streamed(stream, buffer, streams.answer_fd);
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  http::read(stream, buffer, parser);
  return Reply{static_cast<int>(parser.get().result_int()), parser.get().body(), is_octet_stream(parser.get())};
}

Result<Reply> request_tls(const ServerAddress& server, const ClientOptions& o,
                          const http::request<http::string_body>& req, const Streams& streams) {
  ssl::context ctx = client_context(o);
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
  expect_server_name(stream.native_handle(), server.host);
  beast::get_lowest_layer(stream).connect(resolver.resolve(server.host, server.port));
  boost::system::error_code ec;
  stream.handshake(ssl::stream_base::client, ec);
  if (ec)
    return Error::make("tls", "TLS handshake with " + o.server + " failed: " +
                                  handshake_failure(stream.native_handle(), ec));
  Reply reply;
  try {
    reply = exchange(stream, req, streams);
  } catch (const boost::system::system_error& e) {
    // TLS 1.3: a client certificate the server refuses shows here, after the handshake.
    if (e.code().category() != asio::error::get_ssl_category()) throw;
    return Error::make("tls", "TLS with " + o.server + " failed: " + e.code().message() +
                                  (o.cert.empty() ? "" : " (was --cert refused?)"));
  }
  // No close_notify exchange: the answer is complete (Content-Length), and waiting for the
  // server's could only hang.
  beast::error_code ignored;
  beast::get_lowest_layer(stream).socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return reply;
}

Reply request_plain(const ServerAddress& server, const http::request<http::string_body>& req,
                    const Streams& streams) {
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  stream.connect(resolver.resolve(server.host, server.port));
  Reply reply = exchange(stream, req, streams);
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return reply;
}

Result<Reply> send_request(const ClientOptions& o, http::verb verb, const std::string& path, const std::string& body,
                           const Streams& streams) {
  auto server = checked_server(o);
  if (!server) return server.error();
  try {
    auto req = make_request(*server, o, verb, path, body, streams);
    if (server->tls) return request_tls(*server, o, req, streams);
    return request_plain(*server, req, streams);
  } catch (const TlsSetupError& e) {
    return Error::make("usage", e.what());
  } catch (const LocalFileError& e) {
    return Error::make("file", e.what());
  } catch (const boost::system::system_error& e) {
    return Error::make("connection", "cannot reach " + o.server + ": " + e.code().message());
  } catch (const std::exception& e) {
    return Error::make("connection", "cannot reach " + o.server + ": " + e.what());
  }
}

}  // namespace

Result<Reply> request(const ClientOptions& o, http::verb verb, const std::string& path,
                      const std::string& body) {
  return send_request(o, verb, path, body, Streams{});
}

Result<Reply> request(const ClientOptions& o, http::verb verb, const std::string& path,
                      const Streams& streams) {
  return send_request(o, verb, path, "", streams);
}

void add_client_options(CLI::App* cmd, ClientOptions& o) {
  cmd->add_option("--server", o.server,
                  "The daemon's URL, http:// or https:// (default http://127.0.0.1:8750)");
  cmd->add_option("--key", o.key, "API key (default: $AIRLOCK_API_KEY)");
  cmd->add_option("--cacert", o.cacert,
                  "https: verify the server against these CA certificates (PEM; default: the "
                  "system's)");
  cmd->add_option("--cert", o.cert, "https: a client certificate (PEM), for mTLS");
  cmd->add_option("--cert-key", o.key_file,
                  "https: the client certificate's private key (PEM; default: in --cert)");
}

void key_from_environment(ClientOptions& o) {
  if (o.key.empty())
    if (const char* k = std::getenv("AIRLOCK_API_KEY")) o.key = k;
}


void add_client_commands(CLI::App& app, ExitStatus& status) {
  auto call_opts = std::make_shared<ClientOptions>();
  auto tool = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>("{}");
  auto* call = app.add_subcommand(kCallCommand.name, kCallCommand.summary);
  call->add_option("tool", *tool, "The tool's name")->required();
  call->add_option("--input", *input, "The arguments, a JSON object (default {})");
  add_client_options(call, *call_opts);
  call->add_option("--subject-token", call_opts->subject_token,
                   "The token of the user this call is on behalf of (a JWT from a configured "
                   "issuer, or an Airlock token from POST /v1/token): the Airlock-Subject-Token "
                   "header");
  call->callback([call_opts, tool, input, &status] {
    key_from_environment(*call_opts);
    auto args = nlohmann::json::parse(*input, nullptr, false);
    if (args.is_discarded() || !args.is_object()) {
      std::cerr << "airlock call: --input must be a JSON object\n";
      status.code = 2;
      return;
    }
    // The name goes into the request line: refused before connecting unless it is one a
    // configuration could define.
    if (!policy::valid_tool_name(*tool)) {
      std::cerr << "airlock call: " << printable(*tool) << " is not a tool name ("
                << policy::kToolNameRule << ")\n";
      status.code = 2;
      return;
    }
    const std::string path = "/v1/tools/" + percent_encode(*tool) + "/invoke";
    auto reply = request(*call_opts, http::verb::post, path,
                         nlohmann::json{{"arguments", args}}.dump());
    if (!reply) {
      std::cerr << "airlock call: " << reply.error().message << "\n";
      status.code = 2;
      return;
    }
    auto body = nlohmann::json::parse(reply->body, nullptr, false);
    std::cout << (body.is_discarded() ? reply->body : body.dump(2)) << "\n";
    // 0: ok; 1: the tool failed or was denied; 2: the call itself failed.
    status.code = (reply->status == 200 && !body.is_discarded() && body.value("status", "") == "ok") ? 0 : 1;
  });

  auto list_opts = std::make_shared<ClientOptions>();
  auto* tools = app.add_subcommand(kToolsListCommand.name, kToolsListCommand.summary);
  auto* list = tools->add_subcommand("list", "The tools this key may invoke");
  tools->require_subcommand(1);
  add_client_options(list, *list_opts);
  list->callback([list_opts, &status] {
    key_from_environment(*list_opts);
    auto reply = request(*list_opts, http::verb::get, "/v1/tools", "");
    if (!reply) {
      std::cerr << "airlock tools list: " << reply.error().message << "\n";
      status.code = 2;
      return;
    }
    auto body = nlohmann::json::parse(reply->body, nullptr, false);
    if (reply->status != 200 || body.is_discarded() || !body.contains("tools")) {
      std::cerr << "airlock tools list: HTTP " << reply->status << ": " << reply->body << "\n";
      status.code = 1;
      return;
    }
    for (const auto& t : body["tools"])
      std::cout << t.value("name", "") << "\t" << t.value("risk", "") << "\t" << t.value("description", "") << "\n";
    status.code = 0;
  });
}

}  // namespace airlock::cli
