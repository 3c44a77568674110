// Where an issuer's keys come from: a JWKS file, an http(s) URL, or a document held in memory
// (Airlock's own issuer), with the cache and refetch rules of docs/identity.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.hpp"
#include "identity/clock.hpp"
#include "identity/http_fetch.hpp"
#include "identity/jwk.hpp"

namespace airlock::identity {

struct JwksSourceOptions {
  // Exactly one of the three.
  std::string file;
  std::string url;
  std::string document;  // a JWKS JSON document (it is never refetched)
  FetchOptions fetch;    // for `url`
  // At most one fetch (of any cause) per interval: an unknown kid cannot make us hammer the
  // identity provider, and an unreachable one is not retried on every request.
  std::chrono::seconds refetch_interval{30};
  // A cached set older than this is fetched again before use (so a withdrawn key stops being
  // accepted); if that fetch fails, the issuer is unavailable: we fail closed.
  std::chrono::seconds max_age{600};
  Clock now = system_clock();
};

// Thread-safe. The cached KeySet is an immutable snapshot behind a shared_ptr: readers copy
// the pointer under a short lock; a fetch happens under its own lock, outside the readers'.
class JwksSource {
 public:
  explicit JwksSource(JwksSourceOptions options);

  // The cached keys, loaded first if there are none or they are older than max_age.
  // Error: "jwks_unavailable".
  Result<std::shared_ptr<const KeySet>> keys();

  // After an unknown kid: fetch again unless the last fetch was less than refetch_interval
  // ago, and return the newest keys either way (a concurrent fetch may have brought the kid).
  Result<std::shared_ptr<const KeySet>> refetch();

  // How many times the file was read or the URL fetched (for tests and metrics).
  std::size_t fetch_count() const;

 private:
  Result<std::string> load_document() const;
  Result<std::shared_ptr<const KeySet>> current() const;  // fresh keys or jwks_unavailable
  // Fetches and swaps the cache unless rate-limited (or, with `stale_only`, unless another
  // thread refreshed it meanwhile).
  void fetch_if_allowed(bool stale_only);
  bool fresh(std::chrono::system_clock::time_point now) const;

  JwksSourceOptions options_;
  std::mutex fetch_mu_;    // one fetch at a time
  mutable std::mutex mu_;  // guards the members below
  std::shared_ptr<const KeySet> keys_;
  std::chrono::system_clock::time_point loaded_at_{};
  std::chrono::system_clock::time_point last_attempt_{};
  bool attempted_ = false;
  std::string last_error_;
  std::size_t fetches_ = 0;
};

}  // namespace airlock::identity
