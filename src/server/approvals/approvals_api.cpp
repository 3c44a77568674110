#include "server/approvals/approvals_api.hpp"

#include "common/json_limits.hpp"
#include "server/approvals/approvals.hpp"

namespace airlock::server {

bool is_approvals_path(const std::vector<std::string>& parts) {
  return parts.size() >= 2 && parts.size() <= 4 && parts[0] == "v1" && parts[1] == "approvals";
}

void handle_approvals(const ApiServices& s, const HttpRequest& r, const std::vector<std::string>& parts,
                      const std::function<void(HttpResponse)>& reply) {
  if (!s.approvals) return reply(error_response(404, "not_found", "no such endpoint"));
  const auto generation = s.generation->load();
  auto who = authenticate_request(*generation->authenticator, r);
  if (auto* refused = std::get_if<HttpResponse>(&who)) return reply(std::move(*refused));
  const auto& caller = std::get<pipeline::Caller>(who);
  const policy::Config& config = *generation->config;
  const bool get = r.method == "GET" || r.method == "HEAD";
  if (parts.size() == 2) {
    if (!get) return reply(error_response(405, "method_not_allowed", "use GET"));
    return reply(json_response(200, {{"approvals", s.approvals->list(caller, config)}}));
  }
  if (parts.size() == 3) {
    if (!get) return reply(error_response(405, "method_not_allowed", "use GET"));
    auto answer = s.approvals->show(parts[2], caller, config);
    return reply(json_response(answer.status, answer.body));
  }
  if (parts[3] != "approve" && parts[3] != "deny") return reply(error_response(404, "not_found", "no such endpoint"));
  if (r.method != "POST") return reply(error_response(405, "method_not_allowed", "use POST"));
  auto parsed = r.body.empty() ? Result<nlohmann::json>(nlohmann::json::object()) : parse_json_bounded(r.body, 8);
  nlohmann::json body = parsed ? *parsed : nlohmann::json();
  if (!body.is_object())
    return reply(error_response(400, "invalid_input", "the body must be a JSON object: {\"reason\": \"...\"}"));
  auto answer = s.approvals->decide(parts[2], caller, config, parts[3], body);
  reply(json_response(answer.status, answer.body));
}

}  // namespace airlock::server
