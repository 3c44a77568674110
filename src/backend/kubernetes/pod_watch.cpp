#include "backend/kubernetes/pod_watch.hpp"

#include <optional>

namespace airlock::backend::kubernetes {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kMaxFruitlessWatches = 20;  // re-watches in a row that saw nothing new

const json* tool_status(const json& pod) {
  const json* statuses = pod.contains("status") ? &pod["status"] : nullptr;
  if (!statuses || !statuses->contains("containerStatuses")) return nullptr;
  for (const auto& status : (*statuses)["containerStatuses"])
    if (status.value("name", "") == "tool") return &status;
  return nullptr;
}

std::optional<PodEnd> waiting_end(const json& pod) {
  const json* status = tool_status(pod);
  if (!status || !status->contains("state") || !(*status)["state"].contains("waiting")) return std::nullopt;
  const json& waiting = (*status)["state"]["waiting"];
  std::string reason = waiting.value("reason", "");
  std::string detail = waiting.value("message", "");
  std::string image = status->value("image", "");
  if (reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "InvalidImageName" ||
      reason == "ErrImageNeverPull")
    return PodEnd{PodEnd::Kind::image_error, pod,
                  "the image " + image + " cannot be pulled (" + reason + (detail.empty() ? "" : ": " + detail) + ")"};
  if (reason == "CreateContainerConfigError" || reason == "CreateContainerError" || reason == "RunContainerError")
    return PodEnd{PodEnd::Kind::config_error, pod, "the container cannot be made (" + reason + ": " + detail + ")"};
  return std::nullopt;
}

// The end this state of the pod is, if it is one.
std::optional<PodEnd> end_of(const json& pod) {
  std::string phase = pod.contains("status") ? pod["status"].value("phase", "") : "";
  if (phase == "Succeeded" || phase == "Failed") return PodEnd{PodEnd::Kind::finished, pod, ""};
  return waiting_end(pod);
}

PodEnd at_deadline(const json& pod) {
  std::string phase = pod.contains("status") ? pod["status"].value("phase", "") : "";
  if (phase == "Running") return PodEnd{PodEnd::Kind::overran, pod, "the pod was still running at its deadline"};
  std::string why;
  if (pod.contains("status") && pod["status"].contains("conditions"))
    for (const auto& c : pod["status"]["conditions"])
      if (c.value("status", "") == "False" && c.contains("message")) why = ": " + c["message"].get<std::string>();
  return PodEnd{PodEnd::Kind::never_started, pod, "the pod was still " + (phase.empty() ? "Pending" : phase) + " at its deadline" + why};
}

std::string watch_target(KubeApi& api, const std::string& name, const std::string& version, long seconds) {
  return api.path("pods") + "?watch=true&allowWatchBookmarks=false&fieldSelector=metadata.name%3D" + name +
         "&resourceVersion=" + version + "&timeoutSeconds=" + std::to_string(seconds);
}

struct WatchRound {
  std::optional<PodEnd> end;
  json last;
  bool saw_event = false;
};

WatchRound watch_once(KubeApi& api, const std::string& name, const json& pod, Clock::time_point deadline,
                      WatchBreaker& breaker) {
  WatchRound round{std::nullopt, pod};
  long seconds = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now()).count() + 1;
  std::string version = pod["metadata"].value("resourceVersion", "");
  auto on_event = [&](const json& event) {
    std::string type = event.value("type", "");
    if (type == "ERROR" || !event.contains("object")) return false;  // 410 Gone and the like: re-list
    round.saw_event = true;
    round.last = event["object"];
    if (type == "DELETED") {
      round.end = PodEnd{PodEnd::Kind::vanished, round.last, "the pod was deleted while it ran"};
      return false;
    }
    round.end = end_of(round.last);
    return !round.end;
  };
  auto status = api.client().watch(watch_target(api, name, version, seconds), on_event, &breaker);
  if (status && *status != 200) round.saw_event = false;
  return round;
}

}  // namespace

PodEnd watch_pod(KubeApi& api, const std::string& name, Clock::time_point deadline, WatchBreaker& breaker) {
  int fruitless = 0;
  while (true) {
    if (breaker.broken()) return PodEnd{PodEnd::Kind::cancelled, json::object(), "the run was cancelled"};
    auto pod = api.get("pods", name);
    if (!pod) {
      if (pod.error().message.find(": 404 ") != std::string::npos)
        return PodEnd{PodEnd::Kind::vanished, json::object(), "the pod was deleted while it ran"};
      if (++fruitless > kMaxFruitlessWatches) return PodEnd{PodEnd::Kind::api_failed, json::object(), pod.error().message};
      continue;
    }
    if (auto end = end_of(*pod)) return *end;
    if (Clock::now() >= deadline) return at_deadline(*pod);
    WatchRound round = watch_once(api, name, *pod, deadline, breaker);
    if (round.end) return *round.end;
    if (breaker.broken()) return PodEnd{PodEnd::Kind::cancelled, round.last, "the run was cancelled"};
    fruitless = round.saw_event ? 0 : fruitless + 1;
    if (fruitless > kMaxFruitlessWatches && Clock::now() < deadline)
      return PodEnd{PodEnd::Kind::api_failed, round.last, "the pod's watch kept breaking without events"};
  }
}

}  // namespace airlock::backend::kubernetes
