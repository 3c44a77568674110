// Sessions behind several replicas (storage.postgres; docs/sessions.md, "Replicas"). A session
// lives on the replica that created it; a request for it that reaches another replica (a load
// balancer chooses) is forwarded to the holder, found in the shared `sessions` table with its
// address in `replicas`, and the answer streamed back (session_relay.hpp). The forward carries
// the caller's own credentials and grants nothing: the holder authenticates the caller and
// checks the session's owner itself. This replica checks the owner too, from the shared row,
// before anything is sent, so a request that is not the owner's (or a session manager's where
// managers may act) never leaves it and gets the same 404 as a session that does not exist.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "pipeline/authenticator.hpp"
#include "server/core/metrics.hpp"
#include "server/http/http_message.hpp"
#include "server/http/upstream_client.hpp"
#include "server/sessions/session_relay.hpp"
#include "server/sessions/session_store_pg.hpp"

namespace airlock::server {

class SessionForwarder {
 public:
  struct Options {
    UpstreamClient::Options client;  // TLS to the other replicas: server.tls.replica*
    std::function<void(const std::string&)> log;
    // airlock_session_forwards_total{kind="request"|"list"}: each request sent to another
    // replica. Null: not counted.
    Metrics* metrics = nullptr;
  };
  static Result<std::unique_ptr<SessionForwarder>> create(PostgresSessionStore& store, Options options);

  // A request for session `id`, which this replica does not hold (or not for `caller`):
  // relayed to the replica that holds it when `caller` is its owner, or may manage it
  // (`manager_may`: reading and ending it); otherwise 404, as for no session. Not forwarded:
  // a request forwarded already (508 forward_loop), the terminal (`terminal`: 421
  // session_elsewhere) and a caller authenticated by a client certificate (421: the
  // certificate stays with this connection). Blocks until the answer has been relayed: call
  // it on a worker thread.
  void forward(const pipeline::Caller& caller, bool manager_may, const std::string& id, bool terminal,
               const HttpRequest& r, const std::function<void(HttpResponse)>& reply);
  // GET /v1/sessions: `caller`'s sessions held by the other live replicas (every owner's when
  // `manages`), each as its holder lists it (one forwarded GET per replica), or from its row
  // with state "unknown" when the holder does not answer. Errors: the shared table's.
  Result<nlohmann::json> list_elsewhere(const pipeline::Caller& caller, bool manages, const HttpRequest& r);

  // Cuts the forwards under way to replicas not in `live` (they were taken for dead: a
  // stopped process would otherwise hold its forwards open for ever).
  void cut_dead(const std::set<std::string>& live);
  // Cuts every forward under way; later ones are answered 503 (shutdown).
  void stop();

 private:
  SessionForwarder(PostgresSessionStore& store, std::unique_ptr<UpstreamClient> client,
                   std::function<void(const std::string&)> log, Metrics* metrics)
      : store_(store), client_(std::move(client)), log_(std::move(log)), metrics_(metrics) {}
  void count(const char* kind) {
    if (metrics_) metrics_->count("airlock_session_forwards_total", {{"kind", kind}});
  }
  class Registered;  // a forward under way, with the breaker that cuts it
  std::optional<HttpResponse> refusal(const pipeline::Caller& caller, bool manager_may, const std::string& id,
                                      bool terminal, const HttpRequest& r,
                                      const std::optional<PostgresSessionStore::Location>& where) const;
  nlohmann::json list_of(const RelayTarget& target, const std::vector<PostgresSessionStore::Location>& rows,
                         const HttpRequest& r);

  PostgresSessionStore& store_;
  std::unique_ptr<UpstreamClient> client_;
  std::function<void(const std::string&)> log_;
  Metrics* metrics_;
  std::mutex mu_;
  bool stopping_ = false;
  std::uint64_t next_ = 0;
  std::map<std::uint64_t, std::pair<std::string, SocketBreaker*>> under_way_;  // -> replica, breaker
};

}  // namespace airlock::server
