// The MCP server without sockets: cancellation, progress on an event stream, stdio.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <sstream>

#include "mcp_test_support.hpp"
#include "server/mcp_server/mcp_server.hpp"
#include "server/mcp_server/mcp_stdio.hpp"

namespace airlock::server::test {
namespace {

McpContext stdio_context(const std::string& session = "") {
  McpContext ctx;
  ctx.headers["authorization"] = std::string("Bearer ") + kKey;
  if (!session.empty()) ctx.headers["mcp-session-id"] = session;
  ctx.http = false;
  ctx.channel = "test";
  return ctx;
}

// Handles one message and waits for its answer.
McpReply handle(McpServer& server, const McpContext& ctx, const nlohmann::json& message) {
  std::promise<McpReply> answered;
  server.handle(ctx, message, [](const nlohmann::json&) {}, [&](McpReply r) { answered.set_value(std::move(r)); });
  return answered.get_future().get();
}

class McpEngineTest : public ::testing::Test {
 protected:
  Workspace ws;
  RunningDaemon d{ws};
  McpServer& server() { return d.daemon->api().mcp(); }
  std::string initialize() {
    return handle(server(), stdio_context(), rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}})).session_id;
  }
};

TEST_F(McpEngineTest, CancelledNotificationStopsTheRunningTool) {
  const auto session = initialize();
  ASSERT_FALSE(session.empty());
  std::promise<McpReply> answered;
  std::promise<void> started;
  bool started_once = false;
  auto call = rpc(7, "tools/call", {{"name", "slow"}, {"arguments", {{"seconds", 25}}}, {"_meta", {{"progressToken", "p"}}}});
  server().handle(stdio_context(session), call,
                  [&](const nlohmann::json& n) {
                    if (n["params"].value("message", "") == "execute" && !started_once) {
                      started_once = true;
                      started.set_value();
                    }
                  },
                  [&](McpReply r) { answered.set_value(std::move(r)); });
  started.get_future().wait();  // the sandbox is being started: cancel it now
  nlohmann::json cancel = {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 7}}}};
  EXPECT_EQ(handle(server(), stdio_context(session), cancel).http_status, 202);
  auto reply = answered.get_future().get();
  ASSERT_TRUE(reply.message);
  const auto& result = (*reply.message)["result"];
  EXPECT_EQ(result["isError"], true) << reply.message->dump();
  EXPECT_EQ(result["structuredContent"]["error"]["kind"], "cancelled");
  // The execute stage stopped the sandbox (a tool left to finish its sleep would be refused
  // later, "before <the next stage>", with another message).
  EXPECT_EQ(result["structuredContent"]["error"]["message"], "the client cancelled the call; its sandbox was stopped");
}

// A BodyWriter that keeps what it is given.
class CollectingWriter : public BodyWriter {
 public:
  bool write(std::string bytes) override {
    std::lock_guard lock(mu_);
    body_ += bytes;
    return true;
  }
  void finish() override {
    std::lock_guard lock(mu_);
    finished_ = true;
    done_.notify_all();
  }
  void on_client_gone(std::function<void()>) override {}
  void abort() override {}
  std::string wait() {
    std::unique_lock lock(mu_);
    done_.wait(lock, [this] { return finished_; });
    return body_;
  }

 private:
  std::mutex mu_;
  std::condition_variable done_;
  std::string body_;
  bool finished_ = false;
};

TEST_F(McpEngineTest, ProgressIsStreamedBeforeTheResult) {
  auto call = rpc(9, "tools/call", {{"name", "echo"}, {"arguments", {{"n", 2}}}, {"_meta", {{"progressToken", "tok"}} }});
  call["params"]["_meta"].update(stateless_meta());
  HttpRequest request{"POST", "/mcp",
                      {{"authorization", std::string("Bearer ") + kKey},
                       {"accept", "application/json, text/event-stream"},
                       {"content-type", "application/json"},
                       {"mcp-protocol-version", "2026-07-28"},
                       {"mcp-method", "tools/call"},
                       {"mcp-name", "echo"}},
                      call.dump(), nullptr, "127.0.0.1", std::nullopt};
  std::promise<HttpResponse> answered;
  d.daemon->api().handle(request, [&](HttpResponse r) { answered.set_value(std::move(r)); });
  auto response = answered.get_future().get();
  ASSERT_TRUE(static_cast<bool>(response.stream)) << response.status << " " << response.body;
  EXPECT_EQ(response.content_type, "text/event-stream");
  auto writer = std::make_shared<CollectingWriter>();
  response.stream(writer);
  const std::string body = writer->wait();
  const auto progress = body.find("notifications/progress");
  const auto result = body.find("\"result\"");
  ASSERT_NE(progress, std::string::npos) << body;
  ASSERT_NE(result, std::string::npos) << body;
  EXPECT_LT(progress, result);
  EXPECT_NE(body.find("\"progressToken\":\"tok\""), std::string::npos);
}

TEST_F(McpEngineTest, StdioAnswersLineByLine) {
  std::stringstream in, out;
  in << rpc(1, "initialize", {{"protocolVersion", "2025-06-18"}}).dump() << "\n"
     << R"({"jsonrpc":"2.0","method":"notifications/initialized"})" << "\n"
     << "not json\n"
     << std::string(70 * 1024, ' ') + "{}" << "\n"  // over server.maxBodyBytes (64Ki)
     << R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}})" << "\n"
     << rpc(2, "tools/call", {{"name", "echo"}, {"arguments", {{"n", 3}}}}).dump() << "\n";
  run_mcp_stdio(server(), kKey, "", in, out);
  d.daemon->shutdown();  // lets the call finish and answer
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(out, line);) lines.push_back(nlohmann::json::parse(line));
  // Notifications get no line; the oversized message is refused by name.
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_EQ(lines[0]["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(lines[1]["error"]["code"], -32700);
  EXPECT_NE(lines[2]["error"]["message"].get<std::string>().find("server.maxBodyBytes"), std::string::npos);
  EXPECT_EQ(lines[3]["result"]["structuredContent"]["echo"]["n"], 3);
}

TEST_F(McpEngineTest, StdioWithAWrongKeyIsRefused) {
  std::stringstream in, out;
  in << rpc(1, "initialize", {{"protocolVersion", "2025-06-18"}}).dump() << "\n";
  run_mcp_stdio(server(), "not-a-key", "", in, out);
  auto answer = nlohmann::json::parse(out.str());
  EXPECT_NE(answer["error"]["message"].get<std::string>().find("unauthenticated"), std::string::npos);
}

// --subject-token reaches the authenticator as Airlock-Subject-Token does over HTTP: one it
// cannot verify refuses the right key's messages.
TEST_F(McpEngineTest, StdioSendsTheSubjectTokenWithEveryMessage) {
  std::stringstream in, out;
  in << rpc(1, "initialize", {{"protocolVersion", "2025-06-18"}}).dump() << "\n";
  run_mcp_stdio(server(), kKey, "not-a-token", in, out);
  auto answer = nlohmann::json::parse(out.str());
  EXPECT_NE(answer["error"]["message"].get<std::string>().find("Airlock-Subject-Token is not valid"), std::string::npos)
      << answer.dump();
}

}  // namespace
}  // namespace airlock::server::test
