// tiers.<risk>.backend: kubernetes: each call is one ephemeral pod in the tools namespace,
// with its own Secret and NetworkPolicy, all deleted after the call (docs/kubernetes.md).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backend/backend.hpp"
#include "backend/session_backend.hpp"
#include "backend/kubernetes/garbage_collector.hpp"
#include "backend/kubernetes/kube_api.hpp"
#include "backend/kubernetes/kube_client.hpp"
#include "backend/kubernetes/pod_objects.hpp"
#include "egress/gateway.hpp"

namespace airlock::backend::kubernetes {

struct KubernetesOptions {
  std::string namespace_name = "airlock-tools";
  std::string runtime_class;  // "": the cluster's default
  std::string image;          // for a request whose placement names none
  std::chrono::milliseconds gc_interval{60'000};
  // How long past its timeout a pod may take to be scheduled, pulled and started.
  std::chrono::milliseconds pending_allowance{120'000};
  std::string instance;  // names this daemon in the pods' annotations
  RetryPolicy retry;
  std::uint64_t max_secret_bytes = 900 * 1024;  // stdin and files (a Secret holds 1 MiB)
  // tiers.<risk>.kubernetes.egressProxy: the daemon's egress gateway, and how pods reach it
  // (host, port, cidrs; username and password are per invocation). Unset: pods reach only
  // the addresses and CIDRs their rules name.
  std::shared_ptr<egress::EgressGateway> gateway;
  ProxyRoute gateway_route;
  // The daemon's own endpoints, never reachable through the gateway.
  std::shared_ptr<const std::vector<egress::Endpoint>> forbidden;
};

class KubernetesBackend : public Backend {
 public:
  // Starts the garbage collector (its first pass runs now).
  KubernetesBackend(KubeEndpoint endpoint, KubernetesOptions options);
  ~KubernetesBackend() override;

  RunResult run(const RunRequest& request, const RunContext& context) override;
  std::string_view name() const override { return "kubernetes"; }
  bool stopping() const override { return stopping_; }
  void shutdown() override;
  Status abandon(const std::string& invocation_id) override;

  // One garbage-collection pass now (the thread runs them every gc_interval).
  GcPass collect_garbage_now();
  // The tier's sessions: a pod per session on the same cluster, namespace and options
  // (kube_session.hpp).
  std::unique_ptr<SessionBackend> make_session_backend() const;

 private:
  struct Made;  // what one run created, deleted at its end
  Result<PodPlan> plan(const RunRequest& request, const RunContext& context) const;
  // Admits the invocation to the gateway (when its rules have egress and there is one).
  Result<std::unique_ptr<egress::EgressGateway::Admission>> admit_to_gateway(
      const RunRequest& request, const RunContext& context, PodPlan& plan) const;
  Result<std::string> create_objects(PodPlan& plan, Made& made);
  RunResult follow(const PodPlan& plan, WatchBreaker& breaker);
  void delete_objects(const Made& made);
  bool is_running(const std::string& pod) const;

  KubeClient client_;
  KubernetesOptions options_;
  KubeApi api_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::map<std::string, WatchBreaker*> running_;  // pod name → its watch
  std::unique_ptr<GarbageCollector> gc_;
};

}  // namespace airlock::backend::kubernetes
