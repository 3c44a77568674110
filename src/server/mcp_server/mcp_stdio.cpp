#include "server/mcp_server/mcp_stdio.hpp"

#include <signal.h>

#include <chrono>
#include <iostream>
#include <mutex>

#include "server/daemon/daemon.hpp"

namespace airlock::server {
namespace {

// Lines out, whole and in order, from whichever thread answers.
class LineWriter {
 public:
  explicit LineWriter(std::ostream& out) : out_(out) {}
  void write(const nlohmann::json& message) {
    std::lock_guard lock(mu_);
    out_ << message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n' << std::flush;
  }

 private:
  std::mutex mu_;
  std::ostream& out_;
};

// At most this long before the first request is read (a server's start and listing are each
// bounded by its own timeouts; this bounds them all).
constexpr std::chrono::seconds kFirstListingWait{60};

struct StdioSession {
  std::mutex mu;
  std::string id;  // the session initialize opened ("" before)
};

}  // namespace

void run_mcp_stdio(McpServer& server, const std::string& api_key, std::istream& in, std::ostream& out) {
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
    {
      std::lock_guard lock(session->mu);
      if (!session->id.empty()) ctx.headers["mcp-session-id"] = session->id;
    }
    ctx.http = false;
    ctx.channel = "stdio";
    const auto& message = std::get<nlohmann::json>(parsed);
    // JSON-RPC never answers a notification, not even to refuse it (HTTP has its status).
    const bool notification = message.is_object() && message.contains("method") && !message.contains("id");
    server.handle(
        ctx, message, [writer](const nlohmann::json& n) { writer->write(n); },
        [writer, session, notification](McpReply reply) {
          if (!reply.session_id.empty()) {
            std::lock_guard lock(session->mu);
            session->id = reply.session_id;
          }
          if (reply.message && !notification) writer->write(*reply.message);
        });
  }
}

int serve_mcp_stdio(const std::string& config_path, const std::string& api_key) {
  signal(SIGPIPE, SIG_IGN);
  auto config = policy::load_config(config_path);
  if (!config) {
    std::cerr << "airlock mcp: " << config.error().message << "\n";
    return 2;
  }
  auto daemon = Daemon::create(std::move(*config));
  if (!daemon) {
    std::cerr << "airlock mcp: " << daemon.error().message << "\n";
    return 1;
  }
  // The same services as `airlock serve`; the first request is read once every MCP server
  // has been listed (or has failed, or its start timeout passed), so that the client's first
  // tools/list has their tools.
  (*daemon)->start_services();
  if (!(*daemon)->wait_for_first_listings(kFirstListingWait))
    std::cerr << "airlock mcp: some MCP servers were not listed after "
              << std::chrono::duration_cast<std::chrono::seconds>(kFirstListingWait).count()
              << " s; serving without their tools until they are\n";
  std::cerr << "airlock mcp: serving MCP on stdin and stdout\n" << std::flush;
  run_mcp_stdio((*daemon)->api().mcp(), api_key, std::cin, std::cout);
  (*daemon)->shutdown();  // running calls finish (server.drainTimeout) and answer first
  std::cout << std::flush;
  return 0;
}

}  // namespace airlock::server
