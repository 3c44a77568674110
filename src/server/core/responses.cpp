#include "server/core/responses.hpp"

#include "common/percent_encoding.hpp"
#include "common/split.hpp"
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

Result<std::string> query_param(std::string_view target, std::string_view name) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::string();
  for (const auto& param : split_nonempty(target.substr(q + 1), '&')) {
    const auto eq = param.find('=');
    if (std::string_view(param).substr(0, eq) != name) continue;
    auto value = percent_decode(eq == std::string::npos ? std::string_view() : std::string_view(param).substr(eq + 1), true);
    if (!value) return Error::make("invalid_input", "a malformed %-escape in the query");
    return *value;
  }
  return std::string();
}

}  // namespace airlock::server
