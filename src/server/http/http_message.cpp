#include "server/http/http_message.hpp"

#include <utility>

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

namespace {

class StringBodyReader final : public BodyReader {
 public:
  explicit StringBodyReader(std::string body) : body_(std::move(body)), length_(body_.size()) {}
  Result<std::string> read() override { return std::exchange(body_, std::string()); }
  std::optional<std::uint64_t> length() const override { return length_; }

 private:
  std::string body_;
  std::uint64_t length_;
};

}  // namespace

std::shared_ptr<BodyReader> string_body_reader(std::string body) {
  return std::make_shared<StringBodyReader>(std::move(body));
}

}  // namespace airlock::server
