// The gateway's stdio client against a scripted server over pipes (no sandbox): the MCP
// methods, and what a hostile server may send. Every malformed line ends the connection.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/no_sigpipe.hpp"
#include "common/unique_fd.hpp"
#include "mcp/stdio_client.hpp"

namespace airlock::mcp {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

// The server's end of the two pipes; `script` answers each message the client sends.
class ScriptedServer {
 public:
  using Script = std::function<void(const json& message, ScriptedServer& server)>;

  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    int to_server[2], from_server[2];
    EXPECT_EQ(::pipe2(to_server, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(from_server, O_CLOEXEC), 0);
    client_stdin_.reset(to_server[1]);
    in_.reset(to_server[0]);
    client_stdout_.reset(from_server[0]);
    out_.reset(from_server[1]);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedServer() {
    hang_up();
    thread_.join();
  }

  StdioClient connect(StdioClientOptions options = {}) {
    return StdioClient(std::move(client_stdin_), std::move(client_stdout_), std::move(options));
  }
  void write_raw(const std::string& text) {
    std::lock_guard lock(write_mu_);
    if (out_) (void)write_without_sigpipe(out_.get(), text.data(), text.size());
  }
  void send(const json& message) { write_raw(message.dump() + "\n"); }
  void hang_up() {
    std::lock_guard lock(write_mu_);
    out_.reset();
  }
  std::vector<json> received() {
    std::lock_guard lock(mu_);
    return received_;
  }

 private:
  void serve() {
    std::string buf;
    char chunk[4096];
    for (ssize_t n; (n = ::read(in_.get(), chunk, sizeof chunk)) > 0;) {
      buf.append(chunk, static_cast<std::size_t>(n));
      for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n')) {
        json m = json::parse(buf.substr(0, nl));
        buf.erase(0, nl + 1);
        {
          std::lock_guard lock(mu_);
          received_.push_back(m);
        }
        script_(m, *this);
      }
    }
  }

  Script script_;
  UniqueFd client_stdin_, client_stdout_, in_, out_;
  std::mutex write_mu_, mu_;
  std::vector<json> received_;
  std::thread thread_;
};

json answer(const json& request, json result) {
  return {{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", std::move(result)}};
}

// A well-behaved server: initialize with `version`, one tool, echo on tools/call.
ScriptedServer::Script polite(std::string version = "2025-11-25") {
  return [version](const json& m, ScriptedServer& s) {
    const std::string method = m.value("method", "");
    if (method == "initialize") s.send(answer(m, {{"protocolVersion", version}, {"capabilities", json::object()}}));
    if (method == "tools/list")
      s.send(answer(m, {{"tools", {{{"name", "echo"}, {"inputSchema", {{"type", "object"}}}}}}}));
    if (method == "tools/call")
      s.send(answer(m, {{"content", {{{"type", "text"}, {"text", m["params"]["arguments"].dump()}}}}}));
  };
}

ToolCallRequest echo_request(json args = {{"x", 1}}) {
  ToolCallRequest r;
  r.name = "echo";
  r.arguments = std::move(args);
  r.timeout = 30s;
  return r;
}

TEST(StdioClient, InitializesListsAndCalls) {
  ScriptedServer server(polite("2025-06-18"));
  auto client = server.connect();
  auto version = client.initialize(30s);
  ASSERT_TRUE(version) << version.error().message;
  EXPECT_EQ(*version, "2025-06-18");
  auto tools = client.list_tools(30s);
  ASSERT_TRUE(tools) << tools.error().message;
  ASSERT_EQ(tools->size(), 1u);
  auto r = client.call_tool(echo_request());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->content[0]["text"], R"({"x":1})");
  auto got = server.received();
  ASSERT_GE(got.size(), 2u);
  EXPECT_EQ(got[0]["params"]["protocolVersion"], kClientProtocolVersion);
  EXPECT_EQ(got[1]["method"], "notifications/initialized");
}

TEST(StdioClient, RefusesAnUnknownRevision) {
  ScriptedServer server(polite("2024-11-05"));
  auto client = server.connect();
  auto version = client.initialize(30s);
  ASSERT_FALSE(version);
  EXPECT_EQ(version.error().code, "tool_server_failed");
  EXPECT_NE(version.error().message.find("\"2024-11-05\""), std::string::npos);
}

ScriptedServer::Script three_pages() {
  return [](const json& m, ScriptedServer& s) {
    if (m.value("method", "") != "tools/list") return;
    const int page = m["params"].contains("cursor") ? std::stoi(m["params"]["cursor"].get<std::string>()) : 0;
    json tools = json::array();
    for (int i = 0; i < 3; ++i)
      tools.push_back({{"name", "t" + std::to_string(page * 3 + i)}, {"inputSchema", json::object()}});
    json result = {{"tools", tools}};
    if (page < 2) result["nextCursor"] = std::to_string(page + 1);
    s.send(answer(m, result));
  };
}

TEST(StdioClient, FollowsPagesAndCapsTools) {
  {
    ScriptedServer server(three_pages());
    auto client = server.connect();
    auto tools = client.list_tools(30s);
    ASSERT_TRUE(tools) << tools.error().message;
    ASSERT_EQ(tools->size(), 9u);
    EXPECT_EQ((*tools)[8].name, "t8");
  }
  ScriptedServer server(three_pages());
  StdioClientOptions o;
  o.max_tools = 8;
  auto client = server.connect(o);
  auto tools = client.list_tools(30s);
  ASSERT_FALSE(tools);
  EXPECT_NE(tools.error().message.find("more than 8 tools"), std::string::npos);
}

TEST(StdioClient, AnswersPingAndRefusesWhatItDoesNotRelay) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<json> seen;
  ScriptedServer server([&](const json& m, ScriptedServer& s) {
    if (m.value("method", "") == "tools/call") {
      s.send({{"jsonrpc", "2.0"}, {"id", "p1"}, {"method", "ping"}});
      s.send({{"jsonrpc", "2.0"}, {"id", 77}, {"method", "sampling/createMessage"}, {"params", json::object()}});
      return;
    }
    if (!m.contains("method")) {
      std::lock_guard lock(mu);
      seen.push_back(m);
      if (seen.size() == 2) {
        s.send(answer({{"id", 1}}, {{"content", json::array()}}));
      }
    }
  });
  auto client = server.connect();
  auto r = client.call_tool(echo_request());
  ASSERT_TRUE(r) << r.error().message;
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0]["id"], "p1");
  EXPECT_EQ(seen[0]["result"], json::object());
  EXPECT_EQ(seen[1]["id"], 77);
  EXPECT_EQ(seen[1]["error"]["code"], -32601);
}

TEST(StdioClient, IgnoresAnswersToUnknownIds) {
  ScriptedServer server([](const json& m, ScriptedServer& s) {
    if (m.value("method", "") != "tools/call") return;
    s.send({{"jsonrpc", "2.0"}, {"id", 9999}, {"result", {{"content", "nonsense"}}}});
    s.send(answer(m, {{"content", json::array({{{"type", "text"}, {"text", "right"}}})}}));
  });
  auto client = server.connect();
  auto r = client.call_tool(echo_request());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->content[0]["text"], "right");
}

TEST(StdioClient, ForwardsProgress) {
  ScriptedServer server([](const json& m, ScriptedServer& s) {
    if (m.value("method", "") != "tools/call") return;
    const json token = m["params"]["_meta"]["progressToken"];
    s.send({{"jsonrpc", "2.0"}, {"method", "notifications/progress"},
            {"params", {{"progressToken", token}, {"progress", 1}, {"total", 2}, {"message", "half"}}}});
    s.send({{"jsonrpc", "2.0"}, {"method", "notifications/progress"},
            {"params", {{"progressToken", "someone-else"}, {"progress", 5}}}});
    s.send(answer(m, {{"content", json::array()}}));
  });
  auto client = server.connect();
  std::vector<pipeline::Progress> seen;
  auto request = echo_request();
  request.progress = [&](const pipeline::Progress& p) { seen.push_back(p); };
  auto r = client.call_tool(request);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].progress, 1);
  EXPECT_EQ(seen[0].total, 2);
  EXPECT_EQ(seen[0].message, "half");
}

TEST(StdioClient, CancelAndTimeoutTellTheServer) {
  ScriptedServer server([](const json&, ScriptedServer&) {});  // never answers
  auto client = server.connect();
  CancelSignal cancel;
  auto request = echo_request();
  request.cancel = &cancel;
  std::thread canceller([&] { cancel.cancel(); });
  auto r = client.call_tool(request);
  canceller.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "cancelled");

  auto slow = echo_request();
  slow.timeout = 100ms;
  auto t = client.call_tool(slow);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, "timeout");
  // Both gave up and said so: notifications/cancelled for each id.
  ASSERT_TRUE([&] {
    for (int i = 0; i < 600; ++i) {
      int cancelled = 0;
      for (const auto& m : server.received()) cancelled += m.value("method", "") == "notifications/cancelled";
      if (cancelled == 2) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }());
}

// Each of these ends the connection: the call fails, on_closed says why.
void expect_protocol_error(const std::string& line, const std::string& why) {
  ScriptedServer server([line](const json& m, ScriptedServer& s) {
    if (m.value("method", "") == "tools/call") s.write_raw(line);
  });
  std::mutex mu;
  std::string closed;
  StdioClientOptions o;
  o.max_line_bytes = 4096;
  o.on_closed = [&](const Error& e, bool) {
    std::lock_guard lock(mu);
    closed = e.message;
  };
  auto client = server.connect(o);
  auto r = client.call_tool(echo_request());
  ASSERT_FALSE(r) << line.substr(0, 80);
  EXPECT_EQ(r.error().code, "tool_server_failed");
  EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
  EXPECT_TRUE(client.closed());
  EXPECT_FALSE(client.server_hung_up());
  auto again = client.call_tool(echo_request());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "tool_server_failed");
}

TEST(StdioClient, HostileLinesEndTheConnection) {
  expect_protocol_error(std::string(5000, 'x') + "\n", "longer than 4096 bytes");
  expect_protocol_error(std::string(5000, 'x'), "longer than 4096 bytes");  // no newline ever
  expect_protocol_error("{not json\n", "not acceptable JSON");
  expect_protocol_error(std::string(200, '[') + std::string(200, ']') + "\n", "not acceptable JSON");
  expect_protocol_error("{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":{}}\n", "not a JSON-RPC message");
  expect_protocol_error("[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]\n", "not a JSON-RPC message");
}

TEST(StdioClient, AHangUpFailsWhatIsPending) {
  ScriptedServer server([](const json& m, ScriptedServer& s) {
    if (m.value("method", "") == "tools/call") s.hang_up();
  });
  auto client = server.connect();
  auto r = client.call_tool(echo_request());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "tool_server_failed");
  EXPECT_NE(r.error().message.find("closed its stdout"), std::string::npos);
  EXPECT_TRUE(client.server_hung_up());
}

TEST(StdioClient, AnErrorAnswerIsTheServersRefusal) {
  ScriptedServer server([](const json& m, ScriptedServer& s) {
    if (m.value("method", "") == "tools/call")
      s.send({{"jsonrpc", "2.0"}, {"id", m["id"]}, {"error", {{"code", -32602}, {"message", "bad x"}}}});
  });
  auto client = server.connect();
  auto r = client.call_tool(echo_request());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->is_error);
  EXPECT_NE(r->content[0]["text"].get<std::string>().find("bad x"), std::string::npos);
}

}  // namespace
}  // namespace airlock::mcp
