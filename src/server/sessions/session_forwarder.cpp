#include "server/sessions/session_forwarder.hpp"

#include "server/sessions/session_service.hpp"
#include "server/sessions/sessions_api.hpp"

namespace airlock::server {
namespace {

constexpr std::size_t kMaxListBytes = 16u << 20;  // one replica's answer to GET /v1/sessions

SessionOwner owner_of(const SessionRow& row) {
  SessionOwner o;
  o.principal = row.principal;
  o.issuer = row.issuer;
  o.sub = row.sub;
  return o;
}

HttpResponse elsewhere(const std::string& id, const std::string& replica, const std::string& why) {
  return error_response(421, "session_elsewhere",
                        "session " + id + " is held by another replica (" + replica + ") and " + why);
}

// A session as its row tells it, when its replica does not answer the list.
nlohmann::json row_json(const PostgresSessionStore::Location& l) {
  nlohmann::json owner = {{"principal", l.row.principal.empty() ? nlohmann::json() : nlohmann::json(l.row.principal)}};
  if (!l.row.sub.empty()) owner["user"] = {{"issuer", l.row.issuer}, {"sub", l.row.sub}};
  return {{"id", l.row.id},       {"template", l.row.template_name}, {"owner", owner},
          {"state", "unknown"},   {"created", l.row.created_ms},     {"replica", l.replica}};
}

}  // namespace

// A forward under way: its breaker is known to cut_dead() and stop() while it lasts.
class SessionForwarder::Registered {
 public:
  Registered(SessionForwarder& f, const std::string& replica) : f_(f) {
    std::lock_guard lock(f_.mu_);
    id_ = f_.next_++;
    f_.under_way_[id_] = {replica, &breaker};
    if (f_.stopping_) breaker.break_now();
  }
  ~Registered() {
    std::lock_guard lock(f_.mu_);
    f_.under_way_.erase(id_);
  }
  SocketBreaker breaker;

 private:
  SessionForwarder& f_;
  std::uint64_t id_ = 0;
};

Result<std::unique_ptr<SessionForwarder>> SessionForwarder::create(PostgresSessionStore& store, Options options) {
  auto client = UpstreamClient::create(options.client);
  if (!client) return Error::make(client.error().code, "forwarding to the other replicas: " + client.error().message);
  auto log = options.log ? options.log : [](const std::string&) {};
  return std::unique_ptr<SessionForwarder>(new SessionForwarder(store, std::move(*client), std::move(log), options.metrics));
}

// Why `r` is answered here rather than forwarded, or nothing: it goes to `where`.
std::optional<HttpResponse> SessionForwarder::refusal(const pipeline::Caller& caller, bool manager_may,
                                                      const std::string& id, bool terminal, const HttpRequest& r,
                                                      const std::optional<PostgresSessionStore::Location>& where) const {
  // Held by nobody, by this replica (starting or ending here), or by one with no row (dead,
  // not yet taken over): as for no session.
  if (!where || where->replica == store_.replica() || where->address.empty()) return session_not_found(id);
  if (!owner_of(where->row).is(caller) && !manager_may) return session_not_found(id);
  if (is_forwarded(r))
    return error_response(508, "forward_loop",
                          "this request was forwarded here already (by replica " + r.headers.at("airlock-forwarded-by") +
                              "); session " + id + " is held by replica " + where->replica + ": not forwarded again");
  if (terminal) return elsewhere(id, where->replica, "its terminal is served there only: not forwarded");
  if (caller.credential == "certificate")
    return elsewhere(id, where->replica,
                     "a caller authenticated by a client certificate cannot be forwarded (the certificate stays "
                     "with this connection): use an API key or a token");
  return std::nullopt;
}

void SessionForwarder::forward(const pipeline::Caller& caller, bool manager_may, const std::string& id, bool terminal,
                               const HttpRequest& r, const std::function<void(HttpResponse)>& reply) {
  auto where = store_.locate(id);
  if (!where) return reply(session_error_response(where.error()));
  if (auto refused = refusal(caller, manager_may, id, terminal, r, *where)) return reply(std::move(*refused));
  Registered sending(*this, (*where)->replica);
  if (sending.breaker.broken()) return reply(error_response(503, "draining", "the daemon is shutting down"));
  count("request");
  relay(*client_, RelayTarget{(*where)->replica, (*where)->address}, relayed_request(r, store_.replica()),
        sending.breaker, reply, log_);
}

Result<nlohmann::json> SessionForwarder::list_elsewhere(const pipeline::Caller& caller, bool manages,
                                                        const HttpRequest& r) {
  std::optional<SessionRow> owner;
  if (!manages) {
    const SessionOwner o = SessionOwner::of(caller);
    owner = SessionRow{"", "", o.principal, o.issuer, o.sub, 0};
  }
  auto held = store_.held_elsewhere(owner);
  if (!held) return held.error();
  std::map<std::string, std::vector<PostgresSessionStore::Location>> by_replica;
  for (auto& l : *held) by_replica[l.replica].push_back(std::move(l));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [replica, rows] : by_replica)
    for (auto& session : list_of(RelayTarget{replica, rows.front().address}, rows, r)) out.push_back(std::move(session));
  return out;
}

// One replica's own list for the caller (forwarded: it does not ask the others), or its rows.
nlohmann::json SessionForwarder::list_of(const RelayTarget& target,
                                         const std::vector<PostgresSessionStore::Location>& rows,
                                         const HttpRequest& r) {
  Registered sending(*this, target.replica);
  count("list");
  auto listed = fetch_json(*client_, target, relayed_request(r, store_.replica()), sending.breaker, kMaxListBytes);
  if (listed && listed->is_object() && (*listed)["sessions"].is_array()) return (*listed)["sessions"];
  log_("listing the sessions of replica " + target.replica + ": " +
       (listed ? std::string("its answer has no sessions list") : listed.error().message));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : rows) out.push_back(row_json(l));
  return out;
}

void SessionForwarder::cut_dead(const std::set<std::string>& live) {
  std::lock_guard lock(mu_);
  for (auto& [id, sending] : under_way_)
    if (!live.count(sending.first)) sending.second->break_now();
}

void SessionForwarder::stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  for (auto& [id, sending] : under_way_) sending.second->break_now();
}

}  // namespace airlock::server
