#include "identity/jwks_source.hpp"

#include <fstream>
#include <sstream>

namespace airlock::identity {

JwksSource::JwksSource(JwksSourceOptions options) : options_(std::move(options)) {
  if (options_.document.empty()) return;
  auto set = KeySet::parse(options_.document);
  if (set)
    keys_ = std::make_shared<const KeySet>(std::move(*set));
  else
    last_error_ = set.error().message;
}

Result<std::string> JwksSource::load_document() const {
  if (!options_.url.empty()) return http_get(options_.url, options_.fetch);
  std::ifstream in(options_.file, std::ios::binary);
  if (!in) return Error::make("fetch_failed", "cannot open the JWKS file " + options_.file);
  std::string text;
  // The same cap as for a URL: the file is read whole.
  text.resize(options_.fetch.max_bytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > options_.fetch.max_bytes)
    return Error::make("fetch_failed", "the JWKS file is larger than the size limit");
  return text;
}

bool JwksSource::fresh(std::chrono::system_clock::time_point now) const {
  return options_.url.empty() && options_.file.empty() ? true : now - loaded_at_ < options_.max_age;
}

void JwksSource::fetch_if_allowed(bool stale_only) {
  if (options_.url.empty() && options_.file.empty()) return;  // an in-memory document
  std::lock_guard fetching(fetch_mu_);
  const auto now = options_.now();
  {
    std::lock_guard lock(mu_);
    if (stale_only && keys_ && fresh(now)) return;
    const bool clock_went_back = now < last_attempt_;
    if (attempted_ && !clock_went_back && now - last_attempt_ < options_.refetch_interval) return;
    attempted_ = true;
    last_attempt_ = now;
    ++fetches_;
  }
  auto document = load_document();
  auto set = document ? KeySet::parse(*document) : Result<KeySet>(document.error());
  std::lock_guard lock(mu_);
  if (!set) {
    last_error_ = set.error().message;  // the cache, if any, stays as it was
    return;
  }
  keys_ = std::make_shared<const KeySet>(std::move(*set));
  loaded_at_ = now;
  last_error_.clear();
}

Result<std::shared_ptr<const KeySet>> JwksSource::current() const {
  std::lock_guard lock(mu_);
  if (keys_ && fresh(options_.now())) return keys_;
  std::string why = "the issuer's keys cannot be loaded";
  if (!last_error_.empty()) why += ": " + last_error_;
  return Error::make("jwks_unavailable", why);
}

Result<std::shared_ptr<const KeySet>> JwksSource::keys() {
  {
    std::lock_guard lock(mu_);
    if (keys_ && fresh(options_.now())) return keys_;
  }
  fetch_if_allowed(/*stale_only=*/true);
  return current();
}

Result<std::shared_ptr<const KeySet>> JwksSource::refetch() {
  fetch_if_allowed(/*stale_only=*/false);
  return current();
}

std::size_t JwksSource::fetch_count() const {
  std::lock_guard lock(mu_);
  return fetches_;
}

}  // namespace airlock::identity
