#include "creds/scopes.hpp"

#include <algorithm>

namespace airlock::creds {

std::string scope_text(const std::vector<std::string>& scopes) {
  std::string text;
  for (const auto& s : scopes) text += (text.empty() ? "" : " ") + s;
  return text;
}

Result<std::vector<std::string>> narrowed_scopes(const std::vector<std::string>& wanted,
                                                 const LeaseContext& context) {
  if (!context.user_scopes) return wanted;
  const auto& theirs = *context.user_scopes;
  std::vector<std::string> kept;
  for (const auto& s : wanted)
    if (std::find(theirs.begin(), theirs.end(), s) != theirs.end()) kept.push_back(s);
  if (kept.empty() && !wanted.empty())
    return Error::make("credential_denied", "the user's token grants none of the scopes the credential needs (" +
                                                scope_text(wanted) + "); it has: " +
                                                (theirs.empty() ? "none" : scope_text(theirs)));
  return kept;
}

}  // namespace airlock::creds
