#include "server/core/generation_watch.hpp"

namespace airlock::server {

void GenerationWatch::listen(Listener listener) {
  std::lock_guard lock(mu_);
  listeners_.push_back(std::move(listener));
}

void GenerationWatch::published() const {
  std::vector<Listener> listeners;
  {
    std::lock_guard lock(mu_);
    listeners = listeners_;
  }
  for (const auto& l : listeners) l();
}

}  // namespace airlock::server
