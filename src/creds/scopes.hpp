// The scopes a credential grants: what its spec asks for, no more than the user's token has.
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"
#include "creds/lease.hpp"

namespace airlock::creds {

// `wanted` as given when the user's token does not restrict scopes (no user, or no scope
// claim), else those of `wanted` it also has, in `wanted`'s order. Error "credential_denied"
// naming the scopes when `wanted` is not empty and nothing of it is left.
Result<std::vector<std::string>> narrowed_scopes(const std::vector<std::string>& wanted,
                                                 const LeaseContext& context);

// "a b c" (OAuth's scope syntax, RFC 6749 section 3.3).
std::string scope_text(const std::vector<std::string>& scopes);

}  // namespace airlock::creds
