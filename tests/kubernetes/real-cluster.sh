#!/usr/bin/env bash
# The kubernetes backend against a real cluster (kind, k3s...): the RealCluster.* tests of
# kubernetes_backend_test, in the namespace AIRLOCK_TOOLS_NAMESPACE (default airlock-tools,
# created if missing; pods run busybox:1.36). Skipped (exit 77) without KUBECONFIG.
#   KUBECONFIG=~/.kube/config tests/kubernetes/real-cluster.sh build/tests/kubernetes/kubernetes_backend_test
set -euo pipefail
test_binary="${1:?usage: real-cluster.sh PATH/TO/kubernetes_backend_test}"
if [[ -z "${KUBECONFIG:-}" ]]; then
  echo "real-cluster.sh: KUBECONFIG is not set: skipped (no cluster is reachable from here; see docs/kubernetes.md)"
  exit 77
fi
namespace="${AIRLOCK_TOOLS_NAMESPACE:-airlock-tools}"
if command -v kubectl >/dev/null; then
  kubectl get namespace "$namespace" >/dev/null 2>&1 || kubectl create namespace "$namespace"
fi
AIRLOCK_REAL_CLUSTER=1 AIRLOCK_TOOLS_NAMESPACE="$namespace" "$test_binary" --gtest_filter='RealCluster.*'
if command -v kubectl >/dev/null; then
  left="$(kubectl -n "$namespace" get pods,secrets,networkpolicies -l app.kubernetes.io/managed-by=airlock -o name)"
  if [[ -n "$left" ]]; then echo "left behind: $left"; exit 1; fi
fi
