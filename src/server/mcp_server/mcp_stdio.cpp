#include "server/mcp_server/mcp_stdio.hpp"

#include <condition_variable>
#include <iostream>
#include <mutex>

#include "pipeline/authenticator.hpp"

namespace airlock::server {
namespace {

// Lines out, whole and in order, from whichever thread answers.
class LineWriter {
 public:
  explicit LineWriter(std::ostream& out) : out_(out) {}
  void write(const nlohmann::json& message) {
    if (message.is_null()) return;  // a keep-alive: stdio needs none
    std::lock_guard lock(mu_);
    out_ << message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n' << std::flush;
  }

 private:
  std::mutex mu_;
  std::ostream& out_;
};

struct StdioSession {
  std::mutex mu;
  std::condition_variable answered;
  std::string id;       // the session initialize opened ("" before)
  int unanswered = 0;   // requests read whose answer is not written yet
};

}  // namespace

void run_mcp_stdio(McpServer& server, const std::string& api_key, const std::string& subject_token,
                   std::istream& in, std::ostream& out, std::chrono::milliseconds settle) {
  auto writer = std::make_shared<LineWriter>(out);
  auto session = std::make_shared<StdioSession>();
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto parsed = server.parse(line);
    if (auto* refused = std::get_if<McpReply>(&parsed)) {
      if (refused->message) writer->write(*refused->message);
      continue;
    }
    McpContext ctx;
    ctx.headers["authorization"] = "Bearer " + api_key;
    if (!subject_token.empty()) ctx.headers[pipeline::kSubjectTokenHeader] = subject_token;
    {
      std::lock_guard lock(session->mu);
      if (!session->id.empty()) ctx.headers["mcp-session-id"] = session->id;
    }
    ctx.http = false;
    ctx.channel = "stdio";
    const auto& message = std::get<nlohmann::json>(parsed);
    // JSON-RPC never answers a notification, not even to refuse it (HTTP has its status).
    const bool notification = message.is_object() && message.contains("method") && !message.contains("id");
    if (!notification) {
      std::lock_guard lock(session->mu);
      ++session->unanswered;
    }
    server.handle(
        ctx, message, [writer](const nlohmann::json& n) { writer->write(n); },
        [&server, writer, session, notification](McpReply reply) {
          if (!reply.session_id.empty()) {
            std::lock_guard lock(session->mu);
            session->id = reply.session_id;
            // The session hears notifications/tools/list_changed on this connection.
            server.listen_stdio(reply.session_id, [writer](const nlohmann::json& n) { writer->write(n); });
          }
          if (notification) return;
          if (reply.message) writer->write(*reply.message);
          std::lock_guard lock(session->mu);
          --session->unanswered;
          session->answered.notify_all();
        });
  }
  std::unique_lock lock(session->mu);
  session->answered.wait_for(lock, settle, [&] { return session->unanswered == 0; });
  lock.unlock();
  server.forget_stdio();
}

}  // namespace airlock::server
