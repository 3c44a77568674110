#include "mcp/gateway.hpp"

#include <algorithm>

#include "mcp/gateway_impl.hpp"
#include "pipeline/stages/execute.hpp"
#include "mcp/server_spec.hpp"

namespace airlock::mcp {
namespace {

Error gateway_failed(const std::string& message) { return Error::make("tool_server_failed", message); }
Error stopped_error() { return Error::make("stopped", "the MCP gateway is shutting down"); }

std::string who(const Slot& s) { return "MCP server " + s.server + " (for " + s.owner + ")"; }

std::chrono::milliseconds backoff_after(int failures) {
  auto delay = kFirstBackoff;
  for (int i = 1; i < failures && delay < kMaxBackoff; ++i) delay *= 2;
  return std::min(delay, kMaxBackoff);
}

std::shared_ptr<Slot> slot_for(Gateway::Impl& g, const std::string& server,
                               const std::string& owner) {
  auto& slot = g.slots[{server, owner}];
  if (!slot) {
    slot = std::make_shared<Slot>();
    slot->server = server;
    slot->owner = owner;
  }
  return slot;
}

}  // namespace

std::shared_ptr<ServerInstance> Gateway::Impl::detach(Slot& slot, bool crash,
                                                      const std::string& why) {
  auto inst = std::move(slot.instance);
  if (inst && !crash) inst->mark_retired();
  if (crash) {
    ++slot.failures;
    slot.retry_at = Clock::now() + backoff_after(slot.failures);
    slot.last_failure = why;
  }
  return inst;
}

void Gateway::Impl::poke() {
  std::lock_guard lock(mu);
  poked = true;
  cv.notify_all();
}

// The slot's live instance, or a new one; a crashed one is replaced once its backoff is over.
Result<std::shared_ptr<ServerInstance>> Gateway::Impl::ensure_running(
    const std::shared_ptr<Slot>& slot, const pipeline::McpToolCall* call) {
  std::unique_lock start_lock(slot->start_mu);
  std::shared_ptr<ServerInstance> dead;
  std::vector<std::shared_ptr<ServerInstance>> made_room;  // idle instances stopped for this one
  policy::McpServerConfig config;
  {
    std::lock_guard lock(mu);
    if (stopped) return stopped_error();
    if (slot->instance && !slot->instance->ended() && call &&
        slot->instance->credentials_expire_before(creds::Clock::now() + call->timeout +
                                                  kCredentialRenewMargin))
      dead = detach(*slot, false, "");  // its credentials would run out during the call
    if (slot->instance && !slot->instance->ended()) return slot->instance;
    if (slot->instance)
      dead = detach(*slot, true, slot->instance->end_verdict(std::chrono::milliseconds(0)));
    const auto now = Clock::now();
    if (now < slot->retry_at) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(slot->retry_at - now);
      return gateway_failed(who(*slot) + " failed (" + slot->last_failure + "); it is restarted in " +
                            std::to_string(left.count()) + " ms, not before");
    }
    auto it = servers.find(slot->server);
    if (it == servers.end()) return gateway_failed("no MCP server named " + slot->server + " is configured");
    config = it->second;
    if (auto room = make_room(1, &slot->server, made_room); !room) return room.error();
  }
  for (auto& inst : made_room) inst->kill();
  made_room.clear();
  dead.reset();  // a replaced instance ends once a call still in it is done
  auto started = start_instance(slot, config, call);
  start_lock.unlock();  // `listed` may call into the gateway: no lock of ours is held
  if (started && options.listed) options.listed(slot->server, (*started)->tools());
  if (started) {
    std::lock_guard lock(mu);
    if (slot->instance == *started) slot->first_listing_told = true;
    poked = true;  // a re-listing it asked for meanwhile runs now
    cv.notify_all();
  }
  return started;
}

Result<std::shared_ptr<ServerInstance>> Gateway::Impl::start_instance(
    const std::shared_ptr<Slot>& slot, const policy::McpServerConfig& config,
    const pipeline::McpToolCall* call) {
  if (auto refused = options.refused_tiers.find(config.risk); refused != options.refused_tiers.end())
    return Error::make("tier_unavailable", "MCP server " + config.name + " is " +
                                               std::string(policy::risk_name(config.risk)) +
                                               " risk: " + refused->second);
  InstanceSetup setup;
  if (auto gvisor = options.gvisor_tiers.find(config.risk); gvisor != options.gvisor_tiers.end())
    setup.gvisor = gvisor->second;
  else if (auto sessions = options.session_tiers.find(config.risk); sessions != options.session_tiers.end())
    setup.sessions = sessions->second;
  setup.placement = pipeline::placement_for(config.placement);
  if (call && call->lease_credentials) {
    // Leased for this call's owner; a refusal is the owner's, not the server's: no backoff.
    auto leased = call->lease_credentials();
    if (!leased) return leased.error();
    setup.credentials = std::move(*leased);
  }
  setup.server = config;
  setup.owner = slot->owner;
  setup.limits = server_limits(config, options.tiers);
  if (options.forbidden) setup.forbidden = *options.forbidden;
  setup.registry = options.registry;
  setup.start_timeout = config.start_timeout;
  setup.max_log_bytes = options.max_log_bytes;
  setup.on_end = [this] { poke(); };
  setup.on_tools_changed = [this, weak = std::weak_ptr<Slot>(slot)] {
    if (auto s = weak.lock()) {
      std::lock_guard lock(mu);
      s->relist = true;
      poked = true;
      cv.notify_all();
    }
  };
  auto started = ServerInstance::start(std::move(setup));
  std::unique_lock lock(mu);
  if (!started) {
    (void)detach(*slot, true, started.error().message);
    return gateway_failed(who(*slot) + " could not start: " + started.error().message);
  }
  if (stopped) {
    lock.unlock();
    return stopped_error();  // the instance goes with `started`
  }
  slot->instance = *started;
  slot->first_listing_told = false;
  slot->config = config;
  slot->last_used = Clock::now();
  poked = true;
  cv.notify_all();
  lock.unlock();
  return *started;
}

// The call failed because the server did (closed, nonsense, unwritable): it is ended, and the
// error names how its sandbox ended.
Error Gateway::Impl::crashed(const std::shared_ptr<Slot>& slot,
                             const std::shared_ptr<ServerInstance>& inst, const Error& error) {
  inst->end_after_failure();
  const std::string verdict = inst->end_verdict(std::chrono::seconds(10));
  std::shared_ptr<ServerInstance> dead;
  {
    std::lock_guard lock(mu);
    if (stopped) return stopped_error();
    if (inst->retired())  // stopped on purpose meanwhile (configure)
      return gateway_failed(who(*slot) + " was stopped while the call ran (its config changed)");
    // The reaper may have retired it first (its sandbox ended): counted once.
    if (slot->instance == inst) dead = detach(*slot, true, error.message + "; " + verdict);
  }
  return gateway_failed(who(*slot) + " failed during the call: " + error.message + "; " + verdict);
}

Result<pipeline::McpToolResult> Gateway::Impl::call_in(const std::shared_ptr<Slot>& slot,
                                                       const pipeline::McpToolCall& call) {
  auto inst = ensure_running(slot, &call);
  if (!inst) return inst.error();
  if (call.method.empty()) {  // a listed tool: its pin must still hold (a content method has none)
    auto tool = (*inst)->find_tool(call.remote_tool);
    if (!tool)
      return gateway_failed(who(*slot) + " does not list a tool named " + call.remote_tool);
    if (options.admitted) {
      if (auto ok = options.admitted(slot->server, *tool); !ok)
        return Error::make("tool_disabled", ok.error().message);
    }
  }
  auto result = (*inst)->call(call);
  if (!result && result.error().code == "tool_server_failed")
    return crashed(slot, *inst, result.error());
  if (result) {
    std::lock_guard lock(mu);
    slot->failures = 0;
  }
  return result;
}

Gateway::Gateway(GatewayOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->reaper = std::thread([impl = impl_.get()] { impl->reap_loop(); });
  impl_->relister = std::thread([impl = impl_.get()] { impl->relist_loop(); });
}

Gateway::~Gateway() { shutdown(); }

void Gateway::configure(const std::vector<policy::McpServerConfig>& servers) {
  std::vector<std::shared_ptr<ServerInstance>> retired;
  {
    std::lock_guard lock(impl_->mu);
    impl_->servers.clear();
    for (const auto& s : servers) impl_->servers[s.name] = s;
    for (auto it = impl_->slots.begin(); it != impl_->slots.end();) {
      Slot& slot = *it->second;
      auto now = impl_->servers.find(slot.server);
      const bool keep = now != impl_->servers.end() &&
                        (!slot.instance || same_server(now->second, slot.config));
      if (!keep && slot.instance) retired.push_back(impl_->detach(slot, false, ""));
      if (!keep) {
        slot.failures = 0;  // a new config starts afresh
        slot.retry_at = {};
      }
      if (now == impl_->servers.end() && slot.active == 0)
        it = impl_->slots.erase(it);
      else
        ++it;
    }
  }
  for (auto& inst : retired) inst->kill();
}

void Gateway::set_max_instances(std::size_t total) {
  std::lock_guard lock(impl_->mu);
  impl_->max_instances = std::max<std::size_t>(total, 1);
  impl_->poked = true;  // the reaper stops idle instances over a lowered cap
  impl_->cv.notify_all();
}

template <typename T>
Result<T> Gateway::Impl::with_listing_instance(const std::string& server,
                                               const std::function<Result<T>(ServerInstance&)>& use) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu);
    if (stopped) return stopped_error();
    if (!servers.count(server)) return gateway_failed("no MCP server named " + server + " is configured");
    slot = slot_for(*this, server, kListingOwner);
    ++slot->active;
  }
  auto inst = ensure_running(slot, nullptr);
  Result<T> out = inst ? use(**inst) : Result<T>(inst.error());
  if (inst) inst->reset();
  std::lock_guard lock(mu);
  --slot->active;
  slot->last_used = Clock::now();
  poked = true;
  cv.notify_all();
  return out;
}

Result<std::vector<ListedTool>> Gateway::list_tools(const std::string& server) {
  return impl_->with_listing_instance<std::vector<ListedTool>>(
      server, [](ServerInstance& inst) -> Result<std::vector<ListedTool>> { return inst.tools(); });
}

Result<nlohmann::json> Gateway::list_content(const std::string& server, const ContentListing& listing) {
  return impl_->with_listing_instance<nlohmann::json>(
      server, [&](ServerInstance& inst) { return inst.list_content(listing); });
}

Result<pipeline::McpToolResult> Gateway::call(const pipeline::McpToolCall& call) {
  // Fail closed: calls without an owner would share one process.
  if (call.owner.empty() || call.owner == kListingOwner)
    return Error::make("invalid_argument", "an MCP gateway call needs the owner it runs for");
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopped) return stopped_error();
    if (!impl_->servers.count(call.server))
      return gateway_failed("no MCP server named " + call.server + " is configured");
    slot = slot_for(*impl_, call.server, call.owner);
    ++slot->active;
  }
  auto result = impl_->call_in(slot, call);  // every instance reference is gone after it
  std::lock_guard lock(impl_->mu);
  --slot->active;
  slot->last_used = Clock::now();
  impl_->poked = true;
  impl_->cv.notify_all();
  return result;
}

std::vector<std::string> Gateway::running() const {
  std::lock_guard lock(impl_->mu);
  std::vector<std::string> out;
  for (const auto& [key, slot] : impl_->slots)
    if (slot->instance && !slot->instance->ended()) out.push_back(key.first + " " + key.second);
  return out;
}

void Gateway::shutdown() {
  std::vector<std::shared_ptr<ServerInstance>> retired;
  {
    std::unique_lock lock(impl_->mu);
    if (impl_->stopped && !impl_->reaper.joinable() && !impl_->relister.joinable()) return;
    impl_->stopped = true;
    for (auto& [key, slot] : impl_->slots)
      if (slot->instance) retired.push_back(impl_->detach(*slot, false, ""));
    impl_->cv.notify_all();
  }
  for (auto& inst : retired) inst->kill();
  retired.clear();  // destroyed here unless a call still holds one; it ends soon (killed)
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] {
    return std::all_of(impl_->slots.begin(), impl_->slots.end(),
                       [](const auto& kv) { return kv.second->active == 0; });
  });
  lock.unlock();
  if (impl_->reaper.joinable()) impl_->reaper.join();
  if (impl_->relister.joinable()) impl_->relister.join();
}

}  // namespace airlock::mcp
