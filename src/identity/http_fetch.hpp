// A minimal HTTP(S) GET for JWKS documents (Boost.Beast, OpenSSL): one request, no redirects,
// a deadline, a size cap, the peer's certificate and host name verified for https.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "common/result.hpp"

namespace airlock::identity {

struct FetchOptions {
  std::chrono::milliseconds timeout{5000};  // for the whole exchange
  std::size_t max_bytes = 1 << 20;          // of the response body
  std::string ca_file;                      // PEM CA bundle for https; empty: the system's
};

// The body of a 200 answer to GET `url` ("http://host[:port]/path" or "https://..."). Error:
// "fetch_failed", whose message names what failed (never a credential: URLs with user
// information are refused).
Result<std::string> http_get(const std::string& url, const FetchOptions& options);

}  // namespace airlock::identity
