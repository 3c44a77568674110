// Who hears that the daemon published a new generation: a server's listing arrived or changed,
// a pin was broken (its tool left the registry) or approved and reloaded, a config reload. The
// MCP server turns it into notifications/tools/list_changed for its connected clients.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

namespace airlock::server {

class GenerationWatch {
 public:
  using Listener = std::function<void()>;
  // Listeners are kept for the watch's life; one that outlives its owner checks for itself
  // (a weak_ptr) that the owner is still there.
  void listen(Listener listener);
  // Tells every listener, outside the lock, on the publisher's thread.
  void published() const;

 private:
  mutable std::mutex mu_;
  std::vector<Listener> listeners_;
};

}  // namespace airlock::server
