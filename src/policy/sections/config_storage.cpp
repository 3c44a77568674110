// storage: where the daemon keeps its state: {dataDir, checkpointEvery, checkpointInterval,
// postgres: {url, passwordFile}, signingKeyFile, tokenKeyFile, heartbeatInterval,
// failoverAfter}. With postgres the audit log and the shared state live in that database,
// shared by every daemon configured with it (docs/config.md, "storage").
#include <filesystem>

#include "policy/config_reader.hpp"

namespace airlock::policy::detail {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPostgresScheme = "postgresql://";

// Whether the URL's user info (before the '@' of its authority) has a password. Never quoted
// back in an error: it may hold one.
bool url_has_password(const std::string& url) {
  std::string rest = url.substr(kPostgresScheme.size());
  std::string authority = rest.substr(0, rest.find_first_of("/?"));
  auto at = authority.rfind('@');
  return at != std::string::npos && authority.substr(0, at).find(':') != std::string::npos;
}

PostgresStorage read_postgres(Reader& r, const YAML::Node& n) {
  const std::string what = "storage.postgres";
  r.expect_map(n, what);
  r.only_keys(n, what, {"url", "passwordFile"});
  PostgresStorage pg;
  if (!n["url"]) fail(n, what + ".url: required (postgresql://user@host:port/database)");
  r.field(n, "url", [&](const YAML::Node& v) {
    pg.url = r.string(v, what + ".url");
    if (pg.url.rfind(kPostgresScheme, 0) != 0 || pg.url.size() == kPostgresScheme.size())
      fail(v, what + ".url: must be a postgresql:// URL (postgresql://user@host:port/database)");
  });
  r.field(n, "passwordFile", [&](const YAML::Node& v) {
    pg.password_file = r.path(v, what + ".passwordFile");
    if (!fs::is_regular_file(pg.password_file))
      fail(v, what + ".passwordFile: " + pg.password_file + " is not a file");
    if (!pg.url.empty() && url_has_password(pg.url))
      fail(v, what + ": the password is in the url and in passwordFile; give it in one place");
  });
  return pg;
}

}  // namespace

void read_storage(Reader& r, const YAML::Node& n, StorageConfig& s) {
  r.expect_map(n, "storage");
  r.only_keys(n, "storage",
              {"dataDir", "checkpointEvery", "checkpointInterval", "postgres", "signingKeyFile",
               "tokenKeyFile", "heartbeatInterval", "failoverAfter"});
  r.field(n, "dataDir", [&](const YAML::Node& v) { s.data_dir = r.path(v, "storage.dataDir"); });
  r.field(n, "checkpointEvery", [&](const YAML::Node& v) {
    s.checkpoint_every =
        static_cast<std::uint32_t>(r.unsigned_int(v, "storage.checkpointEvery", 1 << 30));
  });
  r.field(n, "checkpointInterval", [&](const YAML::Node& v) {
    s.checkpoint_interval = r.duration(v, "storage.checkpointInterval");
  });
  r.field(n, "signingKeyFile", [&](const YAML::Node& v) {
    s.signing_key_file = r.path(v, "storage.signingKeyFile");
  });
  r.field(n, "tokenKeyFile", [&](const YAML::Node& v) {
    s.token_key_file = r.path(v, "storage.tokenKeyFile");
  });
  r.field(n, "heartbeatInterval", [&](const YAML::Node& v) {
    s.heartbeat_interval = r.duration(v, "storage.heartbeatInterval");
  });
  r.field(n, "failoverAfter", [&](const YAML::Node& v) {
    s.failover_after = r.duration(v, "storage.failoverAfter");
  });
  // A replica between two heartbeats must not look dead.
  if (s.failover_after <= s.heartbeat_interval)
    fail(n["failoverAfter"] ? n["failoverAfter"] : n,
         "storage.failoverAfter (" + std::to_string(s.failover_after.count()) +
             " ms) must be more than storage.heartbeatInterval (" +
             std::to_string(s.heartbeat_interval.count()) + " ms)");
  r.field(n, "postgres", [&](const YAML::Node& v) {
    s.postgres = read_postgres(r, v);
    // Every daemon that appends to the shared log signs with the same key: it cannot be one
    // each makes beside its own data directory.
    if (s.signing_key_file.empty())
      fail(v, "storage.postgres: needs storage.signingKeyFile, the checkpoint key every daemon "
              "sharing the database uses");
    // Behind a load balancer a token minted by one replica is presented to another.
    if (s.token_key_file.empty())
      fail(v, "storage.postgres: needs storage.tokenKeyFile, the key every daemon sharing the "
              "database signs Airlock's own tokens with");
  });
}

}  // namespace airlock::policy::detail
