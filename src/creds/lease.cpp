#include "creds/lease.hpp"

namespace airlock::creds {

std::string_view state_name(Lease::State state) {
  switch (state) {
    case Lease::State::leasing: return "leasing";
    case Lease::State::active: return "active";
    case Lease::State::revoked: return "revoked";
    case Lease::State::revoke_failed: return "revoke_failed";
  }
  return "leasing";
}

std::optional<Lease::State> parse_state(std::string_view name) {
  for (auto s : {Lease::State::leasing, Lease::State::active, Lease::State::revoked, Lease::State::revoke_failed})
    if (state_name(s) == name) return s;
  return std::nullopt;
}

}  // namespace airlock::creds
