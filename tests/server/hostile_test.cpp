// Issue #13, the part without a key: hostile input never takes the daemon down and never
// grows it without bound. Each test runs the attack against a real daemon (in this process).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <random>
#include <thread>

#include "audit/audit_log.hpp"
#include "audit/log_reader.hpp"
#include "pipeline/failed_auth.hpp"
#include "server/invocations/invocation_store.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A client that writes raw bytes and reads whatever comes back until the server closes
// (or a generous safety limit passes: the tests assert what arrives, never how fast).
class RawClient {
 public:
  explicit RawClient(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    timeval limit{60, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Everything until the server closes the connection.
  std::string read_all() {
    std::string out;
    char buffer[4096];
    for (ssize_t n; (n = ::recv(fd_, buffer, sizeof buffer, 0)) > 0;)
      out.append(buffer, static_cast<std::size_t>(n));
    return out;
  }
  // One response head and as much of the body as Content-Length says.
  std::string read_response() {
    std::string out;
    char buffer[4096];
    while (true) {
      auto end = out.find("\r\n\r\n");
      if (end != std::string::npos) {
        auto cl = out.find("Content-Length: ");
        std::size_t length = cl == std::string::npos ? 0 : std::stoul(out.substr(cl + 16));
        if (out.size() >= end + 4 + length) return out;
      }
      ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) return out;
      out.append(buffer, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

std::string random_name(std::mt19937& rng) {
  static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string name = "zz";
  for (int i = 0; i < 24; ++i) name += letters[rng() % (sizeof letters - 1)];
  return name;
}

TEST(Hostile, UnauthenticatedInvokesOfRandomToolsDoNotGrowTheMetrics) {
  Workspace ws;
  RunningDaemon d(ws);
  std::mt19937 rng(13);
  std::vector<std::string> names;
  for (int i = 0; i < 500; ++i) {
    names.push_back(random_name(rng));
    const std::string key = i % 2 ? "" : "not-a-key";
    ASSERT_EQ(invoke(d.port, names.back(), {{"n", 1}}, key).status, 401);
  }
  auto metrics = http(d.port, "GET", "/metrics", "", "").body;
  for (const auto& name : names)
    ASSERT_EQ(metrics.find(name), std::string::npos) << name << " is a label";
  EXPECT_NE(metrics.find("airlock_invocations_total{status=\"denied\",tool=\"(unknown)\"} 500"),
            std::string::npos)
      << metrics;
  // Bounded: the page is the size of a few series, not of 500 (each one ~1.5 KiB with buckets).
  EXPECT_LT(metrics.size(), 64u * 1024) << metrics.size();
  // A configured tool keeps its own label, even without a key.
  invoke(d.port, "echo", {{"n", 1}}, "");
  metrics = http(d.port, "GET", "/metrics", "", "").body;
  EXPECT_NE(metrics.find("airlock_invocations_total{status=\"denied\",tool=\"echo\"} 1"),
            std::string::npos);
}

// Without a key a request leaves no row in the daemon's state (state.db): only authenticated
// invocations are kept. One with a key still is.
TEST(Hostile, UnauthenticatedInvokesLeaveNoStateBehind) {
  Workspace ws;
  RunningDaemon d(ws);
  std::mt19937 rng(14);
  std::vector<std::string> ids;
  for (int i = 0; i < 50; ++i) {
    auto r = invoke(d.port, random_name(rng), {{"n", 1}}, i % 2 ? "" : "not-a-key");
    ASSERT_EQ(r.status, 401);
    ids.push_back(r.json()["id"].get<std::string>());
  }
  auto ok = invoke(d.port, "echo", {{"n", 1}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  auto store = InvocationStore::open(ws.dir() + "/data/state.db");
  ASSERT_TRUE(store.ok()) << store.error().message;
  for (const auto& id : ids) EXPECT_FALSE((*store)->get(id)) << id << " was stored";
  EXPECT_TRUE((*store)->get(ok.json()["id"].get<std::string>()));
}

TEST(Hostile, FailedAuthenticationsAreAuditedAggregatedPerSource) {
  Workspace ws;
  RunningDaemon d(ws);
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(invoke(d.port, i % 3 ? random_name(rng) : "echo", {{"n", 1}}, i % 2 ? "" : "bad-key")
                  .status,
              401);
  EXPECT_EQ(invoke(d.port, "echo", {{"n", 1}}).json()["status"], "ok");
  d.daemon->shutdown();  // what is pending is written at the latest now
  auto reader = audit::LogReader::open(ws.audit_path());
  ASSERT_TRUE(reader.ok());
  auto size = reader->size();
  ASSERT_TRUE(size.ok());
  ASSERT_LE(*size, 3u) << "one record per request without a key";
  std::uint64_t failed = 0;
  for (std::uint64_t i = 0; i < *size; ++i) {
    auto record = reader->record(i);
    ASSERT_TRUE(record.ok());
    auto j = nlohmann::json::parse(*record);
    if (j.value("schema", "") != "airlock.failed_auth/v1") continue;
    EXPECT_EQ(j["source"], "127.0.0.1");
    failed += j["count"].get<std::uint64_t>();
    EXPECT_EQ(j["reasons"]["missing_key"].get<int>() + j["reasons"]["invalid_key"].get<int>(),
              j["count"].get<int>());
    EXPECT_LE(j["tools"].size(), 8u);
    EXPECT_LE(j["first_ms"].get<std::int64_t>(), j["last_ms"].get<std::int64_t>());
  }
  EXPECT_EQ(failed, 200u);
}

TEST(Hostile, EveryRefusalReasonIsCounted) {
  Workspace ws("server: {listen: 127.0.0.1:0, maxBodyBytes: 1Ki, readTimeout: 300ms}");
  RunningDaemon d(ws);
  EXPECT_EQ(http(d.port, "POST", "/v1/tools/echo/invoke", std::string(4096, 'x')).status, 413);
  {
    RawClient c(d.port);
    c.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20 * 1024, 'a') +
           "\r\n\r\n");
    EXPECT_EQ(c.read_all().rfind("HTTP/1.1 431", 0), 0u);
  }
  {
    RawClient c(d.port);
    c.send("NOT HTTP AT ALL\r\n\r\n");
    EXPECT_EQ(c.read_all().rfind("HTTP/1.1 400", 0), 0u);
  }
  {
    RawClient c(d.port);
    c.send("POST /v1/tools/echo/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a");
    EXPECT_EQ(c.read_all().rfind("HTTP/1.1 408", 0), 0u);
  }
  auto metrics = http(d.port, "GET", "/metrics", "", "").body;
  for (const char* reason :
       {"body_too_large", "headers_too_large", "malformed_request", "request_timeout"})
    EXPECT_NE(metrics.find("airlock_rejected_total{reason=\"" + std::string(reason) + "\"} 1"),
              std::string::npos)
        << reason << "\n"
        << metrics;
}

TEST(Hostile, ATricklingBodyIsAnswered408) {
  Workspace ws("server: {listen: 127.0.0.1:0, readTimeout: 500ms}");
  RunningDaemon d(ws);
  RawClient c(d.port);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send("POST /v1/tools/echo/invoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                     std::string(kKey) + "\r\nContent-Length: 64\r\n\r\n{"));
  // One byte now and then, until the server gives up (sends fail once it has closed).
  std::string answer;
  auto reader = std::async(std::launch::async, [&c] { return c.read_all(); });
  for (int i = 0; i < 60 && reader.wait_for(100ms) != std::future_status::ready; ++i)
    (void)c.send(" ");
  answer = reader.get();
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  EXPECT_NE(answer.find("request_timeout"), std::string::npos) << answer;
  EXPECT_EQ(http(d.port, "GET", "/healthz", "", "").status, 200);  // and the daemon serves on
}

TEST(Hostile, HeadIsAnsweredLikeGet) {
  Workspace ws;
  RunningDaemon d(ws);
  for (const char* path : {"/healthz", "/metrics", "/openapi.json", "/v1/tools"}) {
    auto get = http(d.port, "GET", path);
    auto head = http(d.port, "HEAD", path);
    EXPECT_EQ(head.status, 200) << path;
    EXPECT_TRUE(head.body.empty()) << path;
    EXPECT_EQ(head.headers["content-type"], get.headers["content-type"]) << path;
  }
  auto head = http(d.port, "HEAD", "/healthz", "", "");
  EXPECT_EQ(head.headers["content-length"],
            std::to_string(http(d.port, "GET", "/healthz", "", "").body.size()));
  auto del = http(d.port, "DELETE", "/healthz");
  EXPECT_EQ(del.status, 405);
  EXPECT_EQ(del.headers["allow"], "GET, HEAD");
}

TEST(Hostile, DrainingHealthzSaysWhenToRetry) {
  Workspace ws;
  RunningDaemon d(ws);
  RawClient c(d.port);  // opened before the drain: open connections are still served
  const std::string get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(c.send(get));
  ASSERT_EQ(c.read_response().rfind("HTTP/1.1 200", 0), 0u);
  auto slow = std::async(std::launch::async, [&] {
    return invoke(d.port, "slow", {{"seconds", 3}});
  });
  for (int i = 0;
       i < 500 &&
       http(d.port, "GET", "/metrics", "", "").body.find("airlock_sandboxes_running 1") ==
           std::string::npos;
       ++i)
    std::this_thread::sleep_for(10ms);
  auto stopping = std::async(std::launch::async, [&] { d.daemon->shutdown(); });
  std::string answer;
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(c.send(get));
    answer = c.read_response();
    if (answer.rfind("HTTP/1.1 503", 0) == 0) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_NE(answer.find("Retry-After: 5"), std::string::npos) << answer;
  stopping.get();
  EXPECT_EQ(slow.get().json()["status"], "ok");
}

TEST(Hostile, FilesInTheDataDirectoryAreTheDaemonsOnly) {
  Workspace ws;
  {
    RunningDaemon d(ws);
    EXPECT_EQ(invoke(d.port, "echo", {{"n", 1}}).status, 200);
    invoke(d.port, "echo", {{"n", 1}}, "");
    // While it runs (the -wal and -shm files exist now) and after it stopped.
    for (const auto& e : fs::recursive_directory_iterator(ws.dir() + "/data")) {
      if (!e.is_regular_file() || e.path().parent_path().filename() == "runtime") continue;
      struct stat st {};
      ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & 0777, 0600u) << e.path();
    }
  }
  std::vector<std::string> seen;
  for (const auto& e : fs::recursive_directory_iterator(ws.dir() + "/data")) {
    seen.push_back(e.path().filename().string());
    if (!e.is_regular_file() || e.path().parent_path().filename() == "runtime") continue;
    struct stat st {};
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << e.path();
  }
  EXPECT_NE(std::find(seen.begin(), seen.end(), "state.db"), seen.end());
  EXPECT_NE(std::find(seen.begin(), seen.end(), "audit.db"), seen.end());
}

TEST(Hostile, ASecondDaemonOnTheSameDataDirectoryIsRefused) {
  Workspace ws;
  RunningDaemon first(ws);
  auto second = Daemon::create(ws.config());
  ASSERT_FALSE(second.ok()) << "two daemons on one data directory";
  EXPECT_NE(second.error().message.find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.error().message;
  EXPECT_EQ(http(first.port, "GET", "/healthz", "", "").status, 200);
}

// The aggregator's own bounds: addresses past the cap share one bucket; names are cut; counts
// are all there.
TEST(FailedAuthLog, ManySourcesShareAnOverflowBucketAndNothingIsLost) {
  Workspace ws;
  fs::create_directories(ws.dir() + "/data");
  auto log = audit::AuditLog::open(ws.audit_path());
  ASSERT_TRUE(log.ok()) << log.error().message;
  {
    pipeline::FailedAuthOptions options;
    options.max_sources = 4;
    pipeline::FailedAuthLog failed(**log, options);
    for (int i = 0; i < 100; ++i)
      failed.note("10.0.0." + std::to_string(i), std::string(1000, 'x') + std::to_string(i),
                  "invalid_key");
  }  // stopped: flushed
  ASSERT_TRUE((*log)->close().ok());
  auto reader = audit::LogReader::open(ws.audit_path());
  ASSERT_TRUE(reader.ok());
  auto size = reader->size();
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 5u);  // 4 addresses and "(other)"
  std::uint64_t total = 0;
  bool overflow = false;
  for (std::uint64_t i = 0; i < *size; ++i) {
    auto j = nlohmann::json::parse(*reader->record(i));
    total += j["count"].get<std::uint64_t>();
    overflow |= j["source"] == "(other)";
    EXPECT_LE(j["tools"].size(), 8u);
    for (const auto& [name, n] : j["tools"].items()) EXPECT_LE(name.size(), 64u);
  }
  EXPECT_TRUE(overflow);
  EXPECT_EQ(total, 100u);
}

}  // namespace
}  // namespace airlock::server::test
