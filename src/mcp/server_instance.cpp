#include "mcp/server_instance.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include "backend/session_stdio_sandbox.hpp"

#include "mcp/server_spec.hpp"

namespace airlock::mcp {
namespace {

Error failed(const std::string& message) { return Error::make("tool_server_failed", message); }

// An instance in a session lives at most this long (the gateway starts a new one for the next
// call): the pod's activeDeadlineSeconds, and what bounds a pod a killed daemon left behind
// (the Kubernetes backend's garbage collector deletes it once this and its allowance passed).
constexpr std::chrono::milliseconds kInstanceLifeInSession{3600'000};

backend::LocalSessionOptions session_options(const InstanceSetup& s) {
  backend::LocalSessionOptions o;
  o.rule_set = "the network rules of MCP server " + s.server.name;
  o.forbidden = s.forbidden;
  o.registry = s.registry;
  o.stderr_ring_bytes = std::max<std::size_t>(s.max_log_bytes, 4096);
  o.on_end = s.on_end;
  return o;
}

backend::GvisorStdioOptions gvisor_options(const InstanceSetup& s) {
  backend::GvisorStdioOptions o;
  o.place = *s.gvisor;
  o.rule_set = "the network rules of MCP server " + s.server.name;
  o.forbidden = s.forbidden;
  o.stderr_ring_bytes = std::max<std::size_t>(s.max_log_bytes, 4096);
  o.on_end = s.on_end;
  return o;
}

// An instance as the one exec of a session of its own (a pod on Kubernetes): the server's
// environment in the session's, its credentials in the session's Secret (never in the pod's
// spec), its network rules the session's egress. Host directories do not exist there.
Result<std::unique_ptr<backend::StdioSandbox>> start_in_session(const InstanceSetup& s, const sandbox::Spec& spec,
                                                                const egress::EgressRules& rules) {
  if (!s.server.data_paths.empty())
    return Error::make("setup_error", "its tier runs sessions on another host (Kubernetes), where the host directory " +
                                          s.server.data_paths.front().host_path + " of its dataPaths does not exist");
  static std::atomic<std::uint64_t> instances{0};
  backend::RunRequest request;
  request.env = s.server.env;
  if (s.credentials)
    for (const auto& [name, value] : s.credentials->env) request.credentials.push_back({name, value});
  request.limits = spec.limits;
  request.limits.wall_time = kInstanceLifeInSession;
  request.egress = rules;
  request.placement = s.placement;
  backend::RunContext context;
  context.rule_set = "the network rules of MCP server " + s.server.name;
  context.invocation_id = "mcp-" + s.server.name + "-" + std::to_string(::getpid()) + "-" + std::to_string(++instances);
  context.tool_name = "mcp server " + s.server.name;
  backend::SessionStdioOptions o;
  o.stderr_ring_bytes = std::max<std::size_t>(s.max_log_bytes, 4096);
  o.on_end = s.on_end;
  auto session = backend::SessionStdioSandbox::start(*s.sessions, request, context, {s.server.command, {}, ""}, std::move(o));
  if (!session) return session.error();
  return std::unique_ptr<backend::StdioSandbox>(std::move(*session));
}

// The server's sandbox: gVisor's where its tier runs on gVisor, a session's where it runs
// sessions of another backend, else the local one.
Result<std::unique_ptr<backend::StdioSandbox>> start_sandbox(const InstanceSetup& s, sandbox::Spec spec,
                                                             const egress::EgressRules& rules) {
  if (s.sessions && !s.gvisor) return start_in_session(s, spec, rules);
  if (s.gvisor) {
    auto session = backend::GvisorStdioSession::start(std::move(spec), rules, gvisor_options(s));
    if (!session) return session.error();
    return std::unique_ptr<backend::StdioSandbox>(std::move(*session));
  }
  auto session = backend::LocalSession::start(std::move(spec), rules, session_options(s));
  if (!session) return session.error();
  return std::unique_ptr<backend::StdioSandbox>(std::move(*session));
}

}  // namespace

Result<std::shared_ptr<ServerInstance>> ServerInstance::start(InstanceSetup setup) {
  std::shared_ptr<ServerInstance> inst(new ServerInstance());
  inst->setup_ = std::move(setup);
  const auto& s = inst->setup_;
  sandbox::Spec spec = server_spec(s.server, s.limits);
  spec.limits.setup_time = s.start_timeout;  // its preparation counts against its start too
  egress::EgressRules rules = s.server.network;
  if (s.credentials) {
    for (const auto& [name, value] : s.credentials->env) spec.env[name] = value;
    for (const auto& h : s.credentials->inject) rules.inject.push_back(h);
  }
  auto session = start_sandbox(s, std::move(spec), rules);
  if (!session) return failed(std::string("starting its ") + (s.gvisor ? "gVisor " : s.sessions ? "session " : "") +
                              "sandbox: " + session.error().message);
  inst->session_ = std::move(*session);

  StdioClientOptions co;
  co.on_tools_changed = s.on_tools_changed;
  // A server that spoke nonsense is ended at once, whether or not a call is waiting.
  co.on_closed = [session = inst->session_.get()](const Error&, bool hung_up) {
    if (!hung_up) session->kill();
  };
  inst->client_ = std::make_unique<StdioClient>(inst->session_->take_stdin(),
                                                inst->session_->take_stdout(), std::move(co));
  // A failed step ends the instance here (~ServerInstance); the verdict says why it died.
  auto version = inst->client_->initialize(s.start_timeout);
  if (!version) {
    inst->end_after_failure();
    return failed("initialize: " + version.error().message + " (" +
                  inst->end_verdict(std::chrono::seconds(5)) + ")");
  }
  auto listed = inst->relist();
  if (!listed) {
    inst->kill();
    return failed("tools/list: " + listed.error().message);
  }
  return inst;
}

ServerInstance::~ServerInstance() {
  if (session_) session_->kill();
  client_.reset();   // the reader sees EOF, or is woken
  session_.reset();  // joins the supervisor once the sandbox is gone
  setup_.credentials.reset();  // revoked (when no call still holds them) now that it is gone
}

Result<std::vector<ListedTool>> ServerInstance::relist() {
  auto listed = client_->list_tools(setup_.start_timeout);
  if (!listed) return listed.error();
  std::lock_guard lock(mu_);
  tools_ = *listed;
  return listed;
}

std::vector<ListedTool> ServerInstance::tools() const {
  std::lock_guard lock(mu_);
  return tools_;
}

std::optional<ListedTool> ServerInstance::find_tool(const std::string& name) const {
  std::lock_guard lock(mu_);
  for (const auto& t : tools_)
    if (t.name == name) return t;
  return std::nullopt;
}

// The first call into an idle instance starts the count: what the server used while no call
// was in it (its own start, background work) is nobody's. Where the counter is read only on
// demand (Kubernetes: read_cpu_now, one pods/exec) the mark is the last reading, taken when
// the previous call ended, so the server's background work between calls goes to the next
// call; the instance's first call reads afresh, so that its start is still nobody's.
void ServerInstance::call_began() {
  std::lock_guard lock(charge_mu_);
  if (charged_.calls++ > 0) return;
  charged_.mark = std::exchange(charged_.began_once, true) ? session_->cpu_used() : session_->read_cpu_now();
}

// A call ends: it is given the instance's CPU since the last call ended or, if none did since
// the instance was idle, since the first of the calls now in it began. Overlapping calls share
// one count, so each CPU-second goes to one call (all of them run for one owner, whose quota
// is the same). Whole milliseconds are given; the rest stays for the next call.
std::optional<sandbox::Usage> ServerInstance::call_ended(std::chrono::steady_clock::time_point began) {
  sandbox::Usage usage;
  usage.wall_ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 std::chrono::steady_clock::now() - began).count());
  std::lock_guard lock(charge_mu_);
  --charged_.calls;
  const auto now = session_->read_cpu_now();  // Kubernetes: one pods/exec, serialised with the other calls' ends
  if (!now || !charged_.mark) return std::nullopt;  // not measured: no CPU figure is better than 0
  auto& mark = *charged_.mark;
  usage.cpu_user_ms = (now->user_ns - std::min(now->user_ns, mark.user_ns)) / 1'000'000;
  usage.cpu_sys_ms = (now->sys_ns - std::min(now->sys_ns, mark.sys_ns)) / 1'000'000;
  mark.user_ns += usage.cpu_user_ms * 1'000'000;
  mark.sys_ns += usage.cpu_sys_ms * 1'000'000;
  return usage;
}

bool ServerInstance::offers(std::string_view capability) const {
  const auto capabilities = client_->capabilities();
  const auto it = capabilities.find(std::string(capability));
  return it != capabilities.end() && it->is_object();
}

Result<nlohmann::json> ServerInstance::list_content(const ContentListing& listing) {
  if (!offers(listing.capability)) return nlohmann::json::array();
  return client_->list_items(std::string(listing.method), std::string(listing.items), setup_.server.call_timeout);
}

Result<pipeline::McpToolResult> ServerInstance::call(const pipeline::McpToolCall& call) {
  if (!call.method.empty()) {
    const std::string_view needs = call.method == "prompts/get" ? "prompts" : "resources";
    if (!offers(needs))
      return Error::make("not_offered", "mcp server " + setup_.server.name + " offers no " + std::string(needs) +
                                                   " (its initialize result has no " + std::string(needs) + " capability)");
  }
  const auto began = std::chrono::steady_clock::now();
  call_began();
  const auto mark = session_->stderr_mark();
  ToolCallRequest request;
  request.name = call.remote_tool;
  request.arguments = call.arguments;
  request.timeout = std::min(call.timeout, setup_.server.call_timeout);
  request.cancel = call.cancel;
  request.progress = call.progress;
  auto result = call.method.empty() ? client_->call_tool(request) : client_->call_method(call.method, request);
  auto used = call_ended(began);
  if (call.usage) *call.usage = std::move(used);
  if (result) result->server_log = session_->stderr_since(mark, setup_.max_log_bytes);
  if (result && setup_.credentials) {
    result->credential_values = setup_.credentials->values;
    result->credential_uses = setup_.credentials->uses;
  }
  return result;
}

creds::Clock::time_point ServerInstance::credentials_expire_at() const {
  return setup_.credentials ? setup_.credentials->expires_at : creds::Clock::time_point::max();
}

bool ServerInstance::credentials_expire_before(creds::Clock::time_point t) const {
  return credentials_expire_at() < t;
}

void ServerInstance::kill() { session_->kill(); }

void ServerInstance::end_after_failure() {
  if (client_->server_hung_up() && session_->wait_for_end(std::chrono::seconds(5))) return;
  session_->kill();
}

bool ServerInstance::ended() const { return session_->ended(); }

pid_t ServerInstance::pid() const { return session_->pid(); }

std::string ServerInstance::end_verdict(std::chrono::milliseconds timeout) const {
  auto outcome = session_->wait_for_end(timeout);
  if (!outcome) return "its sandbox is still running";
  return "its sandbox ended: " + std::string(sandbox::verdict_name(outcome->verdict)) + ": " +
         outcome->message;
}

}  // namespace airlock::mcp
