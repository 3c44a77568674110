#include "server/http/http_message.hpp"

namespace airlock::server {

HttpResponse json_response(int status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

HttpResponse error_response(int status, const std::string& kind, const std::string& message) {
  return json_response(status, {{"error", {{"kind", kind}, {"message", message}}}});
}

}  // namespace airlock::server
