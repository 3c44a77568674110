#include "server/http/http_message.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
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

bool has_token(const std::string& list, std::string_view token) {
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, end - start);
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    if (item.size() == token.size() &&
        std::equal(item.begin(), item.end(), token.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return true;
    start = end + 1;
  }
  return false;
}

std::string header(const HttpRequest& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

}  // namespace

bool is_websocket_upgrade(const HttpRequest& request) {
  return request.method == "GET" && has_token(header(request, "upgrade"), "websocket") &&
         has_token(header(request, "connection"), "upgrade") && !header(request, "sec-websocket-key").empty() &&
         header(request, "sec-websocket-version") == "13";
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
