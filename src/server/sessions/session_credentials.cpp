#include "server/sessions/session_credentials.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <numeric>

#include "creds/wipe.hpp"
#include "dlp/credential_redaction.hpp"

namespace airlock::server {
namespace {

using WallClock = SessionCredentials::Clock;

// However short a lease, it is not renewed more often than this.
constexpr std::chrono::milliseconds kShortestRenewal{500};

// The scanner of every session's credentials: it finds only the literals it is given.
Result<std::shared_ptr<const dlp::Scanner>> shared_scanner() {
  static const Result<std::shared_ptr<const dlp::Scanner>> scanner = dlp::make_credential_scanner();
  return scanner;
}

// A lease is renewed once a third of its lifetime is left.
WallClock::time_point renew_at(const creds::Lease& l) {
  return std::max(l.issued_at + (l.expires_at - l.issued_at) * 2 / 3,
                  l.issued_at + std::chrono::duration_cast<WallClock::duration>(kShortestRenewal));
}

audit::CredentialUse use_of(const creds::Leased& l, const SessionCredentials::Fingerprint& fingerprint) {
  return {l.lease.env,
          fingerprint ? fingerprint(l.value) : std::string(),
          l.lease.id,
          l.lease.provider,
          l.lease.scopes,
          std::chrono::duration_cast<std::chrono::seconds>(l.lease.expires_at.time_since_epoch()).count()};
}

// A value this short would be found everywhere in the output: it cannot be kept out of it.
Status long_enough(const std::vector<creds::Leased>& leased) {
  for (const auto& l : leased)
    if (l.value.size() < 4)
      return Error::make("credential_unavailable", l.lease.env + " (" + l.lease.provider +
                                                       "): the value is shorter than 4 bytes, too short to redact "
                                                       "from the output");
  return {};
}

}  // namespace

Result<std::unique_ptr<SessionCredentials>> SessionCredentials::lease(Setup setup) {
  auto scanner = shared_scanner();
  if (!scanner)
    return Error::make("credential_unavailable",
                       "the session's credentials could not be kept out of its output: " + scanner.error().message);
  std::unique_ptr<SessionCredentials> out(new SessionCredentials());
  out->setup_ = std::move(setup);
  out->scanner_ = *scanner;
  out->setup_.context.now = WallClock::now();
  auto leased = out->setup_.broker->lease(out->setup_.specs, out->setup_.context);
  if (!leased) return leased.error();
  if (auto ok = long_enough(*leased); !ok) {
    (void)out->setup_.broker->revoke(*leased);
    return ok.error();
  }
  std::vector<std::size_t> slots(leased->size());
  std::iota(slots.begin(), slots.end(), 0);
  std::lock_guard lock(out->mu_);
  out->current_.resize(slots.size());
  out->uses_.resize(slots.size());
  std::vector<audit::CredentialUse> issued;
  out->install(std::move(*leased), slots, issued);
  if (auto ready = out->recompile(); !ready) return ready.error();  // the destructor revokes them
  return out;
}

SessionCredentials::~SessionCredentials() {
  if (!closed_) (void)revoke_all();
  for (auto& v : retained_) creds::wipe_secret(v);
}

SessionCredentials::Redaction SessionCredentials::redaction() const {
  std::lock_guard lock(mu_);
  return {literals_, scanner_};
}

SessionCredentials::ForExec SessionCredentials::for_exec() const {
  std::lock_guard lock(mu_);
  ForExec out{{}, {literals_, scanner_}, uses_};
  for (const auto& l : current_) out.env[l.lease.env] = l.value;
  return out;
}

std::vector<audit::CredentialUse> SessionCredentials::uses() const {
  std::lock_guard lock(mu_);
  return uses_;
}

std::optional<WallClock::time_point> SessionCredentials::next_due() const {
  std::lock_guard lock(mu_);
  std::optional<WallClock::time_point> due;
  auto earlier = [&](WallClock::time_point t) { due = due ? std::min(*due, t) : t; };
  if (closed_ || maintaining_) return due;  // under way: due again once it is done
  for (const auto& l : current_) earlier(renew_at(l.lease));
  for (const auto& l : replaced_) earlier(l.lease.expires_at);
  return due;
}

void SessionCredentials::install(std::vector<creds::Leased> fresh, const std::vector<std::size_t>& slots,
                                 std::vector<audit::CredentialUse>& issued) {
  for (std::size_t k = 0; k < slots.size(); ++k) {
    const std::size_t slot = slots[k];
    if (!current_[slot].lease.id.empty()) replaced_.push_back(std::move(current_[slot]));
    current_[slot] = std::move(fresh[k]);
    uses_[slot] = use_of(current_[slot], setup_.fingerprint);
    issued.push_back(uses_[slot]);
  }
}

Status SessionCredentials::recompile() {
  std::vector<std::string> values = retained_;
  for (const auto& l : current_) values.push_back(l.value);
  for (const auto& l : replaced_) values.push_back(l.value);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  Status done;
  if (values.empty()) {
    literals_.reset();
  } else if (auto set = dlp::LiteralSet::compile(values); set) {
    literals_ = std::make_shared<const dlp::LiteralSet>(std::move(*set));
  } else {
    done = Error::make("credential_unavailable",
                       "the session's credentials could not be prepared for redaction: " + set.error().message);
  }
  for (auto& v : values) creds::wipe_secret(v);
  return done;
}

std::vector<creds::Leased> SessionCredentials::take_all() {
  closed_ = true;
  std::vector<creds::Leased> all = std::move(replaced_);
  for (auto& l : current_) all.push_back(std::move(l));
  current_.clear();
  replaced_.clear();
  uses_.clear();
  return all;
}

// Revokes `leased` (newest first) and says how each ended. What no revocation ends stays in
// the literals for the session's life: a `secret` (its value outlives every lease) and a
// lease its provider could not end.
std::vector<audit::SessionLeaseEnd> SessionCredentials::revoke(std::vector<creds::Leased>& leased) {
  std::vector<std::string> values;
  for (const auto& l : leased) values.push_back(l.value);
  if (auto done = setup_.broker->revoke(leased); !done)
    std::fprintf(stderr, "airlock: session %s: a credential lease could not be revoked: %s\n",
                 setup_.context.invocation_id.c_str(), done.error().message.c_str());
  std::vector<audit::SessionLeaseEnd> ended;
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < leased.size(); ++i) {
    const creds::Lease& l = leased[i].lease;
    if (l.provider == "secret" || l.state != creds::Lease::State::revoked) retained_.push_back(values[i]);
    creds::wipe_secret(values[i]);
    ended.push_back({l.id, l.env, l.provider, std::string(creds::state_name(l.state))});
  }
  return ended;
}

void SessionCredentials::renew(const std::vector<std::size_t>& slots, Maintenance& m) {
  std::vector<policy::CredentialSpec> specs;
  for (auto slot : slots) specs.push_back(setup_.specs[slot]);
  creds::LeaseContext context = setup_.context;
  context.now = WallClock::now();
  auto fresh = setup_.broker->lease(specs, context);
  Status done = fresh ? long_enough(*fresh) : Status(fresh.error());
  if (fresh && !done) m.revoked = revoke(*fresh);
  std::vector<creds::Leased> all;
  {
    std::lock_guard lock(mu_);
    if (done) {
      install(std::move(*fresh), slots, m.issued);
      done = recompile();
    }
    if (!done) all = take_all();  // in the same hold: no exec gets a value the literals lack
  }
  if (done) return;
  m.failed = done.error();
  auto ended = revoke(all);
  m.revoked.insert(m.revoked.end(), ended.begin(), ended.end());
  std::lock_guard lock(mu_);
  (void)recompile();  // what stays live (a secret) is still redacted; the rest goes
}

void SessionCredentials::maintain(WallClock::time_point now, const std::function<void(const Maintenance&)>& record) {
  std::vector<std::size_t> due;
  std::vector<creds::Leased> expired;
  {
    std::lock_guard lock(mu_);
    if (closed_ || maintaining_) return;
    maintaining_ = true;
    for (std::size_t i = 0; i < current_.size(); ++i)
      if (renew_at(current_[i].lease) <= now) due.push_back(i);
    auto past = std::stable_partition(replaced_.begin(), replaced_.end(),
                                      [&](const creds::Leased& l) { return l.lease.expires_at > now; });
    std::move(past, replaced_.end(), std::back_inserter(expired));
    replaced_.erase(past, replaced_.end());
  }
  Maintenance m;
  if (!expired.empty()) m.revoked = revoke(expired);  // their values stay redacted until revoked
  if (!due.empty()) renew(due, m);
  if (!expired.empty()) {
    std::lock_guard lock(mu_);
    if (!m.failed) (void)recompile();  // on failure the old literals, a superset, stay
  }
  if (!m.empty() && record) record(m);
  {
    std::lock_guard lock(mu_);
    maintaining_ = false;
  }
  idle_.notify_all();
}

std::vector<audit::SessionLeaseEnd> SessionCredentials::revoke_all() {
  std::vector<creds::Leased> all;
  {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return !maintaining_; });
    all = take_all();
  }
  return revoke(all);
}

}  // namespace airlock::server
