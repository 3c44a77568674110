// Internal to the egress proxy (src/egress/*.cpp): the shared part of every connection
// (`Session`: limits, deadlines, the decision and its record, the upstream connection through
// the SSRF guard, the relay) and the interface of the protocol that speaks to the client
// (`Protocol`: HTTP proxy, SOCKS5, port forward, each in a file of its own).
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "egress/policy.hpp"
#include "egress/proxy.hpp"
#include "egress/tls_intercept.hpp"

namespace airlock::egress {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

class Session;

// One sandbox's share of a proxy: its rules, its byte budget, its open connections and their
// records. An EgressProxy has one; the EgressGateway one per admitted invocation, plus a
// deny-all one that a connection belongs to until it proves whose it is.
struct Tenant {
  Tenant(EgressPolicy p, std::string name) : policy(std::move(p)), rule_set(std::move(name)) {}
  EgressPolicy policy;
  std::string rule_set;
  std::uint64_t bytes_up = 0, bytes_down = 0;  // io thread only
  std::uint32_t active = 0;                    // io thread only
  // Header injection (make_interception_ca): the per-run CA and the upstream TLS context.
  std::unique_ptr<InterceptCa> ca;  // io thread only once started
  std::shared_ptr<asio::ssl::context> upstream_tls;

  mutable std::mutex mu;
  std::vector<EgressRecord> records;
  void add_record(EgressRecord r) {
    std::lock_guard lock(mu);
    records.push_back(std::move(r));
  }
};

// The listeners and the thread that serves them, shared by EgressProxy and EgressGateway.
struct ProxyCore {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::vector<std::optional<PortForward>> acceptor_forwards;
  std::thread thread;
  std::set<Session*> live;  // io thread only
  // Whose a new connection is: the sandbox's (EgressProxy) or nobody's (EgressGateway).
  std::shared_ptr<Tenant> first_tenant;
  // EgressGateway only: the tenant that proxy credentials name, or null. Set, a connection
  // must present them before it is decided (Proxy-Authorization, SOCKS5 username/password).
  std::function<std::shared_ptr<Tenant>(std::string_view user, std::string_view password)>
      authenticate;

  void accept(std::size_t index);
  void start();
  // Closes the listeners, ends every open connection (recording it) and joins the thread.
  void stop();
};

struct EgressProxy::Impl : ProxyCore {};

// Why a connection gets no upstream; each protocol answers it in its own way.
enum class Refusal {
  over_limit,       // more connections at once than the limits allow
  request_timeout,  // no complete request in time
  denied,           // the rules (or a spent byte budget) forbid it
  unresolvable,     // the name did not resolve
  connect_failed,   // no checked address accepted the connection
  connect_timeout,  // connecting took longer than the limits allow
};

// The protocol spoken with one client: reads its request, has the session decide and connect,
// answers, then leaves the two sockets to the session's relay.
class Protocol {
 public:
  virtual ~Protocol() = default;
  // Reads the client's request and calls Session::decided() with the policy's decision.
  virtual void start() = 0;
  // Tells the client why it gets no connection, then ends the session.
  virtual void refuse(Refusal refusal, const std::string& why) = 0;
  // Tells the client it is connected and calls Session::relay().
  virtual void upstream_connected() = 0;
};

// The protocols, constructed on a session that outlives them (src/egress/<protocol>.cpp).
std::unique_ptr<Protocol> make_http_proxy_protocol(Session& session);
std::unique_ptr<Protocol> make_socks5_protocol(Session& session);
std::unique_ptr<Protocol> make_forward_protocol(Session& session, PortForward forward);

// An intercepted connection (a HeaderInjection's host:port): TLS with the sandbox under the
// per-run CA's leaf, verified TLS with the upstream, and HTTP/1.1 relayed request by request
// with the header set (src/egress/intercept.cpp).
class Interception {
 public:
  virtual ~Interception() = default;
  // `client_bytes`: what the client sent after its request to the proxy (TLS already).
  virtual void start(std::string client_bytes) = 0;
};

// One client connection, from the first byte to the last relayed one. Owns both sockets;
// every pending handler holds it alive (shared_from_this).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(ProxyCore& proxy, tcp::socket client, std::optional<PortForward> forward);
  ~Session();

  void start();
  // Ends the session now, recording why (used at shutdown, on limits and by the protocols).
  void finish(const std::string& why = {});

  // --- For the protocols ---------------------------------------------------------------
  // Records the decision for host:port and, if it allows, resolves, checks and connects:
  // Protocol::upstream_connected() or Protocol::refuse() follows.
  void decided(const EgressPolicy::Decision& d, std::uint16_t port);
  // Relays both directions until both have ended (src/egress/relay.cpp).
  void relay();
  // Whether the connection is to an injected host:port: then, once the protocol has told
  // the client it is connected, intercept() takes the place of relay().
  bool intercepts() const { return !injections_.empty(); }
  void intercept(std::string client_bytes);  // src/egress/intercept.cpp
  // Ends the session, recording why, unless the deadline is moved or the session ends first.
  void expire_after(std::chrono::milliseconds after, std::string why);
  // Ends the session after `after` whatever else happens (the reader of an answer may be
  // stuck); the deadline that may have led to the answer no longer applies.
  void finish_after(std::chrono::seconds after);
  // Count bytes sent outside the relay; false once the budget is spent.
  bool count_up(std::size_t n);
  bool count_down(std::size_t n);

  std::shared_ptr<Session> self() { return shared_from_this(); }
  tcp::socket& client() { return client_; }
  tcp::socket& upstream() { return upstream_; }
  EgressRecord& record() { return record_; }
  const EgressPolicy& policy() const { return tenant_->policy; }
  const std::string& rule_set() const { return tenant_->rule_set; }
  // Gateway connections: credentials are still to be presented before anything is decided.
  bool needs_credentials() const { return proxy_.authenticate && !authenticated_; }
  // Makes the connection the named tenant's. Refused (the reason): unknown or revoked
  // credentials, or more connections at once than that tenant's limits allow.
  std::optional<std::string> present_credentials(std::string_view user, std::string_view password);
  // Whether it belongs to `t` (the gateway ends a revoked tenant's connections).
  bool belongs_to(const Tenant* t) const { return tenant_.get() == t; }
  bool over_limit() const { return over_limit_; }
  bool finished() const { return finished_; }
  bool timed_out() const { return timed_out_; }

 private:
  struct Direction {
    tcp::socket* from = nullptr;
    tcp::socket* to = nullptr;
    bool upward = false;
    // Allocated when the relay starts and not zeroed, so a direction that carries little (a
    // request, a TLS handshake) commits only the pages its bytes touch.
    std::unique_ptr<char[]> buffer;
    std::size_t offset = 0, pending = 0;  // bytes read and not yet written
    bool eof = false;
  };

  void sniff_protocol();
  void arm_deadline(std::chrono::milliseconds after, std::string why, Refusal refusal);
  void refuse(Refusal refusal, const std::string& why);
  void resolve_and_connect(const EgressPolicy::Decision& d, std::uint16_t port);
  void connect(const std::vector<IpAddress>& addresses, std::uint16_t port);
  void on_connected(const tcp::endpoint& ep);
  void pump(Direction& d);
  void pump_when(tcp::socket& socket, tcp::socket::wait_type what, Direction& d);
  void end_direction(Direction& d);
  void watch_idle();

  ProxyCore& proxy_;
  std::shared_ptr<Tenant> tenant_;  // proxy_.first_tenant until credentials say otherwise
  bool authenticated_ = false;
  tcp::socket client_, upstream_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  std::optional<PortForward> forward_;
  std::unique_ptr<Protocol> protocol_;
  Clock::time_point started_, last_activity_;
  std::array<std::uint8_t, 1> peek_{};
  Direction up_, down_;
  bool up_done_ = false, down_done_ = false, finished_ = false, timed_out_ = false;
  bool over_limit_ = false;
  std::vector<const HeaderInjection*> injections_;  // the policy's, all for one host:port
  EgressRecord record_;
  // Refers to client_ and upstream_: declared after them, so destroyed before.
  std::unique_ptr<Interception> interception_;
};

}  // namespace airlock::egress
