// `airlock serve`: load the config, create and start the daemon, reload on SIGHUP, drain and
// stop on SIGTERM or SIGINT; `--check` validates and exits.
#include "server/daemon/daemon_state.hpp"

#include <signal.h>

#include <chrono>
#include <iostream>

#include <boost/asio/ip/address.hpp>

#include "pipeline/stages/execute.hpp"
#include "server/http/tls_context.hpp"
#include "server/mcp_server/mcp_stdio.hpp"

namespace airlock::server {

Status check_config(const policy::Config& config) {
  if (config.server.tls)
    if (auto s = check_tls(*config.server.tls); !s) return s;
  pipeline::PipelineDeps services;  // no audit log, no sandboxes: nothing is opened or created
  auto generation = build_generation(std::make_shared<const policy::Config>(config), services);
  if (!generation) return generation.error();
  return {};
}

std::string cleartext_warning(const policy::ServerConfig& server, std::uint16_t port) {
  if (server.tls) return "";
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(server.listen_host, ec);
  if (ec) return "";  // not listening at all (bind refuses it)
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
  if (address.is_loopback()) return "";  // 127.0.0.0/8, ::1
  const std::string host = address.is_v6() ? "[" + server.listen_host + "]" : server.listen_host;
  return "airlock: warning: listening on " + host + ":" + std::to_string(port) +
         " without TLS: API keys and tool data cross the network in clear; set server.tls";
}

namespace {

// --listen HOST:PORT over server.listen, --advertise-url over server.advertiseUrl; then, with
// storage.postgres, the address the other replicas reach this one at must be known.
Status apply_overrides(policy::Config& config, const ServeOverrides& overrides) {
  if (!overrides.listen.empty()) {
    auto parsed = policy::parse_listen(overrides.listen);
    if (!parsed) return Error::make("usage", "--listen: " + parsed.error().message);
    config.server.listen_host = parsed->host;
    config.server.listen_port = parsed->port;
  }
  if (!overrides.advertise_url.empty()) {
    config.server.advertise_url = overrides.advertise_url;
    if (auto wrong = policy::advertise_url_problem(config.server))
      return Error::make("usage", "--advertise-url: " + *wrong);
  }
  if (config.storage.postgres)
    if (auto url = policy::advertised_url(config.server, config.server.listen_port); !url)
      return Error::make("config", config.path + ": " + url.error().message + " (or --advertise-url)");
  return {};
}

Result<policy::Config> load(const std::string& config_path, const ServeOverrides& overrides) {
  auto config = policy::load_config(config_path);
  if (!config) return config.error();
  if (auto s = apply_overrides(*config, overrides); !s) return s.error();
  return config;
}

void reload_from(Daemon& daemon, const std::string& config_path, const ServeOverrides& overrides) {
  std::cerr << "airlock serve: SIGHUP: reloading " << config_path << "\n";
  auto report = daemon.reload(load(config_path, overrides));
  if (!report) {
    std::cerr << "airlock serve: reload failed: " << report.error().message << "\n";
    return;
  }
  std::cerr << "airlock serve: reloaded: " << report->tools
            << " tool(s); added: " << joined(report->added)
            << "; removed: " << joined(report->removed) << "\n";
}

int check_only_run(const std::string& config_path, const ServeOverrides& overrides) {
  auto config = load(config_path, overrides);
  if (!config) {
    std::cerr << "airlock serve --check: " << config.error().message << "\n";
    return 1;
  }
  if (auto s = check_config(*config); !s) {
    std::cerr << "airlock serve --check: " << s.error().message << "\n";
    return 1;
  }
  std::cerr << "airlock serve --check: " << config_path << " is valid (" << config->tools.size()
            << " tool(s))\n";
  return 0;
}

}  // namespace

int serve(const std::string& config_path, const ServeOverrides& overrides, bool check_only) {
  if (check_only) return check_only_run(config_path, overrides);
  // SIGTERM, SIGINT and SIGHUP are taken by sigwait below, in this thread only.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto config = load(config_path, overrides);
  if (!config) {
    std::cerr << "airlock serve: " << config.error().message << "\n";
    return 2;
  }
  const policy::ServerConfig server_config = config->server;
  auto daemon = Daemon::create(std::move(*config));
  if (!daemon) {
    std::cerr << "airlock serve: " << daemon.error().message << "\n";
    return 1;
  }
  const auto& rec = (*daemon)->recovery();
  if (rec.stale_cgroups || rec.aborted_invocations || rec.revoked_leases || rec.aborted_sessions)
    std::cerr << "airlock serve: recovered: removed " << rec.stale_cgroups << " stale cgroup(s), recorded "
              << rec.aborted_invocations << " aborted invocation(s) and " << rec.aborted_sessions
              << " aborted session(s), revoked " << rec.revoked_leases << " credential lease(s)\n";
  for (const auto& e : rec.lease_errors)
    std::cerr << "airlock serve: warning: a leftover credential could not be revoked (it expires on its own): " << e << "\n";
  if (auto s = (*daemon)->start(); !s) {
    std::cerr << "airlock serve: " << s.error().message << "\n";
    return 1;
  }
  if (auto warning = cleartext_warning(server_config, (*daemon)->port()); !warning.empty())
    std::cerr << warning << "\n";
  std::cerr << "airlock serve: listening on port " << (*daemon)->port()
            << (server_config.tls ? " (TLS)" : "") << "\n"
            << std::flush;
  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP)
    reload_from(**daemon, config_path, overrides);
  std::cerr << "airlock serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << ": draining, then stopping\n";
  (*daemon)->shutdown();
  std::cerr << "airlock serve: stopped\n";
  return 0;
}

int serve_mcp_stdio(const std::string& config_path, const std::string& api_key, const std::string& subject_token) {
  signal(SIGPIPE, SIG_IGN);
  auto config = policy::load_config(config_path);
  if (!config) {
    std::cerr << "airlock mcp: " << config.error().message << "\n";
    return 2;
  }
  const auto settle = config->server.mcp.first_listing_wait;  // a tools/list sent before stdin ends
  auto daemon = Daemon::create(std::move(*config));
  if (!daemon) {
    std::cerr << "airlock mcp: " << daemon.error().message << "\n";
    return 1;
  }
  // The same services as `airlock serve`. Requests are read at once: tools/list itself waits
  // for the MCP servers' first listing (server.mcp.firstListingWait), and the session hears
  // notifications/tools/list_changed of what comes later.
  (*daemon)->start_services();
  std::cerr << "airlock mcp: serving MCP on stdin and stdout\n" << std::flush;
  run_mcp_stdio((*daemon)->api().mcp(), api_key, subject_token, std::cin, std::cout, settle);
  (*daemon)->shutdown();  // running calls finish (server.drainTimeout) and answer first
  std::cout << std::flush;
  return 0;
}

}  // namespace airlock::server
