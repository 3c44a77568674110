// The daemon's sessions (docs/sessions.md): long-lived sandboxes made from the config's
// sessionTemplates, each owned by the (principal, user) that created it. The service creates
// them (access, the `sessions` quota, the backend), finds them for their owner only, ends them
// (DELETE, idle timeout, maximum lifetime, a reload that takes away their owner's access or
// their template, shutdown) and writes one airlock.session/v1 audit record per event.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/session_record.hpp"
#include "backend/session_backend.hpp"
#include "common/result.hpp"
#include "pipeline/authenticator.hpp"
#include "pipeline/quotas/quota_book.hpp"
#include "policy/config.hpp"
#include "server/core/generation.hpp"
#include "server/sessions/session_credentials.hpp"
#include "server/sessions/session_store.hpp"
#include "server/sessions/snapshot_store.hpp"

namespace airlock::audit {
class AuditLog;
}

namespace airlock::server {

class SessionInterpreter;  // session_code.cpp

// Who a session belongs to: the agent and the user of the request that created it, exactly.
struct SessionOwner {
  std::string principal;    // "" for a user calling without an agent
  std::string issuer, sub;  // "" without a user
  std::string jti_sha256;   // of the creating token's jti (the audit record's)
  // The user's claims when it was created (in memory only): a reload decides its access again
  // by the same bindings (a group, an email) that allowed it.
  nlohmann::json claims = nlohmann::json::object();
  static SessionOwner of(const pipeline::Caller& caller);
  bool is(const pipeline::Caller& caller) const;  // the same agent and the same user
  std::string quota_user() const;                 // the quota book's key; "" without a user
};

class LiveSession {
 public:
  using Clock = std::chrono::steady_clock;
  std::string id;
  std::string template_name;
  SessionOwner owner;
  std::string access_rule;  // what allowed its creation
  nlohmann::json labels = nlohmann::json::object();
  std::chrono::system_clock::time_point created, expires;  // expires: its maximum lifetime
  std::chrono::milliseconds idle_timeout{0};
  std::chrono::milliseconds exec_timeout{0};  // an exec's when it names none
  std::uint64_t output_bytes = 0;              // each exec's, per stream
  std::uint64_t disk_bytes = 0;                // its disk (the work dir and /tmp), shared
  bool warm_start = false;  // its sandbox was started ahead of demand (the template's warmPool)
  std::unique_ptr<backend::Session> sandbox;
  // Its template's credentials, leased for it (null: the template has none). Set before the
  // session is found by anyone; revoked at its end.
  std::shared_ptr<SessionCredentials> credentials;
  // Its code interpreter (POST .../code), made on the first cell.
  std::mutex interpreter_mu;
  std::shared_ptr<SessionInterpreter> interpreter;

  // Whether it is running, and when it was last used (an exec started or ended).
  std::string state() const;
  // An exec begins, or a transfer (a file, a snapshot: it keeps the session busy, but is not
  // counted as an exec): the reason it may not (session_paused, session_ended), or nothing.
  enum class Use { exec, transfer };
  std::optional<Error> begin_exec(Use use = Use::exec);
  void end_exec(Use use = Use::exec);
  // When it goes idle: last use + idle_timeout, unless an exec runs or it is paused (the idle
  // clock stops then; nullopt).
  std::optional<Clock::time_point> idle_deadline() const;
  nlohmann::json to_json() const;  // {id, template, owner, state, created, expires, labels, ...}

 private:
  friend class SessionService;
  mutable std::mutex mu_;
  std::string state_ = "running";  // "starting", "running", "paused", "ending", "ended"
  std::string end_reason_;
  Clock::time_point last_active_ = Clock::now();
  unsigned running_execs_ = 0;
  unsigned transfers_ = 0;  // files and snapshots under way
  std::uint64_t execs_ = 0;
};

struct SessionServiceDeps {
  backend::SessionBackend* backend = nullptr;  // null: creating a session fails (setup_error)
  audit::AuditLog* audit = nullptr;            // null: no records (tests of the service alone)
  SessionStore* store = nullptr;               // null: nothing to recover after a crash
  SnapshotStore* snapshots = nullptr;          // null: no snapshots (501); expired ones are swept
  std::function<std::string()> new_id;
  std::chrono::milliseconds sweep_interval{1000};  // how often idle and expired sessions are looked for
  // The session backend of a template's risk (TierBackends::sessions(risk)), or why none; unset:
  // `backend` runs every template.
  std::function<Result<backend::SessionBackend*>(policy::Risk)> backend_for;
};

// At start: every session a predecessor left in `store` (it died without ending them) gets its
// "ended" record, reason "aborted", and its row goes. Returns their ids: their credential
// leases (the session's id is their invocation) are revoked once the providers exist.
Result<std::vector<std::string>> record_aborted_sessions(SessionStore& store, audit::AuditLog& audit);
// The "ended" record, reason "aborted", of the session of `row`, whose daemon died with it.
audit::SessionRecord aborted_session_record(const SessionRow& row, const std::string& message);

class SessionService {
 public:
  // The backend a template of `risk` runs on (SessionServiceDeps::backend_for), or why none.
  Result<backend::SessionBackend*> backend_for(policy::Risk risk) const;

  explicit SessionService(SessionServiceDeps deps);
  ~SessionService();  // end_all("shutdown")
  SessionService(const SessionService&) = delete;
  SessionService& operator=(const SessionService&) = delete;

  struct CreateRequest {
    std::string template_name;
    std::optional<std::chrono::milliseconds> idle_timeout;  // at most the template's
    nlohmann::json labels = nlohmann::json::object();
    std::string snapshot_id;  // fromSnapshot: resolved by the API into the two below
    // Run once the sandbox has started, before the session is recorded or returned (a
    // snapshot's files unpacked into it); its error ends the sandbox and is the creation's.
    std::function<Status(backend::Session&)> prepare;
    std::optional<audit::SessionSnapshotRecord> from_snapshot;  // named in the created record
    // A snapshot with memory (checked): the session is restored from it (never a ready sandbox).
    std::optional<backend::MemoryImage> memory;
    // The generation's credential broker: leases the template's credentials (null: a template
    // with credentials is refused, credential_unavailable).
    std::shared_ptr<creds::Broker> broker;
  };
  // A new session for `caller` under `config`. Errors by code: unknown_template (404),
  // forbidden (403), quota_exceeded:sessions (429), invalid_input (400), draining (503, shutting
  // down), credential_denied (403) or credential_unavailable (503) naming the variable,
  // setup_error or audit_failed (500). A failed creation leaves nothing: no sandbox, no lease.
  Result<std::shared_ptr<LiveSession>> create(const policy::Config& config, const pipeline::Caller& caller,
                                              const CreateRequest& request);
  // The session if `caller` owns it, or manages sessions (manage_sessions); null otherwise,
  // never saying whether it exists.
  std::shared_ptr<LiveSession> find(const std::string& id, const pipeline::Caller& caller, bool manages) const;
  std::vector<std::shared_ptr<LiveSession>> list(const pipeline::Caller& caller, bool manages) const;
  // Ends it: every process, its cgroups and mounts, then its "ended" record. Idempotent.
  void end(const std::shared_ptr<LiveSession>& session, const std::string& reason, const std::string& message);
  // Pause (every process frozen: no CPU, memory kept, the idle clock stopped) and resume,
  // each with its audit record. Errors: session_paused or session_not_paused (409),
  // freezer_unavailable (no freezer here), session_ended.
  Status pause(const std::shared_ptr<LiveSession>& session);
  Status resume(const std::shared_ptr<LiveSession>& session);
  // Every session (daemon shutdown); from now on none is created.
  void end_all(const std::string& reason);
  // The backend keeps each template's warmPool of sandboxes ready under `config` (and no
  // other: ready ones of an earlier configuration end). At start and on each reload.
  void keep_ready(const policy::Config& config);
  // After a reload: keep_ready(config), and ends the sessions whose template is gone
  // (template_removed) or whose owner may no longer create them (access_revoked).
  void reconcile(const policy::Config& config);
  std::size_t open_count() const;

  // Runs `task` on a thread of its own (a creation, an ending, an exec: each blocks on its
  // sandbox); the destructor waits for every one, after ending every session.
  void spawn(std::function<void()> task);

  // A record of `event` in the session's life beyond its own (file_written, file_read,
  // file_removed, snapshotted), `fill` adding what it did.
  Status record_event(const LiveSession& session, const std::string& event,
                      const std::function<void(audit::SessionRecord&)>& fill);
  SnapshotStore* snapshots() const { return deps_.snapshots; }

  // An exec's audit record goes to the same log.
  audit::AuditLog* audit() const { return deps_.audit; }
  const std::function<std::string()>& new_id() const { return deps_.new_id; }

 private:
  Status check_quota(const policy::Config& config, const SessionOwner& owner) const;  // under mu_
  // A creation's steps after its place is taken: its credentials, its sandbox, what `prepare`
  // puts in it, its row and its record. An error leaves what was made for create() to undo.
  Status launch(LiveSession& session, const policy::Config& config, const policy::SessionTemplate& t,
                const pipeline::Caller& caller, const CreateRequest& request, const std::string& rule);
  Status lease_credentials(LiveSession& session, const policy::SessionTemplate& t, const pipeline::Caller& caller,
                           std::shared_ptr<creds::Broker> broker);
  // Renews a session's credentials and revokes the ones replaced, with their audit record.
  void maintain_credentials(const std::shared_ptr<LiveSession>& session);
  // How long the sweeper may sleep: its interval, or less when a session's credentials are due.
  std::chrono::milliseconds sweep_wait() const;  // under mu_
  Status record(const LiveSession& session, const std::string& event);  // paused, resumed
  void sweep_loop();
  void sweep_once();

  SessionServiceDeps deps_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, std::shared_ptr<LiveSession>> sessions_;
  bool stopping_ = false;
  unsigned tasks_ = 0;  // spawned and not yet done
  std::condition_variable tasks_done_;
  std::thread sweeper_;
};

}  // namespace airlock::server
