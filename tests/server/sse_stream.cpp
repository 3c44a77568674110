#include "sse_stream.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace airlock::server::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

// The JSON-RPC messages of an event stream's body: each event's data line.
std::vector<nlohmann::json> data_lines(const std::string& body) {
  std::vector<nlohmann::json> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find('\n', at);
    if (end == std::string::npos) break;  // not whole yet
    out.push_back(nlohmann::json::parse(body.substr(at + 6, end - at - 6), nullptr, false));
    at = end;
  }
  return out;
}

}  // namespace

struct SseStream::Impl {
  asio::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
};

SseStream::SseStream(std::uint16_t port, const std::string& key, const std::map<std::string, std::string>& headers)
    : impl_(std::make_unique<Impl>()) {
  beast::error_code ec;
  impl_->stream.socket().connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return;
  bhttp::request<bhttp::string_body> req{bhttp::verb::get, "/mcp", 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::authorization, "Bearer " + key);
  req.set(bhttp::field::accept, "text/event-stream");
  for (const auto& [name, value] : headers) req.set(name, value);
  bhttp::write(impl_->stream, req, ec);
  impl_->parser.body_limit(64 * 1024 * 1024);
  if (!ec) bhttp::read_header(impl_->stream, impl_->buffer, impl_->parser, ec);
  if (ec) return;
  status_ = static_cast<int>(impl_->parser.get().result_int());
  reader_ = std::thread([this] {
    beast::error_code error;
    while (!error && !impl_->parser.is_done()) {
      bhttp::read_some(impl_->stream, impl_->buffer, impl_->parser, error);
      std::lock_guard lock(mu_);
      body_ = impl_->parser.get().body();
      changed_.notify_all();
    }
    std::lock_guard lock(mu_);
    ended_ = true;
    changed_.notify_all();
  });
}

SseStream::~SseStream() {
  if (!reader_.joinable()) return;
  beast::error_code ignored;
  impl_->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  reader_.join();
}

std::vector<nlohmann::json> SseStream::messages() const {
  std::lock_guard lock(mu_);
  return data_lines(body_);
}

bool SseStream::wait_for(const std::function<bool(const std::vector<nlohmann::json>&)>& done,
                         std::chrono::seconds bound) const {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, bound, [&] { return ended_ || done(data_lines(body_)); });
  return done(data_lines(body_));
}

bool SseStream::wait_ended(std::chrono::seconds bound) const {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, bound, [&] { return ended_; });
}

}  // namespace airlock::server::test
