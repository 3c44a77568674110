// Follows one pod to its end with the API's watch (no polling): a GET for the current state
// and its resourceVersion, then a watch from there that the server ends at our deadline
// (timeoutSeconds); a watch that breaks mid-stream is re-listed and re-watched.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/kubernetes/kube_api.hpp"

namespace airlock::backend::kubernetes {

struct PodEnd {
  enum class Kind {
    finished,       // phase Succeeded or Failed
    image_error,    // the image cannot be pulled: the pod will never start
    config_error,   // the container cannot be made (CreateContainerConfigError, ...)
    never_started,  // still Pending at the deadline (unschedulable, ...)
    overran,        // running at the deadline (activeDeadlineSeconds did not end it)
    cancelled,      // the breaker broke the watch
    vanished,       // deleted by someone else
    api_failed,     // the API kept failing
  } kind = Kind::api_failed;
  nlohmann::json pod;   // as last seen
  std::string message;  // for every kind but finished
};

PodEnd watch_pod(KubeApi& api, const std::string& name,
                 std::chrono::steady_clock::time_point deadline, WatchBreaker& breaker);

}  // namespace airlock::backend::kubernetes
