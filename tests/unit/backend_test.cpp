// The Backend interface: the local backend's Spec for a request, and the execute stage running
// a tool call's RunRequest on the backend of its tier.
#include <gtest/gtest.h>

#include "backend/local.hpp"
#include "pipeline/stages/execute.hpp"

namespace airlock {
namespace {

TEST(LocalBackend, SpecForARequest) {
  backend::RunRequest request;
  request.argv = {"tool", "--flag"};
  request.env = {{"A", "1"}, {"TOKEN", "from env"}};
  request.credentials = {{"TOKEN", "secret"}};
  request.limits.output_bytes = 4096;
  request.mounts = {{backend::Mount::Kind::runner, "/opt/r", "/airlock", true},
                    {backend::Mount::Kind::data, "/srv/d", "/data", false}};
  request.egress.allow.push_back({"api.example.com", 443});
  request.stdin_bytes = "{}";
  sandbox::Spec spec = backend::local_spec(request);
  EXPECT_EQ(spec.argv, request.argv);
  EXPECT_EQ(spec.env.at("A"), "1");
  EXPECT_EQ(spec.env.at("TOKEN"), "secret");  // a credential wins over the plain environment
  EXPECT_EQ(spec.limits.output_bytes, 4096u);
  ASSERT_EQ(spec.binds.size(), 2u);
  EXPECT_EQ(spec.binds[0].dest, "/airlock");
  EXPECT_FALSE(spec.binds[0].writable);
  EXPECT_TRUE(spec.binds[1].writable);
  EXPECT_EQ(spec.stdin_source.kind, sandbox::StdinSource::Kind::bytes);
  EXPECT_EQ(spec.stdin_source.bytes, "{}");
  EXPECT_EQ(spec.output_mode, sandbox::OutputMode::collect);
  EXPECT_TRUE(spec.kill_on_output_limit);
  EXPECT_TRUE(spec.network.loopback_listeners.empty());  // the proxy's, added by run_local
}

class RecordingBackend : public backend::Backend {
 public:
  backend::RunResult run(const backend::RunRequest& request,
                         const backend::RunContext& context) override {
    requests.push_back(request);
    rule_sets.push_back(context.rule_set);
    backend::RunResult result;
    result.verdict = sandbox::Verdict::ok;
    result.exit_code = 0;
    result.stdout_data = R"({"answer": 42})";
    result.egress.push_back({"api.example.com", 443, "192.0.2.1", true, "allow", 1, 2, 3});
    return result;
  }
  std::string_view name() const override { return "recording"; }

  std::vector<backend::RunRequest> requests;
  std::vector<std::string> rule_sets;
};

TEST(ExecuteStage, RunsTheRequestOnTheBackendOfTheTier) {
  policy::Config config;
  config.tools.emplace_back();
  policy::ToolConfig& tool = config.tools.back();
  tool.name = "weather";
  tool.runtime.kind = policy::ToolRuntime::Kind::command;
  tool.runtime.command = {"/usr/bin/weather"};
  tool.network.allow.push_back({"api.example.com", 443});
  tool.data_paths = {"/srv/maps"};
  RecordingBackend backend;
  pipeline::ExecuteOptions options;
  options.runner_dir = "/run/airlock";
  options.backends = pipeline::runnable_tiers_on(backend);
  auto stage = pipeline::ExecuteStage::create(config, options);
  ASSERT_TRUE(stage.ok()) << stage.error().message;

  pipeline::Invocation inv;
  inv.tool_name = tool.name;
  inv.arguments = {{"city", "Oslo"}};
  pipeline::StageContext ctx(config);
  EXPECT_TRUE((*stage)->run(inv, ctx).proceeds());
  ASSERT_EQ(backend.requests.size(), 1u);
  const auto& request = backend.requests[0];
  EXPECT_EQ(request.argv, tool.runtime.command);
  EXPECT_EQ(request.stdin_bytes, R"({"city":"Oslo"})");
  ASSERT_EQ(request.mounts.size(), 2u);
  EXPECT_EQ(request.mounts[0].kind, backend::Mount::Kind::data);
  EXPECT_EQ(request.mounts[1].kind, backend::Mount::Kind::runner);
  EXPECT_EQ(request.mounts[1].path_inside, "/airlock");
  ASSERT_EQ(request.egress.allow.size(), 1u);
  EXPECT_EQ(backend.rule_sets[0], "the egress rules of tool weather");
  ASSERT_TRUE(inv.output.has_value());
  EXPECT_EQ((*inv.output)["answer"], 42);
  ASSERT_TRUE(inv.outcome.has_value());
  EXPECT_EQ(inv.outcome->egress.size(), 1u);

  tool.risk = policy::Risk::high;  // no backend runs it (the tier stage refuses it first)
  auto refused = (*stage)->run(inv, ctx);
  ASSERT_TRUE(refused.error());
  EXPECT_EQ(refused.error()->kind_name(), "tier_unavailable");
  EXPECT_EQ(backend.requests.size(), 1u);
}

class NamedBackend : public backend::Backend {
 public:
  explicit NamedBackend(std::string name) : name_(std::move(name)) {}
  backend::RunResult run(const backend::RunRequest&, const backend::RunContext&) override { return {}; }
  std::string_view name() const override { return name_; }

 private:
  std::string name_;
};

class RecordingGateway : public pipeline::McpToolCaller {
 public:
  Result<pipeline::McpToolResult> call(const pipeline::McpToolCall& call) override {
    servers.push_back(call.server);
    pipeline::McpToolResult r;
    r.content = nlohmann::json::array({{{"type", "text"}, {"text", "ok"}}});
    return r;
  }
  std::vector<std::string> servers;
};

// Issue #38: a server's tool runs when its tier and its server's run on the local sandbox or on
// gVisor (the gateway runs the server in its tier's), is refused on a Kubernetes tier, and is
// refused when its server's sandbox would be weaker than its own tier asks for.
TEST(ExecuteStage, McpToolsRunWhereTheirServersTierRunsNeverInAWeakerSandbox) {
  NamedBackend local("local"), gvisor("gvisor"), kubernetes("kubernetes");
  RecordingGateway gateway;
  policy::Config config;
  for (auto [name, risk] : {std::pair{"gv", policy::Risk::high}, std::pair{"kube", policy::Risk::critical},
                            std::pair{"loc", policy::Risk::medium}}) {
    policy::McpServerConfig server;
    server.name = name;
    server.risk = risk;
    config.mcp_servers.push_back(server);
  }
  pipeline::ExecuteOptions options;
  options.backends = {{policy::Risk::low, &local}, {policy::Risk::medium, &local},
                      {policy::Risk::high, &gvisor}, {policy::Risk::critical, &kubernetes}};
  options.mcp = &gateway;
  auto stage = pipeline::ExecuteStage::create(config, options);
  ASSERT_TRUE(stage.ok()) << stage.error().message;
  // The tool `server.t` of `risk`: the error kind and message of its call ("" when it ran).
  auto call = [&](const std::string& server, policy::Risk risk) -> std::string {
    config.tools.clear();
    config.tools.emplace_back();
    auto& tool = config.tools.back();
    tool.name = server + ".t";
    tool.risk = risk;
    tool.mcp = policy::McpToolSource{server, "t", "", ""};
    pipeline::Invocation inv;
    inv.tool_name = tool.name;
    pipeline::StageContext ctx(config);
    auto r = (*stage)->run(inv, ctx);
    return r.error() ? std::string(r.error()->kind_name()) + ": " + r.error()->message : "";
  };
  EXPECT_EQ(call("gv", policy::Risk::high), "");
  EXPECT_EQ(call("gv", policy::Risk::low), "") << "a stronger sandbox than the tool's tier asks for";
  EXPECT_EQ(call("loc", policy::Risk::medium), "");
  EXPECT_EQ(gateway.servers, (std::vector<std::string>{"gv", "gv", "loc"}));
  EXPECT_EQ(call("kube", policy::Risk::critical), "") << "a server on Kubernetes runs in a pod of its own";
  EXPECT_EQ(call("kube", policy::Risk::low), "") << "a stronger sandbox than the tool's tier asks for";
  EXPECT_EQ(gateway.servers, (std::vector<std::string>{"gv", "gv", "loc", "kube", "kube"}));
  const auto raised = call("loc", policy::Risk::high);
  EXPECT_EQ(raised.rfind("tier_unavailable: ", 0), 0u) << raised;
  EXPECT_NE(raised.find("runs in the local sandbox: raise the server's risk to a tier on gVisor"), std::string::npos) << raised;
  const auto elsewhere = call("gv", policy::Risk::critical);
  EXPECT_NE(elsewhere.find("that tier runs on Kubernetes, and its MCP server (high risk) runs on gVisor"),
            std::string::npos) << elsewhere;
  EXPECT_EQ(gateway.servers.size(), 5u) << "no refused call reached the gateway";
}

}  // namespace
}  // namespace airlock
