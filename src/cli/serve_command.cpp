// airlock serve --config FILE: the daemon. It is its own program, `airlock-serve`, installed
// next to `airlock`: the daemon links prometheus-cpp (a shared C++ library) and every
// `airlock run` would otherwise pay to load it (docs/performance-history.md). `airlock serve` checks
// its options and becomes that program (execv: same pid, same signals).
#include "cli/cli_main.hpp"

namespace airlock::cli {

void add_serve_command(CLI::App& app, ExitStatus& status) {
  auto config = std::make_shared<std::string>();
  auto listen = std::make_shared<std::string>();
  auto advertise = std::make_shared<std::string>();
  auto check = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("serve", "Run the daemon: the tool registry, the pipeline and the HTTP API");
  cmd->add_option("--config", *config, "The configuration file (YAML, see docs/config.md)")->required();
  cmd->add_option("--listen", *listen, "HOST:PORT, overriding server.listen (port 0: any free port)");
  cmd->add_option("--advertise-url", *advertise,
                  "http[s]://HOST:PORT the other replicas reach this one at (storage.postgres), overriding "
                  "server.advertiseUrl");
  cmd->add_flag("--check", *check,
                "Validate the configuration and exit (0 valid, 1 not) without serving");
  cmd->callback([config, listen, advertise, check, &status] {
    std::vector<std::string> args = {"airlock-serve", "--config", *config};
    if (!listen->empty()) args.insert(args.end(), {"--listen", *listen});
    if (!advertise->empty()) args.insert(args.end(), {"--advertise-url", *advertise});
    if (*check) args.emplace_back("--check");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    exec_sibling("airlock-serve", argv.data());
    status.code = 1;  // reached only when the daemon could not be started
  });
}

}  // namespace airlock::cli
