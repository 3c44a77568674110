#include "server/core/responses.hpp"

#include "server/core/invocation_response.hpp"

namespace airlock::server {

HttpResponse refusal_response(const pipeline::InvocationError& error) {
  return error_response(http_status(error), std::string(error.kind_name()), error.message);
}

std::variant<pipeline::Caller, HttpResponse> authenticate_request(const pipeline::Authenticator& authenticator,
                                                                   const HttpRequest& r) {
  auto who = authenticator.authenticate(r.headers, r.client_certificate ? &*r.client_certificate : nullptr);
  if (auto* caller = std::get_if<pipeline::Caller>(&who)) return std::move(*caller);
  auto resp = refusal_response(std::get<pipeline::InvocationError>(who));
  resp.headers.emplace_back("WWW-Authenticate", "Bearer");
  return resp;
}

std::string tool_label(const policy::Config& config, const std::string& name) {
  return config.find_tool(name) ? name : kUnknownToolLabel;
}

}  // namespace airlock::server
