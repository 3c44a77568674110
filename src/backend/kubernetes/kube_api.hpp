// The calls the backend makes, over KubeClient: 429 answered with a bounded wait for its
// Retry-After, and every other failure an Error naming the object, the status and the
// server's Status message (401, 403, 422: setup errors the operator can act on).
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/kubernetes/kube_client.hpp"

namespace airlock::backend::kubernetes {

struct RetryPolicy {
  int max_attempts = 4;                          // one request and three retries after 429
  std::chrono::seconds max_retry_after{10};      // a longer Retry-After is cut to this
  std::chrono::milliseconds default_retry{500};  // a 429 without Retry-After
};

class KubeApi {
 public:
  KubeApi(KubeClient& client, std::string namespace_name, RetryPolicy retry = {})
      : client_(client), namespace_(std::move(namespace_name)), retry_(retry) {}

  // POST to the namespace's `resource` (pods, secrets, networkpolicies); the created object.
  // A 409 (the name is taken) is an Error with code "conflict".
  Result<nlohmann::json> create(const std::string& resource, const nlohmann::json& object);
  Result<nlohmann::json> get(const std::string& resource, const std::string& name);
  Result<nlohmann::json> list(const std::string& resource, const std::string& label_selector);
  Result<nlohmann::json> json_patch(const std::string& resource, const std::string& name,
                                    const nlohmann::json& patch);
  // Deletes now (grace 0, owned objects in the background); a 404 counts as deleted.
  Status remove(const std::string& resource, const std::string& name);
  // The container's log (stdout), at most limit_bytes.
  Result<std::string> logs(const std::string& pod, std::uint64_t limit_bytes);

  std::string path(const std::string& resource, const std::string& name = "") const;
  const std::string& namespace_name() const { return namespace_; }
  KubeClient& client() { return client_; }

 private:
  Result<KubeResponse> send(const std::string& method, const std::string& target,
                            const std::string& body, const std::string& content_type);
  KubeClient& client_;
  std::string namespace_;
  RetryPolicy retry_;
};

// "POST pods/NAME: 403 Forbidden: <the server's message>"
Error api_error(const std::string& what, const KubeResponse& response);

}  // namespace airlock::backend::kubernetes
