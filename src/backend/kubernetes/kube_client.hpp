// The Kubernetes API over HTTPS (Boost.Beast + OpenSSL): one TLS connection per request, the
// server's certificate checked against the cluster's CA and name, a bearer token or a client
// certificate. Requests are plain; watches stream JSON lines from a chunked response.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/kubernetes/kube_config.hpp"
#include "common/result.hpp"
#include "common/socket_breaker.hpp"

namespace airlock::backend::kubernetes {

struct KubeResponse {
  unsigned status = 0;
  std::string body;
  std::optional<std::chrono::seconds> retry_after;  // from a 429's Retry-After
  // The Status object's message when the body is one, else the start of the body.
  std::string status_message() const;
};

// Lets another thread break a watch that is blocked reading (a cancelled run, shutdown).
using WatchBreaker = SocketBreaker;

class KubeClient {
 public:
  explicit KubeClient(KubeEndpoint endpoint);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // One request. A transport or TLS failure is an Error; any HTTP status is a response.
  Result<KubeResponse> request(const std::string& method, const std::string& target,
                               const std::string& body = "",
                               const std::string& content_type = "application/json");

  // GET `target` (a ?watch=true URL) and call on_event for each JSON line until the server
  // ends the stream, on_event returns false or `breaker` breaks it. Returns the HTTP status
  // (200 for a stream that was read), or an Error when the connection failed.
  Result<unsigned> watch(const std::string& target,
                         const std::function<bool(const nlohmann::json&)>& on_event,
                         WatchBreaker* breaker);

  const KubeEndpoint& endpoint() const { return endpoint_; }

  // The TLS set-up (kube_connection.hpp), for a connection of another kind (pods/exec).
  struct Tls;
  Tls& tls() { return *tls_; }

 private:
  KubeEndpoint endpoint_;
  Tls* tls_;
};

}  // namespace airlock::backend::kubernetes
