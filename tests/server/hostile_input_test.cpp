// Hostile input never takes the daemon down (issue #13): each attack is run against
// `airlock serve` as a separate process, so that a crash fails the test instead of the runner.
// 100,000 levels of nesting in a request or in a tool's output, a 100,000-character string
// against a schema pattern, and tool schemas that are not schemas at all.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `airlock serve` in its own process; stops it (SIGTERM) when it goes.
class Served {
 public:
  Served(const Workspace& ws, std::uint16_t port) : port_(port), log_(ws.dir() + "/daemon.log") {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 2);
      std::string listen = "127.0.0.1:" + std::to_string(port);
      ::execl(AIRLOCK_BINARY, "airlock", "serve", "--config", ws.config_path().c_str(),
              "--listen", listen.c_str(), nullptr);
      ::_exit(127);
    }
  }
  ~Served() {
    if (!exited_) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool healthy() const {
    for (int i = 0; i < 500 && alive(); ++i) {
      if (http(port_, "GET", "/healthz", "", "").status == 200) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  bool alive() const {
    if (exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == 0) return true;
    exited_ = true;
    status_ = status;
    return false;
  }
  // How it ended, if it has (it should not have).
  std::string ending() const {
    if (alive()) return "running";
    if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_));
    return "exited " + std::to_string(WEXITSTATUS(status_)) + ": " + read_file(log_);
  }
  std::uint16_t port() const { return port_; }

 private:
  std::uint16_t port_;
  std::string log_;
  pid_t pid_ = -1;
  mutable bool exited_ = false;
  mutable int status_ = 0;
};

const char* kServer = "server: {listen: 127.0.0.1:0, maxBodyBytes: 1Mi, drainTimeout: 5s}";

const char* kHostileTools = R"y(  - name: text-only
    runtime: {type: python, file: tools/echo.py}
    inputSchema:
      type: object
      properties:
        text: {type: string, pattern: '^[A-Za-z ]*$'}
        as: {type: string, pattern: '^(a+)+$'}
        day: {type: string, format: date}
    limits: {output: 1Mi}
  - name: deep-output
    runtime:
      type: command
      command: [python3, -c, "print('{\"a\":' + '[' * 100000 + ']' * 100000 + '}')"]
    limits: {output: 1Mi}
)y";

std::string nested_arrays(std::size_t levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

TEST(HostileInput, HundredThousandLevelsOfNestingAreRefusedNamingTheLimit) {
  Workspace ws(kServer, kHostileTools);
  Served d(ws, free_port(10000));
  ASSERT_TRUE(d.healthy()) << d.ending();
  std::string body = R"({"arguments": {"a": )" + nested_arrays(100000) + "}}";
  auto r = http(d.port(), "POST", "/v1/tools/echo/invoke", body);
  EXPECT_EQ(r.status, 400) << r.body.substr(0, 300);
  auto j = r.json();
  EXPECT_EQ(j["error"]["kind"], "invalid_input") << r.body.substr(0, 300);
  EXPECT_NE(j["error"]["message"].dump().find("64"), std::string::npos) << r.body.substr(0, 300);
  EXPECT_TRUE(d.alive()) << d.ending();
  EXPECT_EQ(http(d.port(), "GET", "/healthz", "", "").status, 200);
  // Just under the limit is still an ordinary call.
  std::string fine = R"({"arguments": {"a": )" + nested_arrays(60) + "}}";
  EXPECT_EQ(http(d.port(), "POST", "/v1/tools/echo/invoke", fine).status, 200);
}

TEST(HostileInput, HundredThousandCharactersAgainstAPatternAreAnswered) {
  Workspace ws(kServer, kHostileTools);
  Served d(ws, free_port(10000));
  ASSERT_TRUE(d.healthy()) << d.ending();
  std::string letters(100000, 'a');
  auto ok = invoke(d.port(), "text-only", {{"text", letters}});
  EXPECT_EQ(ok.status, 200) << ok.body.substr(0, 300);
  EXPECT_EQ(ok.json()["status"], "ok") << ok.body.substr(0, 300);
  auto bad = invoke(d.port(), "text-only", {{"text", letters + "1"}});
  EXPECT_EQ(bad.status, 400) << bad.body.substr(0, 300);
  EXPECT_EQ(bad.json()["error"]["kind"], "invalid_input");
  EXPECT_EQ(bad.json()["error"]["pointer"], "/arguments/text") << bad.body.substr(0, 300);
  // Catastrophic backtracking elsewhere; linear in RE2.
  EXPECT_EQ(invoke(d.port(), "text-only", {{"as", letters}}).status, 200);
  EXPECT_EQ(invoke(d.port(), "text-only", {{"as", letters + "!"}}).status, 400);
  // valijson checks `format: date` with std::regex too, which overflows the stack on this.
  std::string year(100000, '1');
  EXPECT_EQ(invoke(d.port(), "text-only", {{"day", year + "-01-01"}}).status, 200);
  EXPECT_EQ(invoke(d.port(), "text-only", {{"day", year + "-13-01"}}).status, 400);
  EXPECT_TRUE(d.alive()) << d.ending();
  EXPECT_EQ(http(d.port(), "GET", "/healthz", "", "").status, 200);
}

TEST(HostileInput, HundredThousandLevelsOfToolOutputAreATypedError) {
  Workspace ws(kServer, kHostileTools);
  Served d(ws, free_port(10000));
  ASSERT_TRUE(d.healthy()) << d.ending();
  auto r = invoke(d.port(), "deep-output", nlohmann::json::object());
  EXPECT_EQ(r.status, 200) << r.body.substr(0, 300);
  auto j = r.json();
  EXPECT_EQ(j["status"], "error") << r.body.substr(0, 300);
  EXPECT_EQ(j["error"]["kind"], "invalid_output") << r.body.substr(0, 300);
  EXPECT_NE(j["error"]["message"].dump().find("64"), std::string::npos) << r.body.substr(0, 300);
  EXPECT_TRUE(d.alive()) << d.ending();
  EXPECT_EQ(http(d.port(), "GET", "/healthz", "", "").status, 200);
}

// A bad schema: the daemon does not start, and says where (file:line:column), and why.
struct BadSchema {
  const char* name;
  const char* line;    // the tool's last line: `inputSchema:` or `outputSchema:` comes before
  const char* needle;  // the offending value in that line
  const char* why;     // part of the message
};

class BadSchemas : public ::testing::TestWithParam<BadSchema> {};

TEST_P(BadSchemas, AreRefusedAtLoadWithFileLineColumn) {
  const auto& p = GetParam();
  std::string tool = std::string("  - name: bad\n") +
                     "    runtime: {type: python, file: tools/echo.py}\n" +
                     "    inputSchema:\n      " + p.line + "\n";
  Workspace ws(kServer, tool);
  std::string text = read_file(ws.config_path());
  auto at = text.find(std::string("      ") + p.line);
  ASSERT_NE(at, std::string::npos);
  auto line = std::count(text.begin(), text.begin() + static_cast<long>(at), '\n') + 1;
  auto column = std::string("      ").size() + std::string(p.line).find(p.needle) + 1;
  std::string where =
      ws.config_path() + ":" + std::to_string(line) + ":" + std::to_string(column) + ":";

  Served d(ws, free_port(10000));
  for (int i = 0; i < 500 && d.alive(); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_FALSE(d.alive()) << "airlock serve accepted the schema `" << p.line << "`";
  std::string ending = d.ending();
  EXPECT_EQ(ending.rfind("exited ", 0), 0u) << ending;  // not killed by SIGABRT or SIGSEGV
  EXPECT_NE(ending.find(where), std::string::npos) << "expected " << where << " in: " << ending;
  EXPECT_NE(ending.find(p.why), std::string::npos) << ending;
}

INSTANTIATE_TEST_SUITE_P(
    Hostile, BadSchemas,
    ::testing::Values(
        BadSchema{"properties_not_an_object", "properties: 5", "5", "type"},
        BadSchema{"unknown_type", "type: objekt", "objekt", "enum"},
        BadSchema{"required_not_a_list", "required: url", "url", "type"},
        BadSchema{"dangling_ref", "$ref: '#/definitions/nowhere'", "'#", "does not resolve"},
        BadSchema{"negative_min_length", "properties: {n: {minLength: -1}}", "-1", "greater"},
        BadSchema{"lookahead", "properties: {n: {pattern: '^(?=a)b'}}", "'^", "RE2"},
        BadSchema{"backreference", "properties: {n: {pattern: '^(a)\\1$'}}", "'^", "RE2"},
        BadSchema{"unclosed_group", "properties: {n: {pattern: '(ab'}}", "'(", "RE2"},
        BadSchema{"ref_loop", "allOf: [{$ref: '#'}]", "allOf", "loop"}),
    [](const auto& test) { return std::string(test.param.name); });

}  // namespace
}  // namespace airlock::server::test
