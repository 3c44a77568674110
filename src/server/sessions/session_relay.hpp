// A request relayed to the replica that holds its session, and that replica's answer relayed
// back to the caller (session_forwarder.hpp decides when): the body both ways as it comes,
// never held whole, so an exec's Server-Sent Events arrive as they are sent and a file of any
// size passes through.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "common/socket_breaker.hpp"
#include "server/http/http_message.hpp"
#include "server/http/upstream_client.hpp"

namespace airlock::server {

// The header a forwarded request carries, naming the replica that forwarded it. The replica
// that receives it never forwards it again (no loops). It grants nothing: the receiver
// authenticates the caller's own credentials and checks the session's owner itself.
inline constexpr const char* kForwardedByHeader = "Airlock-Forwarded-By";
bool is_forwarded(const HttpRequest& r);

// `r` as it came (method, target, end-to-end headers, body: streamed when the server streamed
// it), marked as forwarded by the replica `self`.
UpstreamRequest relayed_request(const HttpRequest& r, const std::string& self);

// Where a relayed request goes: the replica's id (named in answers and logs) and its address.
struct RelayTarget {
  std::string replica;
  std::string address;
};

// Sends `request` to `target` and answers `reply` with what comes back: whole when it is small
// and has a length, else streamed as it arrives (an answer the replica cuts short is cut short
// here too: the caller sees an incomplete body). A replica that cannot be reached: 503
// replica_unavailable with Retry-After (nothing was sent); one that broke off once the request
// was under way: 502 replica_failed. `log` gets the details (addresses, errors).
void relay(UpstreamClient& client, const RelayTarget& target, const UpstreamRequest& request, SocketBreaker& breaker,
           const std::function<void(HttpResponse)>& reply, const std::function<void(const std::string&)>& log);

// The JSON body of a 200 answer to `request` (at most `max_bytes`); an error otherwise.
Result<nlohmann::json> fetch_json(UpstreamClient& client, const RelayTarget& target, const UpstreamRequest& request,
                                  SocketBreaker& breaker, std::size_t max_bytes);

}  // namespace airlock::server
