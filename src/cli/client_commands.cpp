// airlock call TOOL --input JSON and airlock tools list: a client of the daemon's HTTP API.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "common/result.hpp"

namespace airlock::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct ClientOptions {
  std::string server = "http://127.0.0.1:8750";
  std::string key;
};

struct Reply {
  int status = 0;
  std::string body;
};

// One request to the daemon. Errors (unreachable, bad URL) come back as an Error.
Result<Reply> request(const ClientOptions& o, http::verb verb, const std::string& path, const std::string& body) {
  const std::string prefix = "http://";
  if (o.server.rfind(prefix, 0) != 0) return Error::make("usage", "--server must be http://HOST:PORT");
  std::string authority = o.server.substr(prefix.size());
  authority = authority.substr(0, authority.find('/'));
  auto colon = authority.rfind(':');
  std::string host = colon == std::string::npos ? authority : authority.substr(0, colon);
  std::string port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  try {
    asio::io_context io;
    asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.connect(resolver.resolve(host, port));
    http::request<http::string_body> req{verb, path, 11};
    req.set(http::field::host, authority);
    req.set(http::field::user_agent, "airlock-cli");
    if (!o.key.empty()) req.set(http::field::authorization, "Bearer " + o.key);
    if (verb == http::verb::post) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
      req.prepare_payload();
    }
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024);
    http::read(stream, buffer, parser);
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    return Reply{static_cast<int>(parser.get().result_int()), parser.get().body()};
  } catch (const boost::system::system_error& e) {
    return Error::make("connection", "cannot reach " + o.server + ": " + e.code().message());
  } catch (const std::exception& e) {
    return Error::make("connection", "cannot reach " + o.server + ": " + e.what());
  }
}

void add_client_options(CLI::App* cmd, ClientOptions& o) {
  cmd->add_option("--server", o.server, "The daemon's URL (default http://127.0.0.1:8750)");
  cmd->add_option("--key", o.key, "API key (default: $AIRLOCK_API_KEY)");
}

void key_from_environment(ClientOptions& o) {
  if (o.key.empty())
    if (const char* k = std::getenv("AIRLOCK_API_KEY")) o.key = k;
}

}  // namespace

void add_client_commands(CLI::App& app, ExitStatus& status) {
  auto call_opts = std::make_shared<ClientOptions>();
  auto tool = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>("{}");
  auto* call = app.add_subcommand(kCallCommand.name, kCallCommand.summary);
  call->add_option("tool", *tool, "The tool's name")->required();
  call->add_option("--input", *input, "The arguments, a JSON object (default {})");
  add_client_options(call, *call_opts);
  call->callback([call_opts, tool, input, &status] {
    key_from_environment(*call_opts);
    auto args = nlohmann::json::parse(*input, nullptr, false);
    if (args.is_discarded() || !args.is_object()) {
      std::cerr << "airlock call: --input must be a JSON object\n";
      status.code = 2;
      return;
    }
    auto reply = request(*call_opts, http::verb::post, "/v1/tools/" + *tool + "/invoke",
                         nlohmann::json{{"arguments", args}}.dump());
    if (!reply) {
      std::cerr << "airlock call: " << reply.error().message << "\n";
      status.code = 2;
      return;
    }
    auto body = nlohmann::json::parse(reply->body, nullptr, false);
    std::cout << (body.is_discarded() ? reply->body : body.dump(2)) << "\n";
    // 0: ok; 1: the tool failed or was denied; 2: the call itself failed.
    status.code = (reply->status == 200 && !body.is_discarded() && body.value("status", "") == "ok") ? 0 : 1;
  });

  auto list_opts = std::make_shared<ClientOptions>();
  auto* tools = app.add_subcommand(kToolsListCommand.name, kToolsListCommand.summary);
  auto* list = tools->add_subcommand("list", "The tools this key may invoke");
  tools->require_subcommand(1);
  add_client_options(list, *list_opts);
  list->callback([list_opts, &status] {
    key_from_environment(*list_opts);
    auto reply = request(*list_opts, http::verb::get, "/v1/tools", "");
    if (!reply) {
      std::cerr << "airlock tools list: " << reply.error().message << "\n";
      status.code = 2;
      return;
    }
    auto body = nlohmann::json::parse(reply->body, nullptr, false);
    if (reply->status != 200 || body.is_discarded() || !body.contains("tools")) {
      std::cerr << "airlock tools list: HTTP " << reply->status << ": " << reply->body << "\n";
      status.code = 1;
      return;
    }
    for (const auto& t : body["tools"])
      std::cout << t.value("name", "") << "\t" << t.value("risk", "") << "\t" << t.value("description", "") << "\n";
    status.code = 0;
  });
}

}  // namespace airlock::cli
