// Where the Kubernetes API server is and how Airlock proves who it is: from a kubeconfig file
// (its current context) or, in a pod, from the service account Kubernetes mounts.
#pragma once

#include <string>

#include "common/result.hpp"

namespace airlock::backend::kubernetes {

struct KubeEndpoint {
  std::string host;          // the API server's name or address, checked against its certificate
  std::string port = "443";
  std::string ca_pem;        // the CA that signs the API server's certificate
  std::string bearer_token;  // "" when a client certificate authenticates
  std::string client_cert_pem, client_key_pem;
  std::string context;       // the kubeconfig context used, for messages
};

// The kubeconfig at `path`: its current-context's cluster (server, certificate-authority or
// -data) and user (token, tokenFile, client-certificate/key or -data). Anything it cannot use
// (exec plugins, insecure-skip-tls-verify, an http:// server) is an error naming it.
Result<KubeEndpoint> load_kubeconfig(const std::string& path);

// In a pod: KUBERNETES_SERVICE_HOST/PORT and the token and CA under `account_dir`.
Result<KubeEndpoint> load_in_cluster(
    const std::string& account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

}  // namespace airlock::backend::kubernetes
