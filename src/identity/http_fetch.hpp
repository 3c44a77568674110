// A minimal HTTP(S) client for JWKS documents and OAuth endpoints (Boost.Beast, OpenSSL): one
// request, no redirects, a deadline, a size cap, the peer's certificate and host name
// verified for https.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.hpp"

namespace airlock::identity {

struct FetchOptions {
  std::chrono::milliseconds timeout{5000};  // for the whole exchange
  std::size_t max_bytes = 1 << 20;          // of the response body
  std::string ca_file;                      // PEM CA bundle for https; empty: the system's
};

struct FetchRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Host and User-Agent
  std::string body;
  std::string what = "the URL";  // names the peer in errors: "the JWKS URL", "the token endpoint"
};

struct FetchResponse {
  int status = 0;
  std::string body;  // at most FetchOptions::max_bytes
};

// Any answer (whatever its status) to `request`. Error "fetch_failed" naming `what` and the
// step that failed; never the request's headers or body (they may hold credentials).
Result<FetchResponse> http_request(const FetchRequest& request, const FetchOptions& options);

// application/x-www-form-urlencoded: name=value pairs, each percent-encoded
// (common/percent_encoding.hpp, as RFC 6749 appendix B asks), joined by '&'.
std::string form_urlencode(const std::vector<std::pair<std::string, std::string>>& fields);

// POST `fields` as a form to `url` with `headers` (Authorization...), `what` naming it.
Result<FetchResponse> http_post_form(const std::string& url,
                                     const std::vector<std::pair<std::string, std::string>>& fields,
                                     std::vector<std::pair<std::string, std::string>> headers,
                                     const std::string& what, const FetchOptions& options);

// The body of a 200 answer to GET `url` ("http://host[:port]/path" or "https://..."). Error:
// "fetch_failed", whose message names what failed (never a credential: URLs with user
// information are refused).
Result<std::string> http_get(const std::string& url, const FetchOptions& options);

}  // namespace airlock::identity
