#include "server/sessions/session_service.hpp"

#include <algorithm>
#include <cstdio>

#include "access/decide.hpp"
#include "audit/audit_log.hpp"
#include "audit/sandbox_record.hpp"
#include "audit/session_record.hpp"
#include "pipeline/quotas/quota_rules.hpp"
#include "pipeline/stages/credentials.hpp"
#include "server/sessions/session_code.hpp"

namespace airlock::server {
namespace {

using Clock = LiveSession::Clock;

std::int64_t epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::optional<audit::SubjectRecord> subject_of(const SessionOwner& o) {
  if (o.issuer.empty() && o.sub.empty()) return std::nullopt;
  return audit::SubjectRecord{o.issuer, o.sub, o.jti_sha256};
}

// What a session of `t` runs as: the template's environment, data paths and egress rules,
// the tier's limits with the template's over them.
backend::RunRequest session_request(const policy::Config& config, const policy::SessionTemplate& t) {
  backend::RunRequest request;
  request.env = t.env;
  request.limits = config.limits_for(t);
  for (const auto& p : t.data_paths)
    request.mounts.push_back({backend::Mount::Kind::data, p.host_path, p.path_inside, !p.writable});
  request.egress = t.network;
  return request;
}

// What the backend names a session's sandbox by: its egress rules' name in denials, its template.
backend::RunContext session_context(const policy::SessionTemplate& t) {
  backend::RunContext context;
  context.rule_set = "session template " + t.name + "'s network rules";
  context.tool_name = t.name;
  return context;
}

// The backend's key of the sandboxes it keeps ready for `t`: the template under this very
// configuration (a reload's changed template never takes one started from the old).
std::string warm_key(const policy::Config& config, const policy::SessionTemplate& t) {
  return t.name + "@" + config.version;
}

// A record of `event` in the life of the session `id` of `template_name`, owned by `owner`.
audit::SessionRecord session_record(const std::string& id, const std::string& event, const std::string& template_name,
                                    const SessionOwner& owner) {
  audit::SessionRecord record;
  record.session_id = id;
  record.event = event;
  record.template_name = template_name;
  record.principal = owner.principal;
  record.subject = subject_of(owner);
  return record;
}

std::map<std::string, std::uint64_t> limits_record(const sandbox::Limits& l, const LiveSession& s) {
  std::map<std::string, std::uint64_t> out = {
      {"memory_bytes", l.memory_bytes}, {"pids", l.pids}, {"disk_bytes", l.disk_bytes},
      {"output_bytes", l.output_bytes}, {"max_lifetime_ms", static_cast<std::uint64_t>(l.wall_time.count())},
      {"idle_timeout_ms", static_cast<std::uint64_t>(s.idle_timeout.count())}};
  if (l.cpus) out["cpu_millicores"] = static_cast<std::uint64_t>(*l.cpus * 1000);
  if (l.cpu_time) out["cpu_time_ms"] = static_cast<std::uint64_t>(l.cpu_time->count());
  return out;
}

Status append(audit::AuditLog* log, const audit::SessionRecord& record) {
  if (!log) return {};
  auto receipt = log->append(audit::to_fields(record));
  if (!receipt) return Error::make("audit_failed", "the session's audit record: " + receipt.error().message);
  return {};
}

// The record's reason when the sandbox ended on its own: its verdict (memory_limit, a
// seccomp violation...), or its wall clock, which is the session's maximum lifetime.
std::string own_end_reason(const backend::RunResult& r) {
  if (r.verdict == sandbox::Verdict::timeout) return "max_lifetime";
  return std::string(sandbox::verdict_name(r.verdict));
}

// Whose credentials a session's are: its owner's (the agent, and the user it acts for), with
// the session's id as the leases' invocation. A session lives on past any one request: each
// lease asks for the longest life a credential may have, and its own ttl decides.
creds::LeaseContext lease_context(const LiveSession& s, const policy::SessionTemplate& t, const pipeline::Caller& caller) {
  creds::LeaseContext c;
  c.invocation_id = s.id;
  c.tool = "session/" + t.name;
  c.agent = s.owner.principal;
  c.user_issuer = s.owner.issuer;
  c.user_sub = s.owner.sub;
  if (caller.subject) c.user_scopes = pipeline::user_token_scopes(*caller.subject);
  c.max_ttl = policy::kMaxCredentialTtl;
  for (const auto& f : t.network.forwards) c.forwards.push_back({f.listen_port, f.host, f.port});
  return c;
}

}  // namespace

SessionOwner SessionOwner::of(const pipeline::Caller& caller) {
  SessionOwner o;
  if (caller.actor) o.principal = caller.actor->principal;
  if (caller.subject) {
    o.issuer = caller.subject->issuer;
    o.sub = caller.subject->sub;
    o.claims = caller.subject->claims;
  }
  o.jti_sha256 = caller.subject_jti_sha256;
  return o;
}

bool SessionOwner::is(const pipeline::Caller& caller) const {
  const std::string their_principal = caller.actor ? caller.actor->principal : "";
  const std::string their_issuer = caller.subject ? caller.subject->issuer : "";
  const std::string their_sub = caller.subject ? caller.subject->sub : "";
  return (caller.actor || caller.subject) && their_principal == principal && their_issuer == issuer &&
         their_sub == sub;
}

std::string SessionOwner::quota_user() const {
  return issuer.empty() && sub.empty() ? "" : pipeline::quota_user_key(issuer, sub);
}

std::string LiveSession::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

std::optional<Error> LiveSession::begin_exec(Use use) {
  std::lock_guard lock(mu_);
  if (state_ == "paused") return Error::make("session_paused", "the session is paused: resume it first");
  if (state_ != "running") return Error::make("session_ended", "the session has ended");
  if (use == Use::exec) {
    ++running_execs_;
    ++execs_;
  } else {
    ++transfers_;
  }
  last_active_ = Clock::now();
  return std::nullopt;
}

void LiveSession::end_exec(Use use) {
  std::lock_guard lock(mu_);
  unsigned& count = use == Use::exec ? running_execs_ : transfers_;
  if (count > 0) --count;
  last_active_ = Clock::now();
}

std::optional<Clock::time_point> LiveSession::idle_deadline() const {
  std::lock_guard lock(mu_);
  if (running_execs_ > 0 || transfers_ > 0 || state_ == "paused") return std::nullopt;
  return last_active_ + idle_timeout;
}

nlohmann::json LiveSession::to_json() const {
  std::lock_guard lock(mu_);
  nlohmann::json owner_json = {{"principal", owner.principal.empty() ? nlohmann::json() : nlohmann::json(owner.principal)}};
  if (!owner.sub.empty()) owner_json["user"] = {{"issuer", owner.issuer}, {"sub", owner.sub}};
  nlohmann::json j = {{"id", id},
                      {"template", template_name},
                      {"owner", owner_json},
                      {"state", state_},
                      {"created", epoch_ms(created)},
                      {"expires", epoch_ms(expires)},
                      {"idle_timeout_ms", idle_timeout.count()},
                      {"labels", labels},
                      {"start", warm_start ? "warm" : "cold"},
                      {"execs", execs_},
                      {"running_execs", running_execs_}};
  if (!end_reason_.empty()) j["end_reason"] = end_reason_;
  if (sandbox && (state_ == "running" || state_ == "paused"))
    if (auto cpu = sandbox->cpu_used())  // what its processes have used so far
      j["usage"] = {{"cpu_user_ms", cpu->user_ns / 1'000'000}, {"cpu_sys_ms", cpu->sys_ns / 1'000'000}};
  return j;
}

SessionService::SessionService(SessionServiceDeps deps) : deps_(std::move(deps)) {
  sweeper_ = std::thread([this] { sweep_loop(); });
}

SessionService::~SessionService() {
  end_all("shutdown");
  {
    std::unique_lock lock(mu_);
    stopping_ = true;
    tasks_done_.wait(lock, [&] { return tasks_ == 0; });  // each ends with its session
  }
  wake_.notify_all();
  sweeper_.join();
}

void SessionService::spawn(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    ++tasks_;
  }
  std::thread([this, task = std::move(task)] {
    task();
    std::lock_guard lock(mu_);
    if (--tasks_ == 0) tasks_done_.notify_all();
  }).detach();
}

Status SessionService::check_quota(const policy::Config& config, const SessionOwner& owner) const {
  auto count = [&](auto same) {
    return static_cast<std::uint32_t>(std::count_if(sessions_.begin(), sessions_.end(), [&](const auto& kv) {
      return kv.second->state() != "ended" && same(kv.second->owner);
    }));
  };
  const auto by_principal = config.quotas.for_principal(owner.principal).sessions;
  if (!owner.principal.empty() && by_principal &&
      count([&](const SessionOwner& o) { return o.principal == owner.principal; }) >= *by_principal)
    return Error::make("quota_exceeded:sessions", "principal '" + owner.principal + "' has " + std::to_string(*by_principal) +
                                             " sessions open, its quota (quotas: sessions); end one first");
  const auto by_user = config.quotas.users.sessions;
  if (!owner.sub.empty() && by_user &&
      count([&](const SessionOwner& o) { return o.issuer == owner.issuer && o.sub == owner.sub; }) >= *by_user)
    return Error::make("quota_exceeded:sessions", "user '" + owner.sub + "' has " + std::to_string(*by_user) +
                                             " sessions open, their quota (quotas.users: sessions); end one first");
  return {};
}

Result<std::shared_ptr<LiveSession>> SessionService::create(const policy::Config& config, const pipeline::Caller& caller,
                                                            const CreateRequest& request) {
  const access::Actor* actor = caller.actor ? &*caller.actor : nullptr;
  const access::Subject* subject = caller.subject ? &*caller.subject : nullptr;
  const auto decision = access::decide(config, actor, subject, policy::Action::create_session, request.template_name);
  if (!decision.allowed) return Error::make(decision.kind == "unknown_template" ? "unknown_template" : "forbidden", decision.reason);
  const policy::SessionTemplate& t = *config.find_session_template(request.template_name);
  if (request.idle_timeout && (*request.idle_timeout < std::chrono::seconds(1) || *request.idle_timeout > t.idle_timeout))
    return Error::make("invalid_input", "idleTimeout: from 1s to the template's " +
                                            std::to_string(t.idle_timeout.count() / 1000) + "s");
  auto runs_on = backend_for(t.risk);
  if (!runs_on) return runs_on.error();

  auto session = std::make_shared<LiveSession>();
  session->id = deps_.new_id();
  session->template_name = t.name;
  session->owner = SessionOwner::of(caller);
  session->access_rule = decision.rule;
  session->labels = request.labels;
  session->idle_timeout = request.idle_timeout.value_or(t.idle_timeout);
  const auto limits = config.limits_for(t);
  session->exec_timeout = t.limits.timeout.value_or(config.tiers.at(t.risk).wall_time);
  session->output_bytes = limits.output_bytes;
  session->disk_bytes = limits.disk_bytes;
  session->state_ = "starting";
  {
    std::lock_guard lock(mu_);  // the place is taken before the sandbox starts: two creations race for it
    if (stopping_) return Error::make("draining", "the daemon is shutting down");
    if (auto within = check_quota(config, session->owner); !within) return within.error();
    sessions_[session->id] = session;
  }
  if (auto launched = launch(*session, config, t, caller, request, decision.rule); !launched) {
    if (session->sandbox) session->sandbox->end();
    if (session->credentials) (void)session->credentials->revoke_all();
    std::lock_guard lock(mu_);
    sessions_.erase(session->id);
    return launched.error();
  }
  {
    std::lock_guard lock(session->mu_);
    session->state_ = "running";
    session->last_active_ = Clock::now();
  }
  return session;
}

Status SessionService::launch(LiveSession& session, const policy::Config& config, const policy::SessionTemplate& t,
                              const pipeline::Caller& caller, const CreateRequest& request, const std::string& rule) {
  if (auto leased = lease_credentials(session, t, caller, request.broker); !leased) return leased;
  const backend::RunRequest run = session_request(config, t);
  backend::RunContext context = session_context(t);
  context.invocation_id = session.id;
  if (t.warm_pool > 0 && !request.memory) context.warm_key = warm_key(config, t);
  auto runs_on = backend_for(t.risk);
  if (!runs_on) return runs_on.error();
  auto started = request.memory ? (*runs_on)->restore_session(run, context, *request.memory)
                                : (*runs_on)->start_session(run, context);
  if (!started && request.memory && started.error().code == "memory_snapshot_unsupported") return started.error();
  if (!started) return Error::make("setup_error", "the session's sandbox did not start: " + started.error().message);
  session.created = std::chrono::system_clock::now();
  session.expires = session.created + run.limits.wall_time;
  session.sandbox = std::move(*started);
  session.warm_start = session.sandbox->warm();
  if (request.prepare)
    if (auto ready = request.prepare(*session.sandbox); !ready) return ready;
  if (deps_.store)  // before its record: a crash from here on leaves a row to record it aborted
    if (auto kept = deps_.store->add({session.id, t.name, session.owner.principal, session.owner.issuer,
                                      session.owner.sub, epoch_ms(session.created)});
        !kept)
      return Error::make("storage_unavailable", "the session could not be recorded, so it was ended: " + kept.error().message);
  audit::SessionRecord record = session_record(session.id, "created", t.name, session.owner);
  record.access_rule = rule;
  record.limits = limits_record(run.limits, session);
  record.snapshot = request.from_snapshot;
  if (session.credentials) record.credentials = session.credentials->uses();
  if (auto written = append(deps_.audit, record); !written) {  // no record, no session
    if (deps_.store) (void)deps_.store->remove(session.id);
    return written;
  }
  return {};
}

Status SessionService::lease_credentials(LiveSession& session, const policy::SessionTemplate& t,
                                         const pipeline::Caller& caller, std::shared_ptr<creds::Broker> broker) {
  if (t.credentials.empty()) return {};
  if (!broker)
    return Error::make("credential_unavailable",
                       "session template " + t.name + " has credentials, and no credential broker runs here");
  SessionCredentials::Setup setup;
  setup.broker = std::move(broker);
  setup.specs = t.credentials;
  setup.context = lease_context(session, t, caller);
  setup.fingerprint = [log = deps_.audit](std::string_view value) {
    return log ? log->credential_fingerprint(value) : std::string();
  };
  auto leased = SessionCredentials::lease(std::move(setup));
  if (!leased) {
    const std::string code = leased.error().code == "credential_denied" ? "credential_denied" : "credential_unavailable";
    return Error::make(code, "a credential of session template " + t.name + ": " + leased.error().message);
  }
  session.credentials = std::move(*leased);
  return {};
}

std::shared_ptr<LiveSession> SessionService::find(const std::string& id, const pipeline::Caller& caller,
                                                  bool manages) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->state() == "starting") return nullptr;
  if (!manages && !it->second->owner.is(caller)) return nullptr;
  return it->second;
}

std::vector<std::shared_ptr<LiveSession>> SessionService::list(const pipeline::Caller& caller, bool manages) const {
  std::vector<std::shared_ptr<LiveSession>> out;
  std::lock_guard lock(mu_);
  for (const auto& [id, s] : sessions_)
    if (s->state() != "starting" && (manages || s->owner.is(caller))) out.push_back(s);
  return out;
}

Status SessionService::record(const LiveSession& s, const std::string& event) {
  return append(deps_.audit, session_record(s.id, event, s.template_name, s.owner));
}

Status SessionService::record_event(const LiveSession& s, const std::string& event,
                                    const std::function<void(audit::SessionRecord&)>& fill) {
  auto r = session_record(s.id, event, s.template_name, s.owner);
  fill(r);
  return append(deps_.audit, r);
}

Status SessionService::pause(const std::shared_ptr<LiveSession>& session) {
  std::lock_guard lock(session->mu_);  // one pause, resume or end at a time
  if (session->state_ == "paused") return Error::make("session_paused", "the session is paused already");
  if (session->state_ != "running") return Error::make("session_ended", "the session has ended");
  if (auto frozen = session->sandbox->freeze(true); !frozen) return frozen;
  session->state_ = "paused";
  return record(*session, "paused");
}

Status SessionService::resume(const std::shared_ptr<LiveSession>& session) {
  std::lock_guard lock(session->mu_);
  if (session->state_ == "running") return Error::make("session_not_paused", "the session is not paused");
  if (session->state_ != "paused") return Error::make("session_ended", "the session has ended");
  if (auto thawed = session->sandbox->freeze(false); !thawed) return thawed;
  session->state_ = "running";
  session->last_active_ = Clock::now();  // the idle clock starts again
  return record(*session, "resumed");
}

void SessionService::end(const std::shared_ptr<LiveSession>& session, const std::string& reason,
                         const std::string& message) {
  {
    std::lock_guard lock(session->mu_);
    if (session->state_ != "running" && session->state_ != "paused") return;  // ending or ended: one record
    session->state_ = "ending";
  }
  const backend::RunResult result = session->sandbox->end();
  // Its processes are gone: nothing holds a credential now.
  std::vector<audit::SessionLeaseEnd> revoked;
  if (session->credentials) revoked = session->credentials->revoke_all();
  std::uint64_t execs = 0;
  {
    std::lock_guard lock(session->mu_);
    session->state_ = "ended";
    session->end_reason_ = reason;
    execs = session->execs_;
  }
  {
    std::lock_guard lock(mu_);
    sessions_.erase(session->id);
  }
  audit::SessionRecord record = session_record(session->id, "ended", session->template_name, session->owner);
  record.reason = reason;
  record.message = message;
  record.usage = audit::usage_of(result.usage);
  record.usage["execs"] = execs;
  for (const auto& e : result.egress)
    record.egress.push_back({e.host, e.port, e.address, e.allowed, e.rule, e.bytes_up, e.bytes_down, e.ms});
  record.credentials_revoked = std::move(revoked);
  // A failed log refuses every later append (the daemon's health says so); the row then stays,
  // and the next start records the session as aborted.
  if (append(deps_.audit, record) && deps_.store) (void)deps_.store->remove(session->id);
}

audit::SessionRecord aborted_session_record(const SessionRow& row, const std::string& message) {
  SessionOwner owner;
  owner.principal = row.principal;
  owner.issuer = row.issuer;
  owner.sub = row.sub;
  audit::SessionRecord record = session_record(row.id, "ended", row.template_name, owner);
  record.reason = "aborted";
  record.message = message;
  return record;
}

Result<std::vector<std::string>> record_aborted_sessions(SessionStore& store, audit::AuditLog& audit) {
  auto rows = store.all();
  if (!rows) return rows.error();
  std::vector<std::string> ids;
  for (const auto& row : *rows) {
    auto record = aborted_session_record(row, "the daemon that held it stopped without ending it");
    if (auto written = append(&audit, record); !written) return written.error();
    if (auto removed = store.remove(row.id); !removed) return removed.error();
    ids.push_back(row.id);
  }
  return ids;
}

void SessionService::end_all(const std::string& reason) {
  std::vector<std::shared_ptr<LiveSession>> all;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (const auto& [id, s] : sessions_) all.push_back(s);
  }
  for (const auto& s : all) end(s, reason, "the daemon is shutting down");
}

Result<backend::SessionBackend*> SessionService::backend_for(policy::Risk risk) const {
  if (deps_.backend_for) return deps_.backend_for(risk);
  if (!deps_.backend) return Error::make("setup_error", "no backend runs sessions here");
  return deps_.backend;
}

// Each backend keeps ready the sandboxes of its templates, and only those (an empty list ends
// what an earlier configuration had it keep).
void SessionService::keep_ready(const policy::Config& config) {
  std::map<backend::SessionBackend*, std::vector<backend::ReadySessions>> wanted;
  if (deps_.backend) wanted[deps_.backend];
  for (const auto& t : config.session_templates) {
    auto runs_on = backend_for(t.risk);
    if (runs_on) wanted[*runs_on];
    if (t.warm_pool == 0 || !runs_on) continue;
    backend::ReadySessions r;
    r.key = warm_key(config, t);
    r.request = session_request(config, t);
    r.context = session_context(t);
    r.count = t.warm_pool;
    if (t.interpreter.start_ahead) r.started_ahead = interpreter_command(t);
    wanted[*runs_on].push_back(std::move(r));
  }
  for (auto& [b, ready] : wanted) b->keep_ready(std::move(ready));
}

void SessionService::reconcile(const policy::Config& config) {
  keep_ready(config);
  std::vector<std::pair<std::shared_ptr<LiveSession>, std::pair<std::string, std::string>>> ending;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, s] : sessions_) {
      if (const auto state = s->state(); state != "running" && state != "paused") continue;
      if (!config.find_session_template(s->template_name)) {
        ending.push_back({s, {"template_removed", "its template '" + s->template_name + "' is no longer configured"}});
        continue;
      }
      pipeline::Caller owner;
      if (!s->owner.principal.empty()) owner.actor = access::Actor{s->owner.principal};
      if (!s->owner.sub.empty()) owner.subject = access::Subject{s->owner.issuer, s->owner.sub, s->owner.claims};
      const auto d = access::decide(config, owner.actor ? &*owner.actor : nullptr,
                                    owner.subject ? &*owner.subject : nullptr, policy::Action::create_session,
                                    s->template_name);
      if (!d.allowed) ending.push_back({s, {"access_revoked", d.reason}});
    }
  }
  for (const auto& [s, why] : ending) end(s, why.first, why.second);
}

std::size_t SessionService::open_count() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

void SessionService::sweep_once() {
  std::vector<std::pair<std::shared_ptr<LiveSession>, std::pair<std::string, std::string>>> ending;
  const auto now = Clock::now();
  const auto wall_now = std::chrono::system_clock::now();
  if (deps_.snapshots) deps_.snapshots->remove_expired(epoch_ms(wall_now));  // their retention
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, s] : sessions_) {
      if (const auto state = s->state(); state != "running" && state != "paused") continue;
      if (s->sandbox->ended()) {  // its limits, its seccomp filter, or its wall clock ended it
        ending.push_back({s, {"", "its sandbox ended"}});
      } else if (wall_now >= s->expires) {
        ending.push_back({s, {"max_lifetime", "it reached its maximum lifetime"}});
      } else if (auto idle = s->idle_deadline(); idle && now >= *idle) {
        ending.push_back({s, {"idle_timeout", "it was idle for " + std::to_string(s->idle_timeout.count() / 1000) + " s"}});
      }
    }
  }
  for (auto& [s, why] : ending) {
    if (why.first.empty()) why.first = own_end_reason(s->sandbox->end());
    end(s, why.first, why.second);
  }
  std::vector<std::shared_ptr<LiveSession>> due;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, s] : sessions_)
      if (auto when = s->credentials ? s->credentials->next_due() : std::nullopt; when && *when <= wall_now)
        due.push_back(s);
  }
  // Off the sweeper: a provider may be slow. A renewal still under way makes the next one a no-op.
  for (const auto& s : due) spawn([this, s] { maintain_credentials(s); });
}

void SessionService::maintain_credentials(const std::shared_ptr<LiveSession>& session) {
  session->credentials->maintain(std::chrono::system_clock::now(), [&](const SessionCredentials::Maintenance& m) {
    std::string event = "credentials_revoked";  // leases a renewal replaced, at their expiry
    if (m.failed) event = "credentials_failed";
    else if (!m.issued.empty()) event = "credentials_renewed";
    (void)record_event(*session, event, [&](audit::SessionRecord& r) {
      r.credentials = m.issued;
      r.credentials_revoked = m.revoked;
      if (m.failed) r.message = "renewing its credentials failed, so the session has none from now on: " + m.failed->message;
    });
    if (m.failed)
      std::fprintf(stderr, "airlock: session %s: renewing its credentials failed; every lease is revoked: %s\n",
                   session->id.c_str(), m.failed->message.c_str());
  });
  wake_.notify_all();  // the sweeper's next wait depends on when these are due now
}

std::chrono::milliseconds SessionService::sweep_wait() const {
  auto wait = deps_.sweep_interval;
  const auto now = std::chrono::system_clock::now();
  for (const auto& [id, s] : sessions_)
    if (auto when = s->credentials ? s->credentials->next_due() : std::nullopt)
      wait = std::min(wait, std::max(std::chrono::ceil<std::chrono::milliseconds>(*when - now), std::chrono::milliseconds(1)));
  return wait;
}

void SessionService::sweep_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, sweep_wait());
    if (stopping_) break;
    lock.unlock();
    sweep_once();
    lock.lock();
  }
}

}  // namespace airlock::server
