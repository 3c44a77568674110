#include "server/sessions/session_relay.hpp"

#include <chrono>
#include <memory>

#include "server/http/deferred_body.hpp"

namespace airlock::server {
namespace {

// An answer up to this size with a Content-Length is relayed whole (with its length); a larger
// or chunked one is streamed.
constexpr std::size_t kWholeAnswerBytes = 1u << 20;
// A streamed answer waits while this much is queued for the caller, and drops a caller that
// has not read for kSlowReader: the replica's body is then read no faster than the caller's.
constexpr std::size_t kQueuedBytes = 1u << 20;
constexpr std::chrono::seconds kSlowReader{30};

HttpResponse failure_response(const Error& e, const RelayTarget& target) {
  if (e.code == "upstream_unreachable") {
    auto resp = error_response(503, "replica_unavailable",
                               "the replica that holds this session (" + target.replica +
                                   ") cannot be reached now; retry (once it is taken for dead the session ends)");
    resp.headers.emplace_back("Retry-After", "1");
    return resp;
  }
  if (e.code == "request_body") return error_response(408, "request_timeout", e.message);
  return error_response(502, "replica_failed",
                        "the replica that holds this session (" + target.replica + ") broke off its answer");
}

// The rest of the answer, written to `body` as it arrives.
void pump(UpstreamExchange& exchange, DeferredBody& body, SocketBreaker& breaker) {
  for (;;) {
    auto piece = exchange.read_some();
    if (!piece) return body.abort();
    if (piece->empty()) return body.finish();
    if (!body.write(std::move(*piece)) || !body.wait_below(kQueuedBytes, kSlowReader)) {
      breaker.break_now();  // the caller has gone, or does not read
      return body.abort();
    }
  }
}

// The whole body of an answer that declared a small length; an error when it broke off.
Result<std::string> read_whole(UpstreamExchange& exchange) {
  std::string out;
  for (;;) {
    auto piece = exchange.read_some();
    if (!piece) return piece.error();
    if (piece->empty()) return out;
    out += *piece;
  }
}

}  // namespace

bool is_forwarded(const HttpRequest& r) { return r.headers.count("airlock-forwarded-by") > 0; }

UpstreamRequest relayed_request(const HttpRequest& r, const std::string& self) {
  UpstreamRequest out;
  out.method = r.method;
  out.target = r.target;
  for (const auto& [name, value] : r.headers)
    if (name != "airlock-forwarded-by") out.headers.emplace_back(name, value);
  out.headers.emplace_back(kForwardedByHeader, self);
  out.body = r.body;
  out.body_reader = r.body_reader;
  return out;
}

void relay(UpstreamClient& client, const RelayTarget& target, const UpstreamRequest& request, SocketBreaker& breaker,
           const std::function<void(HttpResponse)>& reply, const std::function<void(const std::string&)>& log) {
  auto exchange = client.exchange(target.address, request, &breaker);
  if (!exchange) {
    log("forwarding " + request.method + " " + request.target + " to replica " + target.replica + ": " +
        exchange.error().message);
    return reply(failure_response(exchange.error(), target));
  }
  const UpstreamHead& head = (*exchange)->head();
  if (head.length && *head.length <= kWholeAnswerBytes) {
    auto body = read_whole(**exchange);
    if (!body) {
      log("forwarding to replica " + target.replica + ": " + body.error().message);
      return reply(failure_response(body.error(), target));
    }
    HttpResponse whole;
    whole.status = head.status;
    whole.content_type = head.content_type;
    whole.body = std::move(*body);
    whole.headers = head.headers;
    return reply(std::move(whole));
  }
  auto body = std::make_shared<DeferredBody>();
  HttpResponse resp = DeferredBody::response(body, head.content_type);
  resp.status = head.status;
  resp.headers = head.headers;
  reply(std::move(resp));
  pump(**exchange, *body, breaker);
}

Result<nlohmann::json> fetch_json(UpstreamClient& client, const RelayTarget& target, const UpstreamRequest& request,
                                  SocketBreaker& breaker, std::size_t max_bytes) {
  auto exchange = client.exchange(target.address, request, &breaker);
  if (!exchange) return exchange.error();
  if ((*exchange)->head().status != 200)
    return Error::make("upstream_failed", "replica " + target.replica + " answered HTTP " +
                                              std::to_string((*exchange)->head().status));
  std::string text;
  for (;;) {
    auto piece = (*exchange)->read_some();
    if (!piece) return piece.error();
    if (piece->empty()) break;
    text += *piece;
    if (text.size() > max_bytes) return Error::make("upstream_failed", "replica " + target.replica + " answered too much");
  }
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return Error::make("upstream_failed", "replica " + target.replica + " answered no JSON");
  return parsed;
}

}  // namespace airlock::server
