// A credential lease: one credential, for one call of one tool, with an end. What is stored
// about it (the state database, the audit record) never includes the value.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace airlock::creds {

using Clock = std::chrono::system_clock;

struct Lease {
  std::string id;  // 32 random hex digits
  std::string invocation_id;
  std::string tool;
  std::string env;       // the variable it is given as
  std::string provider;  // "token", "postgres", "oauth-exchange", "secret"
  std::vector<std::string> scopes;  // what it grants, in the provider's words
  Clock::time_point issued_at{};
  Clock::time_point expires_at{};
  // What revocation needs besides the id, written before the credential exists (postgres:
  // {"server", "role"}; token: {"jti"}). Never a secret.
  nlohmann::json target = nlohmann::json::object();
  // leasing: stored, its credential maybe made (the stored state until revocation); active:
  // issued (in memory); revoked; revoke_failed (its provider could not end it).
  enum class State { leasing, active, revoked, revoke_failed } state = State::leasing;
};

std::string_view state_name(Lease::State state);
std::optional<Lease::State> parse_state(std::string_view name);

// Who and what a credential is for: this call of this tool, by this agent, for this user.
// Built per call; holds the user's token only for as long as the lease is being made.
struct LeaseContext {
  std::string invocation_id;
  std::string tool;
  std::string agent;        // the principal's name
  std::string user_issuer;  // the configured issuer's name; "" when no user
  std::string user_sub;     // "" when the call is not on behalf of a user
  std::string user_token;   // the user's token as received (oauth-exchange); never stored
  // The user's token's scopes when it has a `scope` (or `scp`) claim: the credential grants
  // no more than these. nullopt: the token does not restrict scopes.
  std::optional<std::vector<std::string>> user_scopes;
  // No credential outlives the call by much: the tool's timeout plus a margin.
  std::chrono::seconds max_ttl{60};
  // The tool's port forwards (sandbox 127.0.0.1:listen -> host:port): a postgres URL points
  // where the tool can connect.
  struct Forward {
    std::uint16_t listen_port = 0;
    std::string host;
    std::uint16_t port = 0;
  };
  std::vector<Forward> forwards;
  Clock::time_point now = Clock::now();
};

// What a provider made.
struct Issued {
  std::string value;                // what the tool's variable is set to
  std::vector<std::string> scopes;  // what it grants
  Clock::time_point expires_at{};
};

}  // namespace airlock::creds
