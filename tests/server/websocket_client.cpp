#include "websocket_client.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace airlock::server::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using Clock = std::chrono::steady_clock;

// One read is kept outstanding across calls: a read that timed out is still the next one.
struct WebSocketClient::Opened {
  asio::io_context io;
  websocket::stream<beast::tcp_stream> ws{io};
  beast::flat_buffer buffer;
  bool reading = false, read_done = false;
  boost::system::error_code read_error;
};

std::unique_ptr<WebSocketClient> WebSocketClient::open(std::uint16_t port, const std::string& target,
                                                       const std::map<std::string, std::string>& headers, int* status,
                                                       std::string* body) {
  auto o = std::make_unique<Opened>();
  boost::system::error_code ec;
  beast::get_lowest_layer(o->ws).socket().connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  *status = 0;
  if (ec) return nullptr;
  o->ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& r) {
    for (const auto& [k, v] : headers) r.set(k, v);
  }));
  websocket::response_type response;
  o->ws.handshake(response, "127.0.0.1", target, ec);
  *status = static_cast<int>(response.result_int());
  if (body) *body = response.body();
  if (ec) return nullptr;
  return std::unique_ptr<WebSocketClient>(new WebSocketClient(std::move(o)));
}

WebSocketClient::WebSocketClient(std::unique_ptr<Opened> opened) : opened_(std::move(opened)) {}
WebSocketClient::~WebSocketClient() { drop(); }

namespace {

bool write(WebSocketClient::Opened& o, const std::string& bytes, bool binary) {
  o.ws.binary(binary);
  bool done = false;
  boost::system::error_code error;
  o.ws.async_write(asio::buffer(bytes), [&](boost::system::error_code ec, std::size_t) {
    done = true;
    error = ec;
  });
  o.io.restart();
  while (!done && o.io.run_one_for(std::chrono::seconds(10)) > 0) {
  }
  return done && !error;
}

}  // namespace

bool WebSocketClient::send_binary(const std::string& bytes) { return !closed_ && write(*opened_, bytes, true); }
bool WebSocketClient::send_text(const nlohmann::json& message) {
  return !closed_ && write(*opened_, message.dump(), false);
}

bool WebSocketClient::read_one(std::chrono::milliseconds timeout, std::string& binary) {
  auto& o = *opened_;
  if (closed_) return false;
  if (!o.reading) {
    o.reading = true;
    o.read_done = false;
    o.ws.async_read(o.buffer, [&o](boost::system::error_code ec, std::size_t) {
      o.read_done = true;
      o.read_error = ec;
    });
  }
  const auto deadline = Clock::now() + timeout;
  o.io.restart();
  while (!o.read_done && Clock::now() < deadline &&
         o.io.run_one_for(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())) > 0) {
  }
  if (!o.read_done) return false;
  o.reading = false;
  if (o.read_error) {
    closed_ = true;
    if (o.read_error == websocket::error::closed) close_code_ = static_cast<std::uint16_t>(o.ws.reason().code);
    return false;
  }
  std::string message = beast::buffers_to_string(o.buffer.data());
  o.buffer.consume(o.buffer.size());
  if (o.ws.got_text()) texts_.push_back(nlohmann::json::parse(message, nullptr, false));
  else binary += message;
  return true;
}

std::string WebSocketClient::read_until(const std::string& marker, std::chrono::milliseconds timeout) {
  std::string binary;
  const auto deadline = Clock::now() + timeout;
  while (binary.find(marker) == std::string::npos && Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!read_one(left, binary) && closed_) break;
  }
  return binary;
}

bool WebSocketClient::read_to_close(std::chrono::milliseconds timeout) {
  std::string ignored;
  const auto deadline = Clock::now() + timeout;
  while (!closed_ && Clock::now() < deadline)
    read_one(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()), ignored);
  return closed_ && close_code_ != 0;
}

void WebSocketClient::drop() {
  if (!opened_) return;
  boost::system::error_code ignored;
  beast::get_lowest_layer(opened_->ws).socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  beast::get_lowest_layer(opened_->ws).socket().close(ignored);
  closed_ = true;
}

}  // namespace airlock::server::test
