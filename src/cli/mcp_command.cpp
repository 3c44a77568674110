// airlock mcp: Airlock's MCP server on stdin and stdout, for MCP clients that launch their
// servers (desktop assistants, IDEs). Three ways, said on stderr at start:
// - `--server URL`: a bridge to that running daemon's /mcp (mcp_bridge.hpp), for any number of
//   clients at once;
// - `--config FILE` whose data directory a running `airlock serve` holds: a bridge to it, at
//   the URL it wrote in the directory's lock file;
// - `--config FILE` otherwise: embedded. It becomes `airlock-serve --mcp-stdio` (the daemon's
//   program), which builds the daemon without listening and holds the data directory: one
//   client. The key and the subject token travel in the environment, not in the daemon's
//   argv, which other users can read in /proc.
// Its subcommands (`mcp pins`) register on the same command.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/cli_main.hpp"
#include "cli/commands.hpp"
#include "cli/daemon_client.hpp"
#include "cli/mcp_bridge.hpp"
#include "policy/config.hpp"
#include "storage/data_dir_lock.hpp"

namespace airlock::cli {
namespace {

struct McpOptions {
  ClientOptions client;
  std::string config;
};

// How long a held data directory without a URL is given to announce one (an `airlock serve`
// that has taken the lock and is still starting).
constexpr auto kAnnounceWait = std::chrono::seconds(3);

// The URL of the `airlock serve` that holds the config's data directory; nothing when no
// daemon holds it. An error when an embedded `airlock mcp` holds it (one client only).
Result<std::optional<std::string>> running_daemon(const std::string& config_file) {
  auto config = policy::load_config(config_file);
  if (!config) return config.error();
  const std::string& dir = config->storage.data_dir;
  const auto deadline = std::chrono::steady_clock::now() + kAnnounceWait;
  for (;;) {
    auto holder = storage::DataDirLock::holder(dir);
    if (!holder) return holder.error();
    if (!holder->held) return std::optional<std::string>();
    if (!holder->url.empty()) return std::optional<std::string>(holder->url);
    if (std::chrono::steady_clock::now() >= deadline)
      return Error::make("busy", "the data directory " + dir + " is held by another airlock mcp (pid " + holder->pid +
                                     "), which serves only the client that started it. For several clients on one "
                                     "config, run `airlock serve --config " + config_file +
                                     "` once: every `airlock mcp --config` then bridges to it");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void exec_embedded(const McpOptions& o, ExitStatus& status) {
  if (o.client.key.empty()) {
    std::cerr << "airlock mcp: no API key: give --key or set AIRLOCK_API_KEY\n";
    status.code = 2;
    return;
  }
  ::setenv("AIRLOCK_API_KEY", o.client.key.c_str(), 1);
  if (!o.client.subject_token.empty()) ::setenv("AIRLOCK_SUBJECT_TOKEN", o.client.subject_token.c_str(), 1);
  std::vector<std::string> args = {"airlock-serve", "--config", o.config, "--mcp-stdio"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  exec_sibling("airlock-serve", argv.data());
  status.code = 1;  // reached only when the daemon could not be started
}

void serve_stdio(McpOptions& o, bool server_given, ExitStatus& status) {
  key_from_environment(o.client);
  if (o.client.subject_token.empty())
    if (const char* token = std::getenv("AIRLOCK_SUBJECT_TOKEN")) o.client.subject_token = token;
  if (server_given) {
    status.code = run_mcp_bridge(o.client, std::cin, std::cout, std::cerr);
    return;
  }
  if (o.config.empty()) {
    std::cerr << "airlock mcp: give --config (or --server URL, or a subcommand: pins); see airlock mcp --help\n";
    status.code = 2;
    return;
  }
  auto running = running_daemon(o.config);
  if (!running) {
    std::cerr << "airlock mcp: " << running.error().message << "\n";
    status.code = running.error().code == "config" ? 2 : 1;
    return;
  }
  if (!*running) return exec_embedded(o, status);
  std::cerr << "airlock mcp: an airlock serve holds the data directory; using it\n";
  o.client.server = **running;
  status.code = run_mcp_bridge(o.client, std::cin, std::cout, std::cerr);
}

}  // namespace

CLI::App& add_mcp_command(CLI::App& app, ExitStatus& status) {
  auto o = std::make_shared<McpOptions>();
  auto* mcp = app.add_subcommand(kMcpCommand.name, kMcpCommand.summary);
  mcp->add_option("--config", o->config,
                  "The configuration file (YAML, see docs/config.md): serve it embedded, or bridge to the "
                  "airlock serve that runs it");
  add_client_options(mcp, o->client);
  mcp->get_option("--server")
      ->description("Bridge to this running daemon's /mcp, http[s]://HOST:PORT (any number of clients share it)");
  mcp->add_option("--subject-token", o->client.subject_token,
                  "The user the calls are on behalf of (Airlock-Subject-Token; default: $AIRLOCK_SUBJECT_TOKEN)");
  add_mcp_pins_command(*mcp, status);
  mcp->callback([mcp, o, &status] {
    if (!mcp->get_subcommands().empty()) return;  // `mcp pins ...` ran
    serve_stdio(*o, mcp->count("--server") > 0, status);
  });
  return *mcp;
}

}  // namespace airlock::cli
