// The mcpServers section: the issue's example parses; each mistake is refused at its line with
// its message, and every mistake of a file is listed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "policy/config.hpp"

namespace airlock::policy {
namespace {

namespace fs = std::filesystem;

// A host directory that exists, for dataPaths.
class McpConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("airlock-mcp-config-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "docs");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string docs() const { return (dir_ / "docs").string(); }

  // A config with `body` under the header (and `tools` when given).
  Result<Config> parse(const std::string& servers, const std::string& tools = "") const {
    std::string yaml = "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n" + tools + servers;
    return parse_config(yaml, "t.yaml", dir_.string());
  }

  // The one-server config `fields` completes (indented under "- name: files").
  Result<Config> server(const std::string& fields) const {
    return parse("mcpServers:\n  - name: files\n    command: [npx, server]\n" + fields);
  }

  std::string error_of(const Result<Config>& c) const {
    return c.ok() ? "(loaded)" : c.error().message;
  }

  fs::path dir_;
};

TEST_F(McpConfig, TheIssuesExampleParses) {
  auto c = parse(
      "mcpServers:\n"
      "  - name: files\n"
      "    command: [npx, -y, \"@modelcontextprotocol/server-filesystem\", /data]\n"
      "    dataPaths: [" +
      docs() +
      ":/data]\n"
      "    network: {allow: []}\n"
      "    risk: medium\n"
      "    tools: {allow: [\"read_*\", \"list_*\"], riskOverrides: {read_secret: high}}\n"
      "    env: {LOG_LEVEL: info}\n"
      "    idleTimeout: 5m\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->mcp_servers.size(), 1u);
  const auto* s = c->find_mcp_server("files");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->command, (std::vector<std::string>{
                            "npx", "-y", "@modelcontextprotocol/server-filesystem", "/data"}));
  ASSERT_EQ(s->data_paths.size(), 1u);
  EXPECT_EQ(s->data_paths[0].host_path, docs());
  EXPECT_EQ(s->data_paths[0].path_inside, "/data");
  EXPECT_FALSE(s->data_paths[0].writable);
  EXPECT_FALSE(s->network.has_egress());
  EXPECT_EQ(s->risk, Risk::medium);
  EXPECT_EQ(s->tools_allow, (std::vector<std::string>{"read_*", "list_*"}));
  EXPECT_EQ(s->risk_overrides.at("read_secret"), Risk::high);
  EXPECT_EQ(s->env.at("LOG_LEVEL"), "info");
  EXPECT_EQ(s->idle_timeout, std::chrono::minutes(5));
  EXPECT_EQ(s->call_timeout, std::chrono::seconds(60));  // the default
  EXPECT_EQ(s->where, "t.yaml:4");
  EXPECT_EQ(c->find_mcp_server("other"), nullptr);
}

TEST_F(McpConfig, Defaults) {
  auto c = server("");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto& s = c->mcp_servers.at(0);
  EXPECT_EQ(s.risk, Risk::medium);
  EXPECT_TRUE(s.data_paths.empty());
  EXPECT_FALSE(s.network.has_egress());
  EXPECT_TRUE(s.tools_allow.empty());
  EXPECT_EQ(s.idle_timeout, std::chrono::minutes(5));
  EXPECT_EQ(s.start_timeout, std::chrono::seconds(30));
  EXPECT_EQ(s.max_instances, 16u);
  EXPECT_EQ(c->server.max_mcp_server_instances, 64u);
}

TEST_F(McpConfig, StartTimeoutAndInstanceCaps) {
  auto c = server("    startTimeout: 5s\n    maxInstances: 3\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->mcp_servers.at(0).start_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c->mcp_servers.at(0).max_instances, 3u);
}

TEST_F(McpConfig, WritableDataPathNetworkAndCallTimeout) {
  auto c = server("    dataPaths: [\"" + docs() +
                  ":/data:rw\"]\n"
                  "    network: {allow: [\"api.example.com:443\"]}\n"
                  "    callTimeout: 30s\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto& s = c->mcp_servers.at(0);
  EXPECT_TRUE(s.data_paths.at(0).writable);
  ASSERT_EQ(s.network.allow.size(), 1u);
  EXPECT_EQ(s.call_timeout, std::chrono::seconds(30));
}

struct Refusal {
  std::string fields;   // under the server
  std::string message;  // "t.yaml:LINE:COL: ..." expected in the error
};

TEST_F(McpConfig, EachMistakeIsRefusedWithItsMessage) {
  const std::string d = docs();
  const Refusal cases[] = {
      {"    colour: red\n", "t.yaml:6:5: mcp server files: unknown field 'colour'"},
      {"    dataPaths: [" + d + "]\n", "expected HOST:INSIDE or HOST:INSIDE:rw"},
      {"    dataPaths: [\"" + d + ":/data:ro\"]\n", "expected HOST:INSIDE or HOST:INSIDE:rw"},
      {"    dataPaths: [\"" + d + ":/data:\"]\n", "expected HOST:INSIDE or HOST:INSIDE:rw"},
      {"    dataPaths: [\"no-such-dir:/data\"]\n", "no-such-dir does not exist"},  // relative to the config
      {"    dataPaths: [\"/nonexistent-airlock-dir:/data\"]\n",
       "the host path /nonexistent-airlock-dir does not exist"},
      {"    dataPaths: [\"" + d + ":data\"]\n", "'data' is not an absolute path"},
      {"    dataPaths: [\"" + d + ":/\"]\n", "cannot bind onto / (the sandbox's root)"},
      {"    dataPaths: [\"" + d + ":/etc/x\"]\n",
       "cannot bind onto /etc/x: /etc is the sandbox's own"},
      {"    dataPaths: [\"" + d + ":/proc\"]\n",
       "cannot bind onto /proc: /proc is the sandbox's own"},
      {"    dataPaths: [\"" + d + ":/usr/local\"]\n", "/usr is the sandbox's own"},
      {"    dataPaths: [\"" + d + ":/work\"]\n", "/work is the sandbox's own"},
      {"    dataPaths: [\"" + d + ":/data/../etc\"]\n", "is not in normal form"},
      {"    dataPaths: [\"" + d + ":/data/\"]\n", "'/data/' is not in normal form"},
      {"    dataPaths: [\"" + d + ":/data//x\"]\n", "'/data//x' is not in normal form"},
      {"    dataPaths: [\"" + d + ":/data\", \"" + d + ":/data/sub\"]\n",
       "/data/sub overlaps /data, given before: one bind per directory"},
      {"    network: {allow: [\"not a rule!\"]}\n", "mcp server files.network.allow:"},
      {"    network: {deny: []}\n", "mcp server files.network: unknown field 'deny'"},
      {"    risk: extreme\n",
       "mcp server files.risk: expected low, medium, high or critical, got 'extreme'"},
      {"    tools: {allow: [\"Read_*\"]}\n", "tools.allow: 'Read_*': use lower-case letters"},
      {"    tools: {allow: [\"read_*\"], riskOverrides: {write_file: high}}\n",
       "tools.riskOverrides: 'write_file' is not allowed by tools.allow"},
      {"    tools: {riskOverrides: {write_file: huge}}\n",
       "tools.riskOverrides.write_file: expected low, medium, high or critical"},
      {"    tools: {deny: [x]}\n", "mcp server files.tools: unknown field 'deny'"},
      {"    env: {1BAD: x}\n", "mcp server files.env: '1BAD' is not a valid variable name"},
      {"    env: {HTTPS_PROXY: x}\n",
       "mcp server files.env: HTTPS_PROXY is set by Airlock for every sandbox"},
      {"    env: {no_proxy: x}\n", "no_proxy is set by Airlock"},
      {"    env: {NODE_EXTRA_CA_CERTS: x}\n", "NODE_EXTRA_CA_CERTS is set by Airlock"},
      {"    env: {HOME: /x}\n", "HOME is set by Airlock"},
      {"    env: {AIRLOCK_API_KEY: x}\n", "AIRLOCK_API_KEY is set by Airlock"},
      {"    idleTimeout: soon\n", "mcp server files.idleTimeout:"},
      {"    idleTimeout: 500ms\n", "mcp server files.idleTimeout: from 1s to 24h"},
      {"    idleTimeout: 25h\n", "mcp server files.idleTimeout: from 1s to 24h"},
      {"    callTimeout: 2h\n", "mcp server files.callTimeout: from 1s to 1h"},
      {"    startTimeout: 11m\n", "mcp server files.startTimeout: from 1s to 10m"},
      {"    startTimeout: 100ms\n", "mcp server files.startTimeout: from 1s to 10m"},
      {"    maxInstances: 0\n", "mcp server files.maxInstances: must be at least 1"},
      {"    maxInstances: many\n", "mcp server files.maxInstances"},
  };
  for (const auto& c : cases) {
    auto loaded = server(c.fields);
    ASSERT_FALSE(loaded.ok()) << c.fields;
    EXPECT_NE(error_of(loaded).find(c.message), std::string::npos)
        << c.fields << "\nexpected: " << c.message << "\ngot: " << error_of(loaded);
  }
}

TEST_F(McpConfig, NamesAndCommands) {
  const Refusal cases[] = {
      {"mcpServers:\n  - command: [x]\n", "t.yaml:4:5: mcpServers[0]: missing name"},
      {"mcpServers:\n  - name: my.files\n    command: [x]\n",
       "mcpServers[0].name: 'my.files': a server's name is its tools' first segment: use "
       "lower-case "
       "letters, digits, '-' and '_'"},
      {"mcpServers:\n  - name: Files\n    command: [x]\n", "mcpServers[0].name: 'Files'"},
      {"mcpServers:\n  - name: files\n", "t.yaml:4:5: mcp server files: missing command"},
      {"mcpServers:\n  - name: files\n    command: []\n", "mcp server files.command: empty"},
      {"mcpServers:\n  - name: files\n    command: [\"\"]\n",
       "mcp server files.command: the program is empty"},
      {"mcpServers:\n  - name: files\n    command: npx\n",
       "mcp server files.command: expected a list of strings"},
      {"mcpServers:\n  - name: files\n    command: [x]\n  - name: files\n    command: [y]\n",
       "t.yaml:6:5: mcpServers: 'files' is defined twice"},
      {"mcpServers: {name: files}\n", "mcpServers: expected a list"},
  };
  for (const auto& c : cases) {
    auto loaded = parse(c.fields);
    ASSERT_FALSE(loaded.ok()) << c.fields;
    EXPECT_NE(error_of(loaded).find(c.message), std::string::npos)
        << c.fields << "\nexpected: " << c.message << "\ngot: " << error_of(loaded);
  }
}

TEST_F(McpConfig, AToolNamedLikeTheServersToolsIsRefused) {
  const std::string tools =
      "tools:\n  - name: files.read_file\n    runtime: {type: command, command: [/bin/cat]}\n";
  auto c = parse("mcpServers:\n  - name: files\n    command: [x]\n", tools);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(
      error_of(c).find("t.yaml:7:11: mcpServers[0].name: tool files.read_file (t.yaml:4) is named "
                       "as files's tools are: rename one"),
      std::string::npos)
      << error_of(c);
  // A tool merely starting with the same letters is another name.
  const std::string other =
      "tools:\n  - name: filesystem\n    runtime: {type: command, command: [/bin/cat]}\n";
  EXPECT_TRUE(parse("mcpServers:\n  - name: files\n    command: [x]\n", other).ok());
}

TEST_F(McpConfig, EveryMistakeIsListed) {
  auto c = server("    risk: extreme\n    idleTimeout: 0s\n    env: {HOME: x}\n");
  ASSERT_FALSE(c.ok());
  const std::string m = error_of(c);
  EXPECT_NE(m.find("t.yaml:6:11: mcp server files.risk"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:7:18: mcp server files.idleTimeout"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:8:11: mcp server files.env: HOME"), std::string::npos) << m;
}

}  // namespace
}  // namespace airlock::policy
