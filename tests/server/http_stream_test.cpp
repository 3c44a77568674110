// Streamed response bodies (HttpResponse::stream): a handler that writes from its own thread,
// read by a client on a plain socket (and over TLS). Waits are bounded (a broken server fails
// the test rather than holding it); nothing asserts how long anything takes.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http/body_stream.hpp"
#include "server/http/http_server.hpp"
#include "tls_test_support.hpp"

namespace airlock::server {
namespace {

constexpr auto kBound = std::chrono::seconds(30);  // a safety net, never an expectation

// A count the client raises and the producer waits for.
class Acks {
 public:
  void ack() {
    std::lock_guard lock(mu_);
    ++count_;
    cv_.notify_all();
  }
  bool wait_for(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kBound, [&] { return count_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

// A blocking client on one connection, reading a chunked body a chunk at a time.
class Client {
 public:
  explicit Client(std::uint16_t port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    timeval tv{static_cast<time_t>(kBound.count()), 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { close(); }
  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void send(const std::string& text) {
    ASSERT_EQ(::send(fd_, text.data(), text.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(text.size()));
  }
  void get(const std::string& target) {
    send("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  }

  // The head up to its blank line; "" if the connection ended first.
  std::string head() { return until("\r\n\r\n"); }
  // The next chunk's data; "" for the last chunk; nullopt if the framing is broken or cut.
  std::optional<std::string> chunk() {
    auto size_line = until("\r\n");
    if (size_line.empty()) return std::nullopt;
    const auto size = std::stoul(size_line, nullptr, 16);
    if (!fill(size + 2)) return std::nullopt;
    std::string data = buf_.substr(0, size);
    buf_.erase(0, size + 2);
    if (size == 0) buf_.insert(0, "\r\n");  // the last chunk ends with the blank line
    if (size == 0 && until("\r\n") != "\r\n") return std::nullopt;
    return data;
  }
  std::string bytes(std::size_t n) {
    if (!fill(n)) return "";
    auto out = buf_.substr(0, n);
    buf_.erase(0, n);
    return out;
  }

 private:
  bool fill(std::size_t n) {
    char tmp[4096];
    while (buf_.size() < n) {
      const ssize_t got = recv(fd_, tmp, sizeof tmp, 0);
      if (got <= 0) return false;
      buf_.append(tmp, static_cast<std::size_t>(got));
    }
    return true;
  }
  // Through `end` (included); "" if it never comes.
  std::string until(const std::string& end) {
    for (;;) {
      auto at = buf_.find(end);
      if (at != std::string::npos) {
        auto out = buf_.substr(0, at + end.size());
        buf_.erase(0, at + end.size());
        return out;
      }
      if (!fill(buf_.size() + 1)) return "";
    }
  }

  int fd_;
  bool connected_ = false;
  std::string buf_;
};

// A body as the chunks of a chunked encoding, decoded; nullopt if the framing is broken.
std::optional<std::string> dechunk(std::string body) {
  std::string out;
  for (;;) {
    auto eol = body.find("\r\n");
    if (eol == std::string::npos) return std::nullopt;
    const auto size = std::stoul(body.substr(0, eol), nullptr, 16);
    if (size == 0) return out;
    if (body.size() < eol + 2 + size + 2) return std::nullopt;
    out += body.substr(eol + 2, size);
    body.erase(0, eol + 2 + size + 2);
  }
}

// The handler: /plain answers at once; /stream... hand the writer to `produce` on a thread
// of the test's (joined at the end).
class StreamServer : public ::testing::Test {
 protected:
  using Producer = std::function<void(std::shared_ptr<BodyWriter>)>;

  void start(HttpServerOptions options = {}) {
    options.port = 0;
    server = std::make_unique<HttpServer>(
        [this](const HttpRequest& request, std::function<void(HttpResponse)> reply) {
          if (request.target == "/plain") return reply(json_response(200, {{"plain", true}}));
          HttpResponse resp;
          resp.content_type = "text/event-stream";
          resp.stream = [this](std::shared_ptr<BodyWriter> writer) {
            std::lock_guard lock(mu);
            threads.emplace_back(produce, std::move(writer));
          };
          reply(std::move(resp));
        },
        options);
    ASSERT_TRUE(server->bind().ok());
    server->serve();
  }
  void TearDown() override {
    if (server) server->stop();
    std::lock_guard lock(mu);
    for (auto& t : threads) t.join();
  }

  Producer produce;
  std::unique_ptr<HttpServer> server;
  std::mutex mu;
  std::vector<std::thread> threads;
};

TEST_F(StreamServer, ChunksArriveInOrderBeforeFinish) {
  Acks acks;
  produce = [&acks](std::shared_ptr<BodyWriter> w) {
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(w->write("event " + std::to_string(i) + "\n"));
      if (!acks.wait_for(i + 1)) return;  // the client must have it before the next, and finish
    }
    w->finish();
  };
  start();
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  c.get("/stream");
  auto head = c.head();
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  EXPECT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
  EXPECT_NE(head.find("text/event-stream"), std::string::npos) << head;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(c.chunk(), "event " + std::to_string(i) + "\n");
    acks.ack();
  }
  EXPECT_EQ(c.chunk(), "");  // the last chunk, after finish()
}

TEST_F(StreamServer, ConnectionIsKeptAliveAfterAStream) {
  produce = [](std::shared_ptr<BodyWriter> w) {
    w->write("one");
    w->write("two");
    w->finish();
  };
  start();
  Client c(server->port());
  c.get("/stream");
  c.head();
  EXPECT_EQ(c.chunk(), "one");
  EXPECT_EQ(c.chunk(), "two");
  EXPECT_EQ(c.chunk(), "");
  c.get("/plain");
  auto head = c.head();
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  auto at = head.find("Content-Length: ");
  ASSERT_NE(at, std::string::npos) << head;
  EXPECT_EQ(c.bytes(std::stoul(head.substr(at + 16))), R"({"plain":true})");
  c.get("/stream");  // and a second stream on it
  c.head();
  EXPECT_EQ(c.chunk(), "one");
}

// The next request sent before the stream ends (pipelined) is kept, and answered after it.
TEST_F(StreamServer, RequestPipelinedDuringAStreamIsAnsweredAfterIt) {
  Acks acks;
  produce = [&acks](std::shared_ptr<BodyWriter> w) {
    w->write("before");
    if (!acks.wait_for(1)) return;  // the client has sent its next request meanwhile
    w->write("after");
    w->finish();
  };
  start();
  Client c(server->port());
  c.get("/stream");
  c.head();
  EXPECT_EQ(c.chunk(), "before");
  c.get("/plain");
  acks.ack();
  EXPECT_EQ(c.chunk(), "after");
  EXPECT_EQ(c.chunk(), "");
  auto head = c.head();
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  EXPECT_NE(head.find("application/json"), std::string::npos) << head;
}

TEST_F(StreamServer, ClientLeavingMidStreamIsReportedOnceAndWritesFail) {
  std::promise<void> gone;
  std::atomic<int> gone_calls{0};
  std::promise<bool> write_after;
  produce = [&](std::shared_ptr<BodyWriter> w) {
    w->on_client_gone([&] {
      if (gone_calls++ == 0) gone.set_value();
    });
    w->write("first");
    // Nothing more is written until the client has gone: the server notices by itself.
    if (gone.get_future().wait_for(kBound) != std::future_status::ready)
      return write_after.set_value(true);
    write_after.set_value(w->write("after"));
    w->finish();
  };
  start();
  {
    Client c(server->port());
    c.get("/stream");
    c.head();
    EXPECT_EQ(c.chunk(), "first");
  }
  auto result = write_after.get_future();
  ASSERT_EQ(result.wait_for(kBound), std::future_status::ready);
  EXPECT_FALSE(result.get());
  server->stop();  // ends open streams: must not report it again
  EXPECT_EQ(gone_calls, 1);
}

TEST_F(StreamServer, ClientThatDoesNotReadIsCutOff) {
  std::promise<void> gone;
  std::promise<bool> refused;
  produce = [&](std::shared_ptr<BodyWriter> w) {
    w->on_client_gone([&] { gone.set_value(); });  // once, or set_value would throw
    const std::string block(64 * 1024, 'x');
    for (int i = 0; i < 100'000; ++i)  // 6 GB: far beyond socket buffers and the queue
      if (!w->write(block)) return refused.set_value(true);
    refused.set_value(false);
  };
  HttpServerOptions options;
  options.max_stream_queue_bytes = 256 * 1024;
  start(options);
  Client c(server->port());
  c.get("/stream");  // and never read
  auto result = refused.get_future();
  ASSERT_EQ(result.wait_for(kBound), std::future_status::ready);
  EXPECT_TRUE(result.get());
  // The callback runs on the server's side once it drops the connection.
  EXPECT_EQ(gone.get_future().wait_for(kBound), std::future_status::ready);
}

TEST_F(StreamServer, HeadRequestGetsTheHeadAndTheWriterIsGone) {
  std::promise<bool> wrote;
  produce = [&](std::shared_ptr<BodyWriter> w) { wrote.set_value(w->write("body")); };
  start();
  Client c(server->port());
  c.send("HEAD /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_NE(c.head().find("HTTP/1.1 200"), std::string::npos);
  auto result = wrote.get_future();
  ASSERT_EQ(result.wait_for(kBound), std::future_status::ready);
  EXPECT_FALSE(result.get());
  c.get("/plain");  // still alive
  EXPECT_NE(c.head().find("HTTP/1.1 200"), std::string::npos);
}

TEST_F(StreamServer, StreamOverTls) {
  test::TestPki pki;
  produce = [](std::shared_ptr<BodyWriter> w) {
    for (const char* e : {"data: a\n\n", "data: b\n\n", "data: c\n\n"}) w->write(e);
    w->finish();
  };
  HttpServerOptions options;
  options.tls = policy::TlsConfig{pki.file("server.pem"), pki.file("server.key"), "", "", ""};
  start(options);
  test::TlsClientOptions client;
  client.ca_file = pki.file("ca.pem");
  auto reply = test::tls_request(server->port(), client, "GET", "/stream");
  ASSERT_EQ(reply.status, 200) << reply.error;
  EXPECT_EQ(dechunk(reply.body), "data: a\n\ndata: b\n\ndata: c\n\n") << reply.body;
}

// handle_raw_request's collection (no socket): chunks in order, then the last chunk; a stream
// that does not finish is cut where a client would stop waiting.
TEST(CollectChunked, ChunksFromAnotherThreadThenTheLastChunk) {
  std::thread producer;
  auto out = collect_chunked(
      [&producer](std::shared_ptr<BodyWriter> w) {
        producer = std::thread([w] {
          w->write("ab");
          w->write("cde");
          w->finish();
        });
      },
      kBound, 1 << 20);
  producer.join();
  EXPECT_EQ(out, "2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n");
}

TEST(CollectChunked, UnfinishedStreamIsCutAndToldTheClientHasGone) {
  bool gone = false;
  auto out = collect_chunked(
      [&gone](std::shared_ptr<BodyWriter> w) {
        w->on_client_gone([&gone] { gone = true; });
        w->write("partial");
      },
      std::chrono::milliseconds(50), 1 << 20);
  EXPECT_EQ(out, "7\r\npartial\r\n");
  EXPECT_TRUE(gone);
}

TEST(CollectChunked, OverTheByteLimitIsCut) {
  auto out = collect_chunked(
      [](std::shared_ptr<BodyWriter> w) {
        w->write(std::string(10, 'x'));
        w->write(std::string(10, 'y'));
        w->finish();
      },
      kBound, 15);
  EXPECT_EQ(out.find("0\r\n\r\n"), std::string::npos) << out;
}

// handle_raw_request (the fuzz target's path): a streamed answer as its chunked bytes.
TEST(RawRequest, StreamedAnswerIsCollectedAsChunks) {
  std::thread producer;
  RequestHandler handler = [&producer](const HttpRequest&,
                                       std::function<void(HttpResponse)> reply) {
    HttpResponse resp;
    resp.content_type = "text/event-stream";
    resp.stream = [&producer](std::shared_ptr<BodyWriter> w) {
      producer = std::thread([w] {
        w->write("data: 1\n\n");
        w->finish();
      });
    };
    reply(std::move(resp));
  };
  auto out = handle_raw_request(handler, "GET /s HTTP/1.1\r\nHost: x\r\n\r\n", 1024);
  producer.join();
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << out;
  const auto body = out.substr(out.find("\r\n\r\n") + 4);
  EXPECT_EQ(body, "9\r\ndata: 1\n\n\r\n0\r\n\r\n");
  EXPECT_EQ(dechunk(body), "data: 1\n\n");
}

}  // namespace
}  // namespace airlock::server
