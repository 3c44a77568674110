// airlock mcp pins list --config FILE [--json]
// airlock mcp pins approve SERVER TOOL [--sha256 H] --config FILE
// The tool pins of the gateway (docs/mcp-pins.md) in <dataDir>/state.db or the database
// storage.postgres names, while the daemons run or not (the store waits for the daemon's
// writes). No state.db is created: with none there is no pin. The text listing never prints what a server wrote (a description
// may carry terminal escapes or an injection); --json does, escaped. Exit 0 done, 1 the store
// refused or failed (no such pin, nothing pending, another hash pending), 2 usage or
// configuration error.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "mcp/pin_store.hpp"
#include "policy/config.hpp"
#include "policy/names.hpp"
#include "pipeline/storage_locations.hpp"

namespace airlock::cli {
namespace {

struct PinsOptions {
  std::string config_file;
  std::string server, tool, sha256;
  bool json = false;
};

// The state the config names (as `airlock audit --config` finds its log): <dataDir>/state.db,
// or the storage.postgres database the daemons share.
struct StateTarget {
  storage::StateLocation location;
  std::string name;  // for messages: the file, or "the storage.postgres database" (never its URL)
};

StateTarget state_of(const PinsOptions& o) {
  auto config = policy::load_config(o.config_file);
  if (!config) throw UsageError{config.error().message};
  StateTarget target{pipeline::state_location(config->storage), ""};
  target.name = target.location.is_postgres() ? "the storage.postgres database" : target.location.sqlite_path;
  return target;
}

// nullptr when the daemon never made its state (so nothing was ever pinned): no state.db. A
// database is opened (its table made if missing); one that cannot be reached is an error.
std::unique_ptr<mcp::PinStore> open_store(const StateTarget& target) {
  std::error_code ec;
  if (!target.location.is_postgres() && !std::filesystem::exists(target.location.sqlite_path, ec)) return nullptr;
  auto store = mcp::PinStore::open(target.location);
  if (!store) throw store.error();
  return std::move(*store);
}

nlohmann::json pin_json(const mcp::Pin& p) {
  nlohmann::json j{{"server", p.server},
                   {"tool", p.tool},
                   {"name", p.server + "." + p.tool},
                   {"sha256", p.sha256},
                   {"pinned_at", p.pinned_at}};
  if (!p.pending_sha256.empty())
    j["pending"] = {
        {"sha256", p.pending_sha256}, {"since", p.pending_since}, {"listing", p.pending}};
  return j;
}

void print_pin(const mcp::Pin& p) {
  std::cout << p.server << "." << p.tool << "  pinned " << p.pinned_at << "  sha256 " << p.sha256
            << "\n";
  if (p.pending_sha256.empty()) return;
  std::cout << "  CHANGED since " << p.pending_since << ": listed now " << p.pending_sha256
            << ", disabled until approved (the listing: --json)\n"
            << "  airlock mcp pins approve " << p.server << " " << p.tool << " --sha256 "
            << p.pending_sha256 << " --config FILE\n";
}

int list_command(const PinsOptions& o) {
  const StateTarget db = state_of(o);
  auto store = open_store(db);
  const auto pins = store ? store->list() : std::vector<mcp::Pin>{};
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& p : pins) out.push_back(pin_json(p));
    std::cout << nlohmann::json{{"pins", out}}.dump(2, ' ', false,
                                                    nlohmann::json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  if (pins.empty())
    std::cerr << "no pins in " << db.name << " (the gateway pins a tool when a server first lists it)\n";
  for (const auto& p : pins) print_pin(p);
  return 0;
}

void check_names(const PinsOptions& o) {
  if (!policy::valid_tool_name(o.server) || o.server.find('.') != std::string::npos)
    throw UsageError{"'" + o.server +
                     "' is not a server name: use lower-case letters, digits, '-' and '_'"};
  if (!policy::valid_tool_name(o.tool))
    throw UsageError{"'" + o.tool + "' is not a tool name: " + policy::kToolNameRule};
  const bool hex = o.sha256.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!o.sha256.empty() && (o.sha256.size() != 64 || !hex))
    throw UsageError{
        "--sha256: expected 64 lower-case hex digits (as `airlock mcp pins list` shows)"};
}

int approve_command(const PinsOptions& o) {
  check_names(o);
  const StateTarget db = state_of(o);
  auto store = open_store(db);
  if (!store)
    throw Error::make("not_found", "no pin for tool " + o.server + "." + o.tool + ": no " + db.name);
  const auto before = store->get(o.server, o.tool);
  if (auto s = store->approve(o.server, o.tool, o.sha256); !s) throw s.error();
  const auto after = store->get(o.server, o.tool);
  std::cout << "tool " << o.server << "." << o.tool << " approved: pinned "
            << (after ? after->sha256 : std::string("?")) << " (was "
            << (before ? before->sha256 : "?") << ")\n";
  return 0;
}

// Runs one of the commands: usage errors exit 2, the store's errors 1.
int run(const char* what, int (*command)(const PinsOptions&), const PinsOptions& o) {
  try {
    return command(o);
  } catch (const UsageError& e) {
    std::cerr << "airlock mcp pins " << what << ": " << e.message << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "airlock mcp pins " << what << ": " << e.code << ": " << e.message << "\n";
    return 1;
  }
}

}  // namespace

void add_mcp_pins_command(CLI::App& mcp, ExitStatus& status) {
  auto* pins =
      mcp.add_subcommand("pins", "List the tool pins of MCP servers; approve a changed tool");
  pins->require_subcommand(1);
  auto opts = std::make_shared<PinsOptions>();
  auto add = [&](const char* name, const char* summary, int (*command)(const PinsOptions&)) {
    auto* sub = pins->add_subcommand(name, summary);
    sub->add_option("--config", opts->config_file,
                    "The daemon's configuration file (its storage.dataDir or storage.postgres)")
        ->required();
    sub->callback([opts, &status, name, command] { status.code = run(name, command, *opts); });
    return sub;
  };
  add("list", "Each pinned tool, and each change waiting for approval", list_command)
      ->add_flag("--json", opts->json, "Print them as JSON, with the changed listings");
  auto* approve = add("approve", "Make a changed tool's pending listing its pin (enables the tool)",
                      approve_command);
  approve->add_option("server", opts->server, "The server (mcpServers[].name)")->required();
  approve->add_option("tool", opts->tool, "The server's name for the tool")->required();
  approve->add_option(
      "--sha256", opts->sha256,
      "Approve only if this is the pending listing's hash (as `pins list` shows it)");
}

}  // namespace airlock::cli
