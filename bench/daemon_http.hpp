// One keep-alive HTTP/1.1 connection to a daemon on loopback, as an agent's client holds it,
// with the test key: the benchmarks that go through the daemon send their requests on it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <nlohmann/json.hpp>

#include "server_test_support.hpp"

namespace airlock::bench {

class KeepAliveConnection {
 public:
  explicit KeepAliveConnection(std::uint16_t port) : stream_(io_) {
    stream_.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  }
  // The answer's JSON; aborts unless its status is `expected` (a benchmark of failures is none).
  nlohmann::json call(boost::beast::http::verb verb, const std::string& target, const std::string& body, int expected) {
    return nlohmann::json::parse(raw(verb, target, body, "application/json", expected));
  }
  // The answer's body as it came.
  std::string raw(boost::beast::http::verb verb, const std::string& target, const std::string& body,
                  const std::string& type, int expected) {
    namespace bhttp = boost::beast::http;
    bhttp::request<bhttp::string_body> req{verb, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    req.set(bhttp::field::authorization, std::string("Bearer ") + airlock::server::test::kKey);
    req.set(bhttp::field::accept, "application/json");
    req.keep_alive(true);
    if (!body.empty()) {
      req.set(bhttp::field::content_type, type);
      req.body() = body;
    }
    req.prepare_payload();
    bhttp::write(stream_, req);
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64u << 20);
    bhttp::read(stream_, buffer_, parser);
    auto& res = parser.get();
    if (res.result_int() != static_cast<unsigned>(expected)) {
      std::fprintf(stderr, "%s %s: HTTP %u %s\n", std::string(bhttp::to_string(verb)).c_str(), target.c_str(),
                   res.result_int(), res.body().c_str());
      std::abort();
    }
    return res.body();
  }

 private:
  boost::asio::io_context io_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace airlock::bench
