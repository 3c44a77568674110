#include "backend/kubernetes/pod_exec.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <nlohmann/json.hpp>

#include "backend/kubernetes/kube_connection.hpp"
#include "common/no_sigpipe.hpp"
#include "common/percent_encoding.hpp"

namespace airlock::backend::kubernetes {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using nlohmann::json;

namespace {

constexpr char kStdin = 0, kStdout = 1, kStderr = 2, kStatus = 3, kResize = 4;
constexpr unsigned char kClose = 255;
constexpr std::size_t kMaxQueued = 8;  // stdin messages waiting for the socket; more: stdin waits
constexpr std::chrono::milliseconds kResizePoll{50};

std::string exec_target(const PodExecRequest& request) {
  std::string target = "/api/v1/namespaces/" + request.namespace_name + "/pods/" + request.pod + "/exec?";
  for (const auto& arg : request.command) target += "command=" + percent_encode(arg) + "&";
  target += "container=" + percent_encode(request.container);
  target += std::string("&stdin=") + (request.stdin ? "true" : "false") + "&stdout=true";
  target += request.terminal ? "&stderr=false&tty=true" : "&stderr=true";
  return target;
}

std::string resize_message(sandbox::WindowSize size) {
  return std::string(1, kResize) + json{{"Width", size.columns}, {"Height", size.rows}}.dump();
}

}  // namespace

PodExecEnd parse_exec_status(const std::string& json_text) {
  PodExecEnd end;
  auto status = json::parse(json_text, nullptr, false);
  if (!status.is_object()) {
    end.message = "the exec's status is not JSON";
    return end;
  }
  if (status.value("status", "") == "Success") {
    end.has_code = true;
    return end;
  }
  end.message = status.value("message", "the exec failed");
  if (status.contains("details") && status["details"].is_object() && status["details"].contains("causes"))
    for (const auto& cause : status["details"]["causes"])
      if (cause.value("reason", "") == "ExitCode") {
        try {
          end.code = std::stoi(cause.value("message", ""));
          end.has_code = true;
        } catch (...) {
        }
      }
  return end;
}

struct PodExec::State {
  asio::io_context io;
  std::optional<websocket::stream<Stream>> ws;
  std::string protocol;
  bool tty = false;
  // Ours: where stdin (or the terminal's input) is read, and where output goes.
  std::optional<asio::posix::stream_descriptor> input;
  UniqueFd stdout_w, stderr_w;  // for a terminal, stdout_w is the pty's slave
  // The caller's.
  UniqueFd stdin_w, stdout_r, stderr_r, master;
  std::optional<asio::steady_timer> resize_timer;
  sandbox::WindowSize size;
  std::array<char, 16384> input_buffer;
  bool input_paused = false, input_done = false;
  std::deque<std::string> outbox;
  bool writing = false;
  beast::flat_buffer buffer;

  std::mutex mu;
  std::condition_variable cv;
  std::optional<PodExecEnd> end;
  bool finished = false;
  std::thread pump;

  void send(std::string message) {
    outbox.push_back(std::move(message));
    if (!writing) write_next();
  }

  void write_next() {
    writing = true;
    ws->async_write(asio::buffer(outbox.front()), [this](boost::system::error_code ec, std::size_t) {
      outbox.pop_front();
      if (ec || outbox.empty()) {
        writing = false;
        if (ec) outbox.clear();
      } else {
        write_next();
      }
      if (!ec && input_paused && outbox.size() < kMaxQueued / 2) {
        input_paused = false;
        read_input();
      }
    });
  }

  void read_input() {
    if (!input || input_done) return;
    input->async_read_some(asio::buffer(input_buffer), [this](boost::system::error_code ec, std::size_t n) {
      if (ec == asio::error::operation_aborted) return;
      if (ec || n == 0) {  // stdin's EOF (a terminal's master closed reads as EIO)
        input_done = true;
        if (protocol == kExecProtocolV5) send(std::string{static_cast<char>(kClose), kStdin});
        return;
      }
      send(std::string(1, kStdin) + std::string(input_buffer.data(), n));
      if (outbox.size() >= kMaxQueued) input_paused = true;
      else read_input();
    });
  }

  // A terminal's window size, as the caller set it on the master, passed on when it changes.
  void poll_size() {
    resize_timer->expires_after(kResizePoll);
    resize_timer->async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      struct winsize ws_size {};
      if (::ioctl(stdout_w.get(), TIOCGWINSZ, &ws_size) == 0 &&
          (ws_size.ws_row != size.rows || ws_size.ws_col != size.columns)) {
        size = {ws_size.ws_row, ws_size.ws_col};
        send(resize_message(size));
      }
      poll_size();
    });
  }

  void read_messages() {
    ws->async_read(buffer, [this](boost::system::error_code ec, std::size_t) {
      if (ec) return finish(ec);
      std::string message = beast::buffers_to_string(buffer.data());
      buffer.consume(buffer.size());
      if (message.size() > 1) {
        const char* data = message.data() + 1;
        const std::size_t length = message.size() - 1;
        switch (message[0]) {
          // A reader that has gone (or a stream closed) drops the rest.
          case kStdout: (void)write_all(stdout_w.get(), {data, length}); break;
          case kStderr: (void)write_all(stderr_w.get(), {data, length}); break;
          case kStatus: {
            std::lock_guard lock(mu);
            end = parse_exec_status(std::string(data, length));
            break;
          }
          default: break;  // an empty message opening a channel, or one we do not use
        }
      }
      read_messages();
    });
  }

  // The connection has ended: the caller's ends see EOF (a terminal's master EIO).
  void finish(boost::system::error_code ec) {
    boost::system::error_code ignored;
    if (input) input->close(ignored);
    if (resize_timer) resize_timer->cancel();
    stdout_w.reset();
    stderr_w.reset();
    beast::get_lowest_layer(*ws).socket().close(ignored);
    std::lock_guard lock(mu);
    if (!end)
      end = PodExecEnd{false, 0, "the exec's connection ended without its status (" + ec.message() + ")"};
    finished = true;
    cv.notify_all();
  }
};

namespace {

using State = PodExec::State;

Status make_pipes(State& st, bool with_stdin) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    return Error::make("exec_failed", std::string("pipe: ") + std::strerror(errno));
  st.stdout_r.reset(out[0]);
  st.stdout_w.reset(out[1]);
  st.stderr_r.reset(err[0]);
  st.stderr_w.reset(err[1]);
  if (with_stdin) {
    int in[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return Error::make("exec_failed", std::string("pipe: ") + std::strerror(errno));
    st.stdin_w.reset(in[1]);
    st.input.emplace(st.io, in[0]);
  }
  return Status::success();
}

// A local pseudo-terminal: the caller gets its master; its slave, raw (the pod's terminal does
// the line discipline), carries the bytes both ways: read on one open file, written on another.
Status make_terminal(State& st, sandbox::WindowSize size) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return Error::make("exec_failed", std::string("posix_openpt: ") + std::strerror(errno));
  st.master.reset(master);
  if (::grantpt(master) != 0 || ::unlockpt(master) != 0)
    return Error::make("exec_failed", std::string("unlockpt: ") + std::strerror(errno));
  std::array<char, 128> name{};
  if (::ptsname_r(master, name.data(), name.size()) != 0)
    return Error::make("exec_failed", std::string("ptsname: ") + std::strerror(errno));
  int reader = ::open(name.data(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  int writer = ::open(name.data(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (reader < 0 || writer < 0) {
    if (reader >= 0) ::close(reader);
    if (writer >= 0) ::close(writer);
    return Error::make("exec_failed", std::string("open the pty's slave: ") + std::strerror(errno));
  }
  struct termios raw {};
  ::tcgetattr(writer, &raw);
  ::cfmakeraw(&raw);
  ::tcsetattr(writer, TCSANOW, &raw);
  struct winsize ws_size {};
  ws_size.ws_row = size.rows;
  ws_size.ws_col = size.columns;
  ::ioctl(writer, TIOCSWINSZ, &ws_size);
  st.size = size;
  st.stdout_w.reset(writer);
  st.input.emplace(st.io, reader);
  st.resize_timer.emplace(st.io);
  return Status::success();
}

Error api_error_for_exec(const std::string& what, const KubeResponse& response) {
  return Error::make("kubernetes", what + ": " + std::to_string(response.status) + ": " + response.status_message());
}

Result<std::shared_ptr<State>> upgrade(KubeClient& client, const PodExecRequest& request,
                                       const std::vector<std::string>& protocols) {
  auto st = std::make_shared<State>();
  const KubeEndpoint& endpoint = client.endpoint();
  auto stream = connect(st->io, client.tls().context, endpoint);
  if (!stream) return stream.error();
  st->ws.emplace(std::move(**stream));
  std::string offered;
  for (const auto& p : protocols) offered += (offered.empty() ? "" : ", ") + p;
  st->ws->set_option(websocket::stream_base::decorator([&](websocket::request_type& req) {
    authorize(req, endpoint);
    req.set(http::field::sec_websocket_protocol, offered);
  }));
  st->ws->binary(true);
  st->ws->auto_fragment(false);
  websocket::response_type response;
  boost::system::error_code ec;
  const std::string target = exec_target(request);
  beast::get_lowest_layer(*st->ws).expires_after(kIoTimeout);
  st->ws->async_handshake(response, endpoint.host + ":" + endpoint.port, target,
                          [&](boost::system::error_code e) { ec = e; });
  st->io.run();
  st->io.restart();
  beast::get_lowest_layer(*st->ws).expires_never();
  const std::string what = "exec in pods/" + request.pod;
  if (ec == websocket::error::upgrade_declined) {
    KubeResponse answer{response.result_int(), response.body(), std::nullopt};
    Error error = api_error_for_exec(what, answer);
    error.code = "upgrade_refused";
    return error;
  }
  if (ec) return Error::make("kubernetes", what + ": " + ec.message());
  st->protocol = std::string(response[http::field::sec_websocket_protocol]);
  bool known = false;
  for (const auto& p : protocols) known = known || p == st->protocol;
  if (!known)
    return Error::make("kubernetes", what + ": the API server chose the subprotocol '" + st->protocol +
                                         "', not one of " + offered);
  return st;
}

}  // namespace

PodExec::PodExec(std::shared_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<PodExec>> PodExec::start(KubeClient& client, const PodExecRequest& request) {
  auto st = upgrade(client, request, request.protocols);
  // A server that answers the offer of v5 with an error rather than by choosing v4.
  if (!st && st.error().code == "upgrade_refused" && request.protocols.size() > 1 &&
      request.protocols.front() == kExecProtocolV5)
    st = upgrade(client, request, {kExecProtocolV4});
  if (!st) {
    Error error = st.error();
    error.code = "kubernetes";
    return error;
  }
  State& s = **st;
  s.tty = request.terminal.has_value();
  Status made = s.tty ? make_terminal(s, *request.terminal) : make_pipes(s, request.stdin);
  if (!made) return made.error();
  if (s.tty) {
    s.send(resize_message(s.size));
    s.poll_size();
  }
  s.read_input();
  s.read_messages();
  s.pump = std::thread([keep = *st] { keep->io.run(); });
  return std::unique_ptr<PodExec>(new PodExec(std::move(*st)));
}

PodExec::~PodExec() {
  hang_up();
  if (state_->pump.joinable()) state_->pump.join();
}

UniqueFd PodExec::take_stdin() { return std::move(state_->stdin_w); }
UniqueFd PodExec::take_stdout() { return std::move(state_->stdout_r); }
UniqueFd PodExec::take_stderr() { return std::move(state_->stderr_r); }
UniqueFd PodExec::take_terminal() { return std::move(state_->master); }
const std::string& PodExec::protocol() const { return state_->protocol; }

std::optional<PodExecEnd> PodExec::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mu);
  state_->cv.wait_for(lock, timeout, [&] { return state_->finished; });
  if (!state_->finished) return std::nullopt;
  return state_->end;
}

void PodExec::hang_up() {
  State* st = state_.get();
  asio::post(st->io, [st] {
    boost::system::error_code ignored;
    beast::get_lowest_layer(*st->ws).socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  });
}

}  // namespace airlock::backend::kubernetes
