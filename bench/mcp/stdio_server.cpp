#include "stdio_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "common/no_sigpipe.hpp"

extern char** environ;

namespace airlock::bench {

Result<std::unique_ptr<StdioServer>> StdioServer::spawn(const std::vector<std::string>& argv) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    return Error::make("spawn", "pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::unique_ptr<StdioServer> s(new StdioServer());
  const int rc = posix_spawn(&s->pid_, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  s->to_server_ = in[1];
  s->from_server_ = out[0];
  if (rc != 0) {
    s->pid_ = -1;
    return Error::make("spawn", "cannot start " + argv[0]);
  }
  return s;
}

StdioServer::~StdioServer() {
  if (to_server_ >= 0) ::close(to_server_);  // end of input: the server exits
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  if (from_server_ >= 0) ::close(from_server_);
}

Status StdioServer::send(const nlohmann::json& message) {
  const std::string text = message.dump() + "\n";
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = write_without_sigpipe(to_server_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::make("stdio", "the server's stdin is closed");
    done += static_cast<std::size_t>(n);
  }
  return {};
}

Result<std::string> StdioServer::line() {
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string out = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return out;
    }
    pollfd p{from_server_, POLLIN, 0};
    if (::poll(&p, 1, 10'000) <= 0)
      return Error::make("stdio", "no answer from the server within 10 s");
    char chunk[65536];
    const ssize_t n = ::read(from_server_, chunk, sizeof chunk);
    if (n <= 0) return Error::make("stdio", "the server closed its stdout");
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

Result<nlohmann::json> StdioServer::response(long id) {
  for (;;) {
    auto text = line();
    if (!text) return text.error();
    auto message = nlohmann::json::parse(*text, nullptr, false);
    if (message.is_object() && message.value("id", nlohmann::json()) == nlohmann::json(id))
      return message;
  }
}

Status StdioServer::initialize() {
  const long id = next_id_++;
  auto sent = send({{"jsonrpc", "2.0"},
                    {"id", id},
                    {"method", "initialize"},
                    {"params",
                     {{"protocolVersion", "2025-06-18"},
                      {"capabilities", nlohmann::json::object()},
                      {"clientInfo", {{"name", "airlock-bench"}, {"version", "1"}}}}}});
  if (!sent.ok()) return sent;
  auto answer = response(id);
  if (!answer) return answer.error();
  if (!answer->contains("result")) return Error::make("stdio", "initialize: " + answer->dump());
  return send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
}

Result<nlohmann::json> StdioServer::request(const std::string& method, const nlohmann::json& params) {
  const long id = next_id_++;
  auto sent = send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  if (!sent.ok()) return sent.error();
  return response(id);
}

Result<nlohmann::json> StdioServer::call_tool(const std::string& name,
                                              const nlohmann::json& arguments) {
  auto answer = request("tools/call", {{"name", name}, {"arguments", arguments}});
  if (!answer) return answer.error();
  const auto& result = answer->value("result", nlohmann::json());
  if (!result.is_object() || result.value("isError", false))
    return Error::make("stdio", "tools/call: " + answer->dump().substr(0, 300));
  return result;
}

}  // namespace airlock::bench
