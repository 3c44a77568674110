#include "server/core/responses.hpp"

#include "server/core/invocation_response.hpp"

namespace airlock::server {

HttpResponse refusal_response(const pipeline::InvocationError& error) {
  return error_response(http_status(error), std::string(error.kind_name()), error.message);
}

std::string tool_label(const policy::Config& config, const std::string& name) {
  return config.find_tool(name) ? name : kUnknownToolLabel;
}

}  // namespace airlock::server
