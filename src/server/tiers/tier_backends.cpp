#include "server/tiers/tier_backends.hpp"

#include "backend/gvisor_backend.hpp"
#include "backend/gvisor_session.hpp"
#include "backend/kubernetes/kubernetes_backend.hpp"

namespace airlock::server {
namespace {

policy::BackendKind default_kind(policy::Risk risk) {
  return risk == policy::Risk::low || risk == policy::Risk::medium ? policy::BackendKind::local
                                                                   : policy::BackendKind::gvisor;
}

}  // namespace

Result<std::unique_ptr<TierBackends>> TierBackends::create(const policy::Config& config,
                                                           const BackendServices& services) {
  auto t = std::unique_ptr<TierBackends>(new TierBackends());
  t->local_ = std::make_unique<backend::LocalBackend>(services.registry, services.forbidden,
                                                    config.server.max_warm_templates);
  // Tiers with the same backend section share one backend.
  std::vector<std::pair<policy::TierBackend, backend::Backend*>> made;
  for (auto risk : {policy::Risk::low, policy::Risk::medium, policy::Risk::high, policy::Risk::critical}) {
    const auto found = config.tier_backends.find(risk);
    const policy::TierBackend section = found != config.tier_backends.end() ? found->second
                                                                            : policy::TierBackend{};
    const policy::BackendKind kind = section.kind.value_or(default_kind(risk));
    const std::string tier = "tiers." + std::string(policy::risk_name(risk)) + ".backend";
    const std::string name(policy::backend_kind_name(kind));
    if (kind == policy::BackendKind::local) {
      if (risk != policy::Risk::low && risk != policy::Risk::medium)
        t->tiers_[risk] = t->local_.get();
      t->session_tiers_[risk] = t->local_.get();
      t->description_.push_back(std::string(policy::risk_name(risk)) + ": local");
      continue;
    }
    policy::TierBackend key = section;
    key.kind = kind;
    backend::Backend* existing = nullptr;
    for (const auto& [k, b] : made)
      if (k == key) existing = b;
    if (!existing) {
      auto b = kind == policy::BackendKind::gvisor ? make_gvisor_backend(section.gvisor, services)
                                                   : make_kubernetes_backend(section.kubernetes, services);
      if (!b) {
        if (section.kind)  // configured: the daemon does not start without it
          return Error::make("backend", tier + ": " + name + ": " + b.error().message);
        t->unavailable_[risk] = "the " + name + " backend cannot run here: " + b.error().message;
        t->sessions_unavailable_[risk] = t->unavailable_[risk];
        t->description_.push_back(std::string(policy::risk_name(risk)) + ": unavailable (" +
                                  name + ": " + b.error().message + ")");
        continue;
      }
      existing = b->get();
      t->owned_.push_back(std::move(*b));
      made.emplace_back(key, existing);
    }
    t->tiers_[risk] = existing;
    t->add_sessions(risk, kind, existing);
    t->description_.push_back(std::string(policy::risk_name(risk)) + ": " + std::string(existing->name()));
  }
  return t;
}

// The session backend of a tier on `made`: one per backend, shared by the tiers that share it.
void TierBackends::add_sessions(policy::Risk risk, policy::BackendKind kind, backend::Backend* made) {
  if (auto found = owned_sessions_.find(made); found != owned_sessions_.end()) {
    session_tiers_[risk] = found->second.get();
    return;
  }
  if (kind == policy::BackendKind::gvisor) {
    auto* gvisor = dynamic_cast<backend::GvisorBackend*>(made);
    if (!gvisor) return;
    auto sessions = std::make_unique<backend::GvisorSessionBackend>(
        backend::GvisorSessionOptions{gvisor->invocation(), gvisor->state_dir(), gvisor->forbidden()});
    session_tiers_[risk] = sessions.get();
    owned_sessions_[made] = std::move(sessions);
    return;
  }
  if (kind == policy::BackendKind::kubernetes) {  // a pod per session (kube_session.hpp)
    auto* kubernetes = dynamic_cast<backend::kubernetes::KubernetesBackend*>(made);
    if (!kubernetes) return;
    auto sessions = kubernetes->make_session_backend();
    session_tiers_[risk] = sessions.get();
    owned_sessions_[made] = std::move(sessions);
    return;
  }
  sessions_unavailable_[risk] = "its backend runs no sessions";
}

Result<backend::SessionBackend*> TierBackends::sessions(policy::Risk risk) const {
  if (auto found = session_tiers_.find(risk); found != session_tiers_.end()) return found->second;
  const auto why = sessions_unavailable_.find(risk);
  return Error::make("setup_error", "no backend runs sessions of risk " + std::string(policy::risk_name(risk)) +
                                        " here: " + (why != sessions_unavailable_.end() ? why->second : "none is configured"));
}

std::vector<std::string> TierBackends::describe() const { return description_; }

Status TierBackends::abandon(const std::string& invocation_id) {
  Status first;
  for (auto& b : owned_)
    if (Status s = b->abandon(invocation_id); !s && first)
      first = Error::make(s.error().code, std::string(b->name()) + ": " + s.error().message);
  return first;
}

void TierBackends::shutdown() {
  local_->shutdown();
  for (auto& b : owned_) b->shutdown();
}

}  // namespace airlock::server
