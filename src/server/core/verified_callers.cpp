#include "server/core/verified_callers.hpp"

#include <cctype>

#include "common/digest.hpp"
#include "pipeline/stages/quota.hpp"

namespace airlock::server {
namespace {

// The credential of `authorization` as the authenticator reads it: the scheme's case and the
// spaces around the value change nothing.
std::string normalized_authorization(const std::string& value) {
  const auto space = value.find(' ');
  std::string scheme = value.substr(0, space);
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (space == std::string::npos) return scheme;
  const auto first = value.find_first_not_of(' ', space);
  const auto last = value.find_last_not_of(' ');
  return first == std::string::npos ? scheme : scheme + ' ' + value.substr(first, last - first + 1);
}

// The SHA-256 of what decides who the caller is: the bearer credential, else none (a client
// certificate alone is verified at the TLS handshake: it needs no memory).
std::string credential_digest(const pipeline::Invocation& inv) {
  const auto auth = inv.headers.find("authorization");
  return sha256_hex(auth == inv.headers.end() ? std::string("none") : normalized_authorization(auth->second));
}

}  // namespace

std::string lane_of(const std::string& principal, const std::string& user_key) {
  return principal.empty() ? "user " + user_key : "principal " + principal;
}

VerifiedCallers::VerifiedCallers(std::size_t capacity, std::chrono::seconds ttl) : capacity_(capacity), ttl_(ttl) {}

IntakeCaller VerifiedCallers::intake_caller(const pipeline::Invocation& inv) const {
  if (inv.client_certificate && inv.headers.count("authorization") == 0)
    return {"certificate " + inv.client_certificate->subject, true};
  const std::string digest = credential_digest(inv);
  {
    std::lock_guard lock(mu_);
    auto known = by_credential_.find(digest);
    if (known != by_credential_.end() && known->second.until > std::chrono::steady_clock::now())
      return {known->second.caller, true};
  }
  return {"unverified " + digest, false};
}

void VerifiedCallers::remember(const pipeline::Invocation& inv) {
  if (!inv.actor && !inv.subject) return;  // not authenticated: nothing to remember
  if (inv.client_certificate && inv.headers.count("authorization") == 0) return;
  const std::string digest = credential_digest(inv);
  Known known{lane_of(pipeline::quota_principal(inv), pipeline::quota_user(inv)),
              std::chrono::steady_clock::now() + ttl_};
  std::lock_guard lock(mu_);
  auto [it, added] = by_credential_.insert_or_assign(digest, std::move(known));
  if (!added) return;
  order_.push_back(digest);
  while (order_.size() > capacity_) {
    by_credential_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace airlock::server
