// airlock-serve: the daemon's own program (`airlock serve` runs it; see serve_command.cpp).
#include <CLI/CLI.hpp>

#include <cstdlib>

#include "server/daemon/daemon.hpp"

int main(int argc, char** argv) {
  CLI::App app{"airlock-serve: the Airlock daemon (the tool registry, the pipeline and the HTTP API)"};
  app.set_version_flag("--version", "airlock-serve 0.1.0");
  std::string config;
  airlock::server::ServeOverrides overrides;
  bool check = false, mcp_stdio = false;
  app.add_option("--config", config, "The configuration file (YAML, see docs/config.md)")->required();
  app.add_option("--listen", overrides.listen, "HOST:PORT, overriding server.listen (port 0: any free port)");
  app.add_option("--advertise-url", overrides.advertise_url,
                 "http[s]://HOST:PORT the other replicas reach this one at, overriding server.advertiseUrl");
  app.add_flag("--check", check,
               "Validate the configuration and exit (0 valid, 1 not) without serving");
  app.add_flag("--mcp-stdio", mcp_stdio,
               "Serve MCP on stdin and stdout instead of listening (`airlock mcp`; the key in $AIRLOCK_API_KEY, a user's token in $AIRLOCK_SUBJECT_TOKEN)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (mcp_stdio) {
    const char* key = std::getenv("AIRLOCK_API_KEY");
    const char* subject_token = std::getenv("AIRLOCK_SUBJECT_TOKEN");
    return airlock::server::serve_mcp_stdio(config, key ? key : "", subject_token ? subject_token : "");
  }
  return airlock::server::serve(config, overrides, check);
}
