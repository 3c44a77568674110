// Starts the API-server stand-in (standin/server.mjs, Node.js) with a throwaway PKI and token,
// writes a kubeconfig pointing at it, and speaks to its control endpoints. A stand-in, not a
// cluster: see docs/kubernetes.md.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/kubernetes/kube_client.hpp"
#include "tls_test_support.hpp"

namespace airlock::backend::kubernetes::test {

class StandIn {
 public:
  StandIn();  // started; throws std::runtime_error when it cannot be
  ~StandIn();

  // A kubeconfig for it; `token` "" uses the right one.
  std::string write_kubeconfig(const std::string& token = "", const std::string& host = "127.0.0.1") const;
  KubeEndpoint endpoint() const;
  nlohmann::json state();                       // GET /standin/state
  void inject(const nlohmann::json& fault);     // POST /standin/faults
  const std::string& dir() const { return pki_.dir(); }
  const std::string& token() const { return token_; }
  int port() const { return port_; }

 private:
  server::test::TestPki pki_;
  std::string token_ = "standin-token-7f3a";
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int port_ = 0;
  std::unique_ptr<KubeClient> control_;
};

}  // namespace airlock::backend::kubernetes::test
