// The shared egress gateway (egress/gateway.hpp), as the kubernetes backend's pods use it: a
// listener on the host, real clients (curl, raw sockets) that name their invocation with
// proxy credentials, servers on loopback. Each test is an attack that must fail: no
// credentials, a wrong password, another invocation's rules, credentials after the call.
#include "egress/gateway.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "egress_fixtures.hpp"

namespace airlock::egress {
namespace {

using fixtures::LoopbackServer;

// An upstream that answers every request with "hello from upstream" and keeps the request head.
class Upstream {
 public:
  Upstream()
      : server_([this](int fd) {
          auto head = fixtures::read_head(fd);
          {
            std::lock_guard lock(mu_);
            heads_.push_back(head);
          }
          fixtures::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 19\r\nConnection: close\r\n\r\nhello from upstream");
        }) {}
  std::uint16_t port() const { return server_.port(); }
  int connections() const { return server_.connections(); }
  std::vector<std::string> heads() {
    std::lock_guard lock(mu_);
    return heads_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> heads_;
  LoopbackServer server_;
};

EgressPolicy policy_allowing(const std::vector<std::string>& rules,
                             std::map<std::string, std::string> resolve = {}) {
  EgressRules r;
  for (const auto& text : rules) r.allow.push_back(*parse_allow_rule(text));
  r.resolve = std::move(resolve);
  return *EgressPolicy::compile(r);
}

int connect_to(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

// One plain request through the gateway, as written; the whole answer.
std::string through(std::uint16_t gateway, const std::string& request) {
  int fd = connect_to(gateway);
  if (fd < 0) return "connect failed";
  fixtures::send_all(fd, request);
  auto answer = read_all(fd);
  ::close(fd);
  return answer;
}

std::string basic(const std::string& user, const std::string& password) {
  std::string in = user + ":" + password, out;
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return "Basic " + out;
}

std::string get(std::uint16_t upstream, const std::string& host = "127.0.0.1",
                const std::string& authorization = "") {
  std::string target = "http://" + host + ":" + std::to_string(upstream) + "/x";
  return "GET " + target + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(upstream) +
         "\r\n" + (authorization.empty() ? "" : "Proxy-Authorization: " + authorization + "\r\n") +
         "\r\n";
}

// Runs a shell command, its stdout.
std::string shell(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ::pclose(p);
  return out;
}

class Gateway : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(gateway.listen("127.0.0.1", 0).ok());
    gateway.start();
    port = gateway.port();
    ASSERT_NE(port, 0);
  }
  std::unique_ptr<EgressGateway::Admission> admit(const std::string& name, EgressPolicy p) {
    auto admitted = gateway.admit(std::move(p), "the egress rules of tool " + name, name);
    EXPECT_TRUE(admitted.ok()) << admitted.error().message;
    return std::move(*admitted);
  }
  EgressGateway gateway;
  std::uint16_t port = 0;
  Upstream upstream;
};

TEST_F(Gateway, WithoutCredentialsNothingIsDecidedAndTheAnswerIs407) {
  auto a = admit("inv-a", policy_allowing({"127.0.0.1:" + std::to_string(upstream.port())}));
  auto answer = through(port, get(upstream.port()));
  EXPECT_NE(answer.find("HTTP/1.1 407"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Proxy-Authenticate: Basic"), std::string::npos) << answer;
  EXPECT_EQ(upstream.connections(), 0);
}

TEST_F(Gateway, AnInvocationReachesWhatItsRulesAllowAndTheTokenIsNotPassedOn) {
  auto a = admit("inv-a", policy_allowing({"127.0.0.1:" + std::to_string(upstream.port())}));
  auto answer = through(port, get(upstream.port(), "127.0.0.1", basic(a->username(), a->password())));
  EXPECT_NE(answer.find("hello from upstream"), std::string::npos) << answer;
  ASSERT_EQ(upstream.heads().size(), 1u);
  EXPECT_EQ(upstream.heads()[0].find(a->password()), std::string::npos) << upstream.heads()[0];
  EXPECT_EQ(upstream.heads()[0].find("Proxy-Authorization"), std::string::npos);
  auto records = a->close();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].allowed);
  EXPECT_EQ(records[0].port, upstream.port());
}

TEST_F(Gateway, AnotherInvocationsRulesDoNotApply) {
  auto a = admit("inv-a", policy_allowing({"127.0.0.1:" + std::to_string(upstream.port())}));
  auto b = admit("inv-b", policy_allowing({"127.0.0.1:1"}));
  auto answer = through(port, get(upstream.port(), "127.0.0.1", basic(b->username(), b->password())));
  EXPECT_NE(answer.find("HTTP/1.1 403"), std::string::npos) << answer;
  EXPECT_NE(answer.find("the egress rules of tool inv-b"), std::string::npos) << answer;
  EXPECT_EQ(upstream.connections(), 0);
  // B's name with A's password, A's name with B's: neither is anybody's.
  for (const auto& wrong : {basic(b->username(), a->password()), basic(a->username(), b->password()),
                            basic(a->username(), ""), std::string("Bearer ") + a->password()}) {
    answer = through(port, get(upstream.port(), "127.0.0.1", wrong));
    EXPECT_NE(answer.find("HTTP/1.1 407"), std::string::npos) << wrong << ": " << answer;
  }
  EXPECT_EQ(upstream.connections(), 0);
  EXPECT_EQ(b->close().size(), 1u);
  EXPECT_TRUE(a->close().empty());
}

TEST_F(Gateway, HostNameRulesAreDecidedPerInvocation) {
  const std::string name = "api.example.test";
  auto a = admit("inv-a", policy_allowing({name + ":" + std::to_string(upstream.port())},
                                          {{name, "127.0.0.1"}}));
  auto b = admit("inv-b", policy_allowing({"other.example.test:" + std::to_string(upstream.port())},
                                          {{"other.example.test", "127.0.0.1"}}));
  auto ok = through(port, get(upstream.port(), name, basic(a->username(), a->password())));
  EXPECT_NE(ok.find("hello from upstream"), std::string::npos) << ok;
  auto denied = through(port, get(upstream.port(), name, basic(b->username(), b->password())));
  EXPECT_NE(denied.find("HTTP/1.1 403"), std::string::npos) << denied;
  EXPECT_EQ(upstream.connections(), 1);
}

TEST_F(Gateway, CredentialsEndWithTheCallAndSoDoItsOpenTunnels) {
  auto a = admit("inv-a", policy_allowing({"127.0.0.1:" + std::to_string(upstream.port())}));
  int tunnel = connect_to(port);
  ASSERT_GE(tunnel, 0);
  const std::string target = "127.0.0.1:" + std::to_string(upstream.port());
  fixtures::send_all(tunnel, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target +
                                 "\r\nProxy-Authorization: " + basic(a->username(), a->password()) +
                                 "\r\n\r\n");
  EXPECT_NE(fixtures::read_head(tunnel).find(" 200 "), std::string::npos);
  const std::string user = a->username(), password = a->password();
  auto records = a->close();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(records[0].rule.find("revoked"), std::string::npos) << records[0].rule;
  char c;
  EXPECT_LE(::recv(tunnel, &c, 1, 0), 0) << "the tunnel outlived the call";
  ::close(tunnel);
  auto after = through(port, get(upstream.port(), "127.0.0.1", basic(user, password)));
  EXPECT_NE(after.find("HTTP/1.1 407"), std::string::npos) << after;
}

TEST_F(Gateway, RealClientsHttpAndSocks5WithCredentialsAndWithout) {
  auto a = admit("inv-a", policy_allowing({"127.0.0.1:" + std::to_string(upstream.port())}));
  const std::string url = "http://127.0.0.1:" + std::to_string(upstream.port()) + "/";
  const std::string at = "@127.0.0.1:" + std::to_string(port);
  const std::string creds = a->username() + ":" + a->password();
  for (const std::string scheme : {"http", "socks5h"}) {
    auto with = shell("curl -sS --max-time 10 -x '" + scheme + "://" + creds + at + "' " + url + " 2>&1");
    EXPECT_EQ(with, "hello from upstream") << scheme;
    auto without = shell("curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -x '" + scheme +
                         "://127.0.0.1:" + std::to_string(port) + "' " + url + " 2>/dev/null");
    EXPECT_NE(without, "200") << scheme;
    auto wrong = shell("curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -x '" + scheme + "://" +
                       a->username() + ":wrong" + at + "' " + url + " 2>/dev/null");
    EXPECT_NE(wrong, "200") << scheme;
  }
  EXPECT_EQ(upstream.connections(), 2);
}

TEST_F(Gateway, OneNameIsAdmittedOnceAndNamesCannotHoldAColon) {
  auto a = admit("inv-a", policy_allowing({}));
  EXPECT_FALSE(gateway.admit(policy_allowing({}), "x", "inv-a").ok());
  EXPECT_FALSE(gateway.admit(policy_allowing({}), "x", "inv:a").ok());
  EXPECT_FALSE(gateway.admit(policy_allowing({}), "x", "").ok());
  a->close();
  EXPECT_TRUE(gateway.admit(policy_allowing({}), "x", "inv-a").ok()) << "closed: the name is free";
}

}  // namespace
}  // namespace airlock::egress
