// How many server instances run at once: each server's maxInstances and the gateway's total
// (server.maxMcpServerInstances). A server process per (server, owner) means one per user and
// agent: without a cap, many users would mean as many sandboxes.
#include <optional>

#include "mcp/gateway_impl.hpp"

namespace airlock::mcp {
namespace {

bool is_running(const Slot& slot) { return slot.instance && !slot.instance->ended(); }

}  // namespace

Status Gateway::Impl::make_room(std::size_t extra, const std::string* server,
                                std::vector<std::shared_ptr<ServerInstance>>& retired) {
  // Running instances of `only` (all servers when null).
  auto count = [&](const std::string* only) {
    std::size_t n = 0;
    for (const auto& [key, slot] : slots)
      if (is_running(*slot) && (!only || slot->server == *only)) ++n;
    return n;
  };
  // Stops the idle instance of `only` used least recently; false when every one is busy.
  auto stop_idle = [&](const std::string* only) {
    std::shared_ptr<Slot> oldest;
    for (const auto& [key, slot] : slots)
      if (is_running(*slot) && slot->active == 0 && (!only || slot->server == *only) &&
          (!oldest || slot->last_used < oldest->last_used))
        oldest = slot;
    if (!oldest) return false;
    retired.push_back(detach(*oldest, false, ""));
    return true;
  };
  // Stops idle instances of `only` until `cap` leaves room for `extra` more; false when only
  // busy ones are left. The reaper (extra 0) goes on past a cap it cannot meet yet.
  auto fit = [&](const std::string* only, std::size_t cap) {
    while (count(only) + extra > cap)
      if (!stop_idle(only)) return false;
    return true;
  };
  for (const auto& [name, config] : servers) {
    if (server && name != *server) continue;
    if (!fit(&name, config.max_instances) && extra > 0)
      return Error::make("instances_full", "MCP server " + name + " runs its maxInstances (" +
                                               std::to_string(config.max_instances) +
                                               ") instances, each busy with a call; retry shortly");
  }
  if (!fit(nullptr, max_instances) && extra > 0)
    return Error::make("instances_full", "the MCP gateway runs server.maxMcpServerInstances (" +
                                             std::to_string(max_instances) +
                                             ") instances, each busy with a call; retry shortly");
  return {};
}

}  // namespace airlock::mcp
