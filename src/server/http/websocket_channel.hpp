// The server's side of an accepted WebSocket (Boost.Beast), for http_server.cpp only: the
// connection's stream moves in once the handler answered an upgrade with
// HttpResponse::websocket. Reads and writes run on the connection's strand; send() and close()
// come from any thread through a bounded queue, as a streamed body's writes do.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "server/http/http_message.hpp"

namespace airlock::server {

// What the server holds of each open WebSocket, to end it when it stops.
class HangUp {
 public:
  virtual ~HangUp() = default;
  // The server stops: sends fail from now on and the owner is told the connection closed.
  virtual void hang_up() = 0;
};

struct WebSocketLimits {
  std::chrono::milliseconds handshake{30'000};  // the server's read timeout
  std::chrono::milliseconds idle{60'000};       // pinged at half, dropped after it without a word
  std::size_t max_message_bytes = 64 * 1024;    // from the client
  std::size_t max_queued_bytes = 4u << 20;      // to the client, unsent
};

template <class Stream>
class WebSocketChannel final : public WebSocket,
                               public HangUp,
                               public std::enable_shared_from_this<WebSocketChannel<Stream>> {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Open = std::function<WebSocketHandlers(std::shared_ptr<WebSocket>)>;

  WebSocketChannel(Stream stream, WebSocketLimits limits) : ws_(std::move(stream)), limits_(limits) {}

  // Completes the handshake of `request`, then gives the connection to `open` and reads.
  void accept(Request request, Open open) {
    namespace websocket = boost::beast::websocket;
    boost::beast::get_lowest_layer(ws_).expires_never();  // the websocket's own timeouts apply
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = limits_.handshake;
    timeouts.idle_timeout = limits_.idle;
    timeouts.keep_alive_pings = true;
    ws_.set_option(timeouts);
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& r) { r.set(boost::beast::http::field::server, "airlock"); }));
    ws_.read_message_max(limits_.max_message_bytes);
    request_ = std::move(request);
    auto self = this->shared_from_this();
    ws_.async_accept(request_, [self, open = std::move(open)](boost::system::error_code ec) {
      if (ec) return self->end();
      {
        std::lock_guard lock(self->mu_);
        self->open_ = true;  // the owner may send from `open` on
      }
      auto handlers = open(self);
      std::function<void()> closed_meanwhile;  // hung up while `open` ran
      {
        std::lock_guard lock(self->mu_);
        self->handlers_ = std::move(handlers);
        if (!self->open_ && !self->closed_told_) {
          self->closed_told_ = true;
          closed_meanwhile = std::move(self->handlers_.closed);
        }
      }
      if (closed_meanwhile) return closed_meanwhile();
      self->read();
    });
  }

  bool send(std::string message, bool binary) override {
    {
      std::lock_guard lock(mu_);
      if (!open_ || closing_) return false;
      queued_bytes_ += message.size();
      queue_.push_back({std::move(message), binary});
      if (queued_bytes_ > limits_.max_queued_bytes) overflow_ = true;
    }
    post_pump();
    return true;
  }

  bool wait_below(std::size_t bytes, std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mu_);
    drained_.wait_for(lock, timeout, [&] { return !open_ || queued_bytes_ < bytes; });
    return open_ && queued_bytes_ < bytes;
  }

  void close(std::uint16_t code, std::string reason) override {
    {
      std::lock_guard lock(mu_);
      if (!open_ || closing_) return;
      closing_ = true;
      close_reason_.code = code;
      close_reason_.reason = reason.substr(0, 120);  // a close frame carries at most 123 bytes
    }
    post_pump();
  }

  void hang_up() override {
    auto closed = take_closed();
    if (closed) closed();
  }

 private:
  struct Outgoing {
    std::string bytes;
    bool binary = false;
  };

  void post_pump() {
    auto self = this->shared_from_this();
    boost::asio::post(ws_.get_executor(), [self] { self->pump(); });
  }

  void read() {
    auto self = this->shared_from_this();
    ws_.async_read(in_, [self](boost::system::error_code ec, std::size_t) {
      if (ec) return self->end();
      std::string message = boost::beast::buffers_to_string(self->in_.data());
      self->in_.consume(self->in_.size());
      std::function<void(std::string, bool)> deliver;
      {
        std::lock_guard lock(self->mu_);
        if (self->open_) deliver = self->handlers_.message;
      }
      if (deliver) deliver(std::move(message), self->ws_.got_binary());
      self->read();
    });
  }

  // On the strand: one write at a time, in order; then the close frame once asked for.
  void pump() {
    if (writing_) return;
    Outgoing next;
    bool have = false, send_close = false, overflow = false;
    {
      std::lock_guard lock(mu_);
      if (!open_) return;
      overflow = overflow_;
      if (!overflow && !queue_.empty()) {
        next = std::move(queue_.front());
        queue_.pop_front();
        have = true;
      } else if (!overflow && closing_ && !close_sent_) {
        send_close = close_sent_ = true;
      }
    }
    if (overflow) return drop();
    auto self = this->shared_from_this();
    if (send_close) {
      writing_ = true;
      return ws_.async_close(close_reason_, [self](boost::system::error_code) {
        self->writing_ = false;
        self->end();
      });
    }
    if (!have) return;
    writing_ = true;
    auto data = std::make_shared<std::string>(std::move(next.bytes));
    ws_.binary(next.binary);
    ws_.async_write(boost::asio::buffer(*data), [self, data](boost::system::error_code ec, std::size_t) {
      self->writing_ = false;
      {
        std::lock_guard lock(self->mu_);
        self->queued_bytes_ -= std::min(self->queued_bytes_, data->size());
      }
      self->drained_.notify_all();
      if (ec) return self->end();
      self->pump();
    });
  }

  // A client too slow to read what it is sent: the connection is dropped, not closed politely.
  void drop() {
    boost::system::error_code ignored;
    boost::beast::get_lowest_layer(ws_).socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    boost::beast::get_lowest_layer(ws_).close();
    end();
  }

  std::function<void()> take_closed() {
    std::lock_guard lock(mu_);
    const bool was_open = open_;
    open_ = false;
    queue_.clear();
    queued_bytes_ = 0;
    drained_.notify_all();
    if (!was_open || closed_told_ || !handlers_.closed) return nullptr;
    closed_told_ = true;
    return std::move(handlers_.closed);
  }

  // The connection is over (read or write failed, the close completed): the owner is told once.
  void end() {
    if (auto closed = take_closed()) closed();
    if (!writing_) {
      boost::system::error_code ignored;
      boost::beast::get_lowest_layer(ws_).socket().close(ignored);
    }
  }

  boost::beast::websocket::stream<Stream> ws_;
  const WebSocketLimits limits_;
  Request request_;
  boost::beast::flat_buffer in_;
  bool writing_ = false;  // on the strand only
  boost::beast::websocket::close_reason close_reason_;
  std::mutex mu_;
  std::condition_variable drained_;
  WebSocketHandlers handlers_;
  std::deque<Outgoing> queue_;
  std::size_t queued_bytes_ = 0;
  bool open_ = false, closing_ = false, close_sent_ = false, overflow_ = false, closed_told_ = false;
};

}  // namespace airlock::server
