#include "backend/kubernetes/kube_api.hpp"

#include <thread>

namespace airlock::backend::kubernetes {

using nlohmann::json;

namespace {

std::string reason_phrase(unsigned status) {
  switch (status) {
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 409: return "Conflict";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    default: return "HTTP " + std::to_string(status);
  }
}

std::string url_encode(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') out += static_cast<char>(c);
    else { out += '%'; out += hex[c >> 4]; out += hex[c & 15]; }
  }
  return out;
}

Result<json> parse_object(const std::string& what, const KubeResponse& response) {
  auto parsed = json::parse(response.body, nullptr, false);
  if (!parsed.is_object()) return Error::make("kubernetes", what + ": the API server's answer is not a JSON object");
  return parsed;
}

}  // namespace

Error api_error(const std::string& what, const KubeResponse& response) {
  std::string code = response.status == 409 ? "conflict" : "kubernetes";
  // A ResourceQuota of the namespace refused the object: "... is forbidden: exceeded quota: ..."
  if (response.status == 403 && response.status_message().find("exceeded quota") != std::string::npos)
    code = "quota_exceeded";
  return Error::make(code, what + ": " + std::to_string(response.status) + " " +
                               reason_phrase(response.status) + ": " + response.status_message());
}

std::string KubeApi::path(const std::string& resource, const std::string& name) const {
  std::string group = resource == "networkpolicies" ? "/apis/networking.k8s.io/v1" : "/api/v1";
  std::string out = group + "/namespaces/" + namespace_ + "/" + resource;
  if (!name.empty()) out += "/" + name;
  return out;
}

Result<KubeResponse> KubeApi::send(const std::string& method, const std::string& target,
                                   const std::string& body, const std::string& content_type) {
  for (int attempt = 1;; ++attempt) {
    auto response = client_.request(method, target, body, content_type);
    if (!response || response->status != 429 || attempt >= retry_.max_attempts) return response;
    auto wait = response->retry_after
                    ? std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::min(*response->retry_after, retry_.max_retry_after))
                    : retry_.default_retry;
    std::this_thread::sleep_for(wait);  // the server asked for it (Retry-After)
  }
}

Result<json> KubeApi::create(const std::string& resource, const json& object) {
  std::string what = "create " + resource + "/" + object["metadata"].value("name", "");
  auto response = send("POST", path(resource), object.dump(), "application/json");
  if (!response) return response.error();
  if (response->status != 201 && response->status != 200) return api_error(what, *response);
  return parse_object(what, *response);
}

Result<json> KubeApi::get(const std::string& resource, const std::string& name) {
  std::string what = "get " + resource + "/" + name;
  auto response = send("GET", path(resource, name), "", "");
  if (!response) return response.error();
  if (response->status != 200) return api_error(what, *response);
  return parse_object(what, *response);
}

Result<json> KubeApi::list(const std::string& resource, const std::string& label_selector) {
  std::string what = "list " + resource;
  auto response = send("GET", path(resource) + "?labelSelector=" + url_encode(label_selector), "", "");
  if (!response) return response.error();
  if (response->status != 200) return api_error(what, *response);
  return parse_object(what, *response);
}

Result<json> KubeApi::json_patch(const std::string& resource, const std::string& name, const json& patch) {
  std::string what = "patch " + resource + "/" + name;
  auto response = send("PATCH", path(resource, name), patch.dump(), "application/json-patch+json");
  if (!response) return response.error();
  if (response->status != 200) return api_error(what, *response);
  return parse_object(what, *response);
}

Status KubeApi::remove(const std::string& resource, const std::string& name) {
  json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"},
                  {"gracePeriodSeconds", 0}, {"propagationPolicy", "Background"}};
  auto response = send("DELETE", path(resource, name), options.dump(), "application/json");
  if (!response) return response.error();
  if (response->status == 200 || response->status == 202 || response->status == 404) return Status::success();
  return api_error("delete " + resource + "/" + name, *response);
}

Result<std::string> KubeApi::logs(const std::string& pod, std::uint64_t limit_bytes) {
  auto response = send("GET", path("pods", pod) + "/log?container=tool&limitBytes=" + std::to_string(limit_bytes), "", "");
  if (!response) return response.error();
  if (response->status != 200) return api_error("logs of pods/" + pod, *response);
  return response->body;
}

}  // namespace airlock::backend::kubernetes
