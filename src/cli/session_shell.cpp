// airlock session shell ID [--sh LINE]: a terminal on a session (GET /v1/sessions/{id}/terminal,
// a WebSocket; docs/sessions.md "Terminal"). The local terminal goes into raw mode, so every
// key (^C included) is sent as it is and the session's line discipline decides what it means;
// the window size follows the local one (SIGWINCH); what the session's terminal shows is
// written out as it comes. Exits with the shell's exit code; 125 when it did not end with one
// (hung up, the session ended); 1 when the daemon refused; 2 when it could not be reached.
#include "cli/session_shell.hpp"

#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <deque>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/daemon_connection.hpp"
#include "common/percent_encoding.hpp"

namespace airlock::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

// The local terminal in raw mode for as long as this lives (nothing when stdin is no terminal).
class RawMode {
 public:
  RawMode() {
    if (!::isatty(0) || ::tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~RawMode() {
    if (active_) (void)::tcsetattr(0, TCSANOW, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

std::optional<winsize> local_window() {
  winsize size{};
  for (int fd : {0, 1})
    if (::isatty(fd) && ::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_row > 0 && size.ws_col > 0) return size;
  return std::nullopt;
}

std::string terminal_target(const std::string& id, const std::string& shell_line) {
  std::string target = "/v1/sessions/" + percent_encode(id) + "/terminal";
  auto size = local_window();
  target += "?rows=" + std::to_string(size ? size->ws_row : 24) + "&cols=" + std::to_string(size ? size->ws_col : 80);
  if (const char* term = std::getenv("TERM"); term && *term) target += "&term=" + percent_encode(term);
  if (!shell_line.empty()) target += "&command=" + percent_encode(shell_line);
  return target;
}

// The session's terminal wired to the local one: stdin to the WebSocket, the WebSocket to
// stdout, SIGWINCH to a resize message; one write at a time, in order.
template <class Socket>
class Shell {
 public:
  Shell(asio::io_context& io, Socket& ws) : io_(io), ws_(ws), input_(io, ::dup(0)), window_(io, SIGWINCH) {}

  int run() {
    read_socket();
    read_input();
    follow_window();
    io_.run();
    return exit_code_;
  }

 private:
  void queue(std::string message, bool binary) {
    outgoing_.push_back({std::move(message), binary});
    if (outgoing_.size() == 1) write_next();
  }

  void write_next() {
    ws_.binary(outgoing_.front().second);
    ws_.async_write(asio::buffer(outgoing_.front().first), [this](beast::error_code ec, std::size_t) {
      outgoing_.pop_front();
      if (ec) return io_.stop();
      if (!outgoing_.empty()) write_next();
    });
  }

  void read_input() {
    input_.async_read_some(asio::buffer(keys_), [this](beast::error_code ec, std::size_t n) {
      if (ec) return;  // end of input: what was sent runs on; the session's end closes us
      queue(std::string(keys_.data(), n), true);
      read_input();
    });
  }

  void follow_window() {
    window_.async_wait([this](beast::error_code ec, int) {
      if (ec) return;
      if (auto size = local_window())
        queue(nlohmann::json{{"type", "resize"}, {"rows", size->ws_row}, {"cols", size->ws_col}}.dump(), false);
      follow_window();
    });
  }

  void read_socket() {
    ws_.async_read(in_, [this](beast::error_code ec, std::size_t) {
      if (ec) return finish();
      const std::string message = beast::buffers_to_string(in_.data());
      in_.consume(in_.size());
      if (ws_.got_binary()) (void)!::write(1, message.data(), message.size());
      else take_control(message);
      read_socket();
    });
  }

  void take_control(const std::string& text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) return;
    if (j.value("type", "") == "error") std::cerr << "\r\nairlock session shell: " << j.value("message", "") << "\r\n";
    if (j.value("type", "") != "exit") return;
    exit_code_ = j.contains("exit_code") && j["exit_code"].is_number_integer() ? j["exit_code"].get<int>() : 125;
    if (j.value("verdict", "") != "ok" && j.value("verdict", "") != "exit_nonzero")
      std::cerr << "\r\nairlock session shell: the terminal ended: " << j.value("verdict", "") << "\r\n";
  }

  void finish() {
    beast::error_code ignored;
    input_.close(ignored);
    window_.cancel(ignored);
    io_.stop();
  }

  asio::io_context& io_;
  Socket& ws_;
  asio::posix::stream_descriptor input_;
  asio::signal_set window_;
  std::array<char, 4096> keys_{};
  beast::flat_buffer in_;
  std::deque<std::pair<std::string, bool>> outgoing_;
  int exit_code_ = 125;
};

// The upgrade, with the caller's credentials; a refusal (not 101) says what the daemon said.
template <class Socket>
int open_and_run(asio::io_context& io, Socket& ws, const ServerAddress& server, const ClientOptions& o,
                 const std::string& target) {
  ws.set_option(websocket::stream_base::decorator([&o](websocket::request_type& r) {
    r.set(beast::http::field::user_agent, "airlock-cli");
    if (!o.key.empty()) r.set(beast::http::field::authorization, "Bearer " + o.key);
    if (!o.subject_token.empty()) r.set("Airlock-Subject-Token", o.subject_token);
  }));
  websocket::response_type answer;
  beast::error_code ec;
  ws.handshake(answer, server.authority, target, ec);
  if (ec) {
    if (answer.result_int() == 0) {
      std::cerr << "airlock session shell: cannot open the terminal: " << ec.message() << "\n";
      return 2;
    }
    std::cerr << "airlock session shell: HTTP " << answer.result_int() << ": " << answer.body() << "\n";
    return 1;
  }
  RawMode raw;
  return Shell<Socket>(io, ws).run();
}

int connect_and_run(const ServerAddress& server, const ClientOptions& o, const std::string& target) {
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  if (!server.tls) {
    websocket::stream<beast::tcp_stream> ws(io);
    beast::get_lowest_layer(ws).connect(resolver.resolve(server.host, server.port));
    return open_and_run(io, ws, server, o, target);
  }
  asio::ssl::context ctx = client_context(o);
  websocket::stream<beast::ssl_stream<beast::tcp_stream>> ws(io, ctx);
  expect_server_name(ws.next_layer().native_handle(), server.host);
  beast::get_lowest_layer(ws).connect(resolver.resolve(server.host, server.port));
  beast::error_code ec;
  ws.next_layer().handshake(asio::ssl::stream_base::client, ec);
  if (ec) {
    std::cerr << "airlock session shell: TLS handshake with " << o.server
              << " failed: " << handshake_failure(ws.next_layer().native_handle(), ec) << "\n";
    return 2;
  }
  return open_and_run(io, ws, server, o, target);
}

}  // namespace

int run_session_shell(const ClientOptions& o, const std::string& id, const std::string& shell_line) {
  auto server = checked_server(o);
  if (!server) {
    std::cerr << "airlock session shell: " << server.error().message << "\n";
    return 2;
  }
  try {
    return connect_and_run(*server, o, terminal_target(id, shell_line));
  } catch (const TlsSetupError& e) {
    std::cerr << "airlock session shell: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "airlock session shell: cannot reach " << o.server << ": " << e.what() << "\n";
  }
  return 2;
}

}  // namespace airlock::cli
