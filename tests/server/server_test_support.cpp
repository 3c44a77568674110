#include "server_test_support.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "audit/log_reader.hpp"
#include "common/digest.hpp"

namespace airlock::server::test {
namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

std::string config_yaml(const std::string& server_yaml, const std::string& extra_tools) {
  return std::string(R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
)") + (server_yaml.empty() ? "server: {listen: 127.0.0.1:0, maxBodyBytes: 64Ki, maxConcurrentInvocations: 4, queueLength: 64, drainTimeout: 20s}\n"
                           : server_yaml + "\n") +
         R"(storage: {dataDir: data, checkpointEvery: 100}
principals:
  - name: agent
    apiKeySha256: )" + sha256_hex(kKey) + R"(
    tools: ["*"]
    sessionTemplates: ["*"]
  - name: other
    apiKeySha256: )" + sha256_hex(kOtherKey) + R"(
    tools: ["echo"]
tiers:
  low: {timeout: 10s, memory: 128Mi, pids: 16, output: 64Ki}
tools:
  - name: echo
    description: Returns its arguments.
    runtime: {type: python, file: tools/echo.py}
    inputSchema: {type: object, properties: {n: {type: integer, maximum: 10}}, additionalProperties: true}
  - name: crash
    runtime: {type: python, file: tools/crash.py}
  - name: not-json
    runtime: {type: command, command: [/bin/echo, "this is not JSON"]}
  - name: big-output
    runtime: {type: python, file: tools/big_output.py}
  - name: slow
    runtime: {type: python, file: tools/slow.py}
    limits: {timeout: 30s}
  - name: spin
    runtime: {type: python, file: tools/spin.py}
    limits: {timeout: 1s}
  - name: fork-bomb
    runtime: {type: python, file: tools/fork_bomb.py}
    # Memory to spare: 16 forked Pythons copy their pages as they run and can reach the tier's
    # 128Mi first (seen: OOM before the timeout about one run in five); the bomb is the
    # process limit's to stop, which the tests read.
    limits: {timeout: 2s, memory: 512Mi}
  - name: memory-bomb
    runtime: {type: python, file: tools/memory_bomb.py}
  - name: promises-answer
    runtime: {type: python, file: tools/echo.py}
    outputSchema: {type: object, required: [answer]}
  - name: dangerous
    risk: high
    runtime: {type: python, file: tools/echo.py}
  - name: launch-codes
    risk: critical
    runtime: {type: python, file: tools/echo.py}
  - name: leaky
    runtime: {type: python, file: tools/leaky.py}
  - name: run-python
    runtime: {type: python-code}
    validation: {allowImports: [statistics]}
)" + extra_tools;
}

}  // namespace

Reply http(std::uint16_t port, const std::string& method, const std::string& target, const std::string& body,
           const std::string& key) {
  return http_with(port, method, target, body, key, {});
}

Reply http_with(std::uint16_t port, const std::string& method, const std::string& target,
                const std::string& body, const std::string& key,
                const std::map<std::string, std::string>& headers) {
  Reply reply;
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(method), target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    if (!key.empty()) req.set(bhttp::field::authorization, "Bearer " + key);
    if (!body.empty() || method == "POST") {
      req.set(bhttp::field::content_type, "application/json");
      req.body() = body;
      req.prepare_payload();
    }
    for (const auto& [name, value] : headers) req.set(name, value);
    bhttp::write(stream, req);
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    if (method == "HEAD") parser.skip(true);  // a HEAD answer has a Content-Length but no body
    bhttp::read(stream, buffer, parser);
    reply.status = static_cast<int>(parser.get().result_int());
    for (const auto& f : parser.get()) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      reply.headers[name] = std::string(f.value());
    }
    reply.body = parser.get().body();
  } catch (const std::exception&) {
    reply.status = 0;
  }
  return reply;
}

Reply invoke(std::uint16_t port, const std::string& tool, const nlohmann::json& arguments, const std::string& key) {
  return http(port, "POST", "/v1/tools/" + tool + "/invoke", nlohmann::json{{"arguments", arguments}}.dump(), key);
}

Workspace::Workspace(const std::string& server_yaml, const std::string& extra_tools) {
  std::string tmpl = (fs::temp_directory_path() / "airlock-server-test-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
  dir_ = tmpl;
  ::chmod(dir_.c_str(), 0755);
  fs::copy(AIRLOCK_TEST_TOOLS_DIR, dir_ + "/tools", fs::copy_options::recursive);
  ::chmod((dir_ + "/tools").c_str(), 0755);
  for (const auto& e : fs::directory_iterator(dir_ + "/tools")) ::chmod(e.path().c_str(), 0644);
  std::ofstream(config_path()) << config_yaml(server_yaml, extra_tools);
}

Workspace::~Workspace() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void Workspace::rewrite(const std::string& server_yaml, const std::string& extra_tools) const {
  write_config(config_yaml(server_yaml, extra_tools));
}

void Workspace::write_config(const std::string& yaml) const {
  const std::string temp = config_path() + ".new";
  std::ofstream(temp) << yaml;
  fs::rename(temp, config_path());  // a reader never sees half a file
}

std::string Workspace::config_text() const {
  std::ifstream in(config_path());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

policy::Config Workspace::config() const {
  auto c = policy::load_config(config_path());
  if (!c) throw std::runtime_error(c.error().message);
  return *c;
}

RunningDaemon::RunningDaemon(const Workspace& ws, DaemonOptions options) {
  auto d = Daemon::create(ws.config(), options);
  if (!d) throw std::runtime_error(d.error().message);
  daemon = std::move(*d);
  if (auto s = daemon->start(); !s) throw std::runtime_error(s.error().message);
  port = daemon->port();
}

RunningDaemon::~RunningDaemon() {
  if (daemon) daemon->shutdown();
}

std::uint64_t audit_records(const std::string& audit_path) {
  auto reader = audit::LogReader::open(audit_path);
  if (!reader) throw std::runtime_error(reader.error().message);
  auto size = reader->size();
  if (!size) throw std::runtime_error(size.error().message);
  return *size;
}

std::uint16_t free_port(std::uint16_t first) {
  for (int attempt = 0; attempt < 2000; ++attempt) {
    auto port = static_cast<std::uint16_t>(first + (::getpid() * 7 + attempt) % 10000);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return port;
  }
  ADD_FAILURE() << "no free port in " << first << "-" << first + 9999;
  return 0;
}


Collector::Collector() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 || ::listen(fd_, 16) != 0)
    throw std::runtime_error("Collector: cannot listen on loopback");
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { serve(); });
}

Collector::~Collector() {
  stop_ = true;
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
  thread_.join();
}

std::string Collector::next() {
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard lock(mu_);
      if (!bodies_.empty()) {
        std::string b = bodies_.front();
        bodies_.erase(bodies_.begin());
        return b;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

// One request per connection: the head, then Content-Length bytes of body.
void Collector::serve() {
  while (!stop_) {
    int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    std::string data;
    char buf[4096];
    std::size_t need = std::string::npos;
    for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;) {
      data.append(buf, static_cast<std::size_t>(n));
      const auto head = data.find("\r\n\r\n");
      if (head == std::string::npos) continue;
      if (need == std::string::npos) {
        const auto cl = data.find("Content-Length: ");
        need = head + 4 + (cl == std::string::npos ? 0 : std::stoul(data.substr(cl + 16)));
      }
      if (data.size() >= need) break;
    }
    if (const auto head = data.find("\r\n\r\n"); head != std::string::npos) {
      std::lock_guard lock(mu_);
      bodies_.push_back(data.substr(head + 4));
    }
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)!::write(c, ok.data(), ok.size());
    ::close(c);
  }
}

}  // namespace airlock::server::test
