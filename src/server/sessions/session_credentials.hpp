// A session's credentials (docs/sessions.md, "Credentials"): its template's `credentials`,
// leased through the broker for the session's owner when it is created, with the session's
// id as the leases' invocation (so a start after a crash finds and revokes them), renewed
// while it lives, and revoked at its end.
//
// Renewal is per credential: once a third of a lease's lifetime is left, a fresh lease
// replaces it, and execs started from then on get the new value. The lease it replaced is
// revoked at its own expiry (an exec started just before keeps a working value until then).
// A renewal that fails ends every lease at once and the session has no credentials from then
// on (fail closed: none rather than stale ones).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/session_record.hpp"
#include "common/result.hpp"
#include "creds/broker.hpp"
#include "dlp/scanner.hpp"

namespace airlock::server {

class SessionCredentials {
 public:
  using Clock = creds::Clock;
  using Fingerprint = std::function<std::string(std::string_view)>;  // the audit log's HMAC of a value

  struct Setup {
    std::shared_ptr<creds::Broker> broker;
    std::vector<policy::CredentialSpec> specs;
    creds::LeaseContext context;  // the owner's; invocation_id the session's id; no user token
    Fingerprint fingerprint;
  };
  // Leases every credential of `setup.specs`. Error: the broker's (credential_denied or
  // credential_unavailable, naming the variable and the provider), with nothing left leased.
  static Result<std::unique_ptr<SessionCredentials>> lease(Setup setup);
  ~SessionCredentials();  // revokes what is left
  SessionCredentials(const SessionCredentials&) = delete;
  SessionCredentials& operator=(const SessionCredentials&) = delete;

  // What is taken out of what leaves the session (an exec's output, a download): every value
  // issued to it that may still be live (the current ones, those replaced and not yet revoked,
  // and any no revocation ends), as literals (null: none).
  struct Redaction {
    std::shared_ptr<const dlp::LiteralSet> literals;
    std::shared_ptr<const dlp::Scanner> scanner;  // finds only the literals (dlp/credential_redaction.hpp)
  };
  Redaction redaction() const;
  // What an exec starting now gets, taken at one moment: each credential's current value by
  // its variable (none once they are revoked or a renewal failed), the redaction of its
  // output, and the leases, as its audit record lists them.
  struct ForExec {
    std::map<std::string, std::string> env;
    Redaction redaction;
    std::vector<audit::CredentialUse> uses;
  };
  ForExec for_exec() const;
  std::vector<audit::CredentialUse> uses() const;  // the current leases

  // When maintain() has something to do (a renewal, a replaced lease to revoke); nullopt: never,
  // or not before the maintain() under way is done.
  std::optional<Clock::time_point> next_due() const;

  struct Maintenance {
    std::vector<audit::CredentialUse> issued;     // the fresh leases
    std::vector<audit::SessionLeaseEnd> revoked;  // replaced leases past their expiry; all after a failure
    std::optional<Error> failed;                  // a renewal failed: no credentials from now on
    bool empty() const { return issued.empty() && revoked.empty() && !failed; }
  };
  // Renews what is due at `now` and revokes replaced leases whose expiry has come; `record`
  // (the audit record of it) runs before revoke_all() can, so the session's end is recorded
  // after it. A call while another runs, or after the end, does nothing.
  void maintain(Clock::time_point now, const std::function<void(const Maintenance&)>& record);

  // The session's end: every lease revoked (waiting for a renewal under way), and how each ended.
  std::vector<audit::SessionLeaseEnd> revoke_all();

 private:
  SessionCredentials() = default;
  std::vector<audit::SessionLeaseEnd> revoke(std::vector<creds::Leased>& leased);
  void install(std::vector<creds::Leased> fresh, const std::vector<std::size_t>& slots,
               std::vector<audit::CredentialUse>& issued);  // under mu_
  Status recompile();  // under mu_: literals_ from the values held
  void renew(const std::vector<std::size_t>& slots, Maintenance& m);
  std::vector<creds::Leased> take_all();  // under mu_: closes, and gives up every lease held

  Setup setup_;
  std::shared_ptr<const dlp::Scanner> scanner_;
  mutable std::mutex mu_;
  std::condition_variable idle_;  // maintaining_ went false
  std::vector<creds::Leased> current_;  // one per spec, in its order; empty once closed
  std::vector<audit::CredentialUse> uses_;  // of current_
  std::vector<creds::Leased> replaced_;  // renewed, revoked at their own expiry
  // Values no revocation ended (a secret's; a lease its provider could not end): still redacted.
  std::vector<std::string> retained_;
  std::shared_ptr<const dlp::LiteralSet> literals_;
  bool closed_ = false;       // revoked or failed: nothing is leased again
  bool maintaining_ = false;  // a maintain() is under way
};

}  // namespace airlock::server
