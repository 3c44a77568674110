// The shared egress gateway (gateway.hpp): a ProxyCore whose connections start as nobody's
// (a deny-all tenant) and become an admitted invocation's when they present its credentials.
#include "egress/gateway.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <future>
#include <map>

#include "egress/session.hpp"

namespace airlock::egress {

struct EgressGateway::Impl {
  ProxyCore core;
  std::mutex mu;
  struct Entry {
    std::string password;
    std::shared_ptr<Tenant> tenant;
  };
  std::map<std::string, Entry, std::less<>> admitted;  // by username

  std::shared_ptr<Tenant> find(std::string_view user, std::string_view password) {
    std::lock_guard lock(mu);
    auto it = admitted.find(user);
    if (it == admitted.end() || it->second.password.size() != password.size() ||
        CRYPTO_memcmp(it->second.password.data(), password.data(), password.size()) != 0)
      return nullptr;
    return it->second.tenant;
  }

  // On the io thread: ends the tenant's open connections; returns when they are recorded.
  void end_connections_of(const Tenant* tenant) {
    if (!core.thread.joinable()) return;
    std::promise<void> done;
    asio::post(core.io, [this, tenant, &done] {
      std::vector<Session*> open;
      for (auto* s : core.live)
        if (s->belongs_to(tenant)) open.push_back(s);
      for (auto* s : open) s->finish("the call ended: its proxy credentials are revoked");
      done.set_value();
    });
    done.get_future().wait();
  }
};

struct EgressGateway::Admission::State {
  std::weak_ptr<EgressGateway::Impl> gateway;
  std::shared_ptr<Tenant> tenant;
  bool closed = false;
};

namespace {

// A deny-all tenant for connections that have not presented credentials yet: they may be
// many at once (every pod of the cluster), and the rules of nobody allow nothing.
std::shared_ptr<Tenant> nobody() {
  EgressRules none;
  none.limits.max_connections = 4096;
  auto policy = EgressPolicy::compile(none);
  return std::make_shared<Tenant>(std::move(*policy), "the egress gateway (no credentials yet)");
}

Result<std::string> random_password() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1)
    return Error::make("egress gateway", "the random source failed to make proxy credentials");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace

EgressGateway::EgressGateway() : impl_(std::make_shared<Impl>()) {
  impl_->core.first_tenant = nobody();
  impl_->core.authenticate = [impl = impl_.get()](std::string_view user, std::string_view password) {
    return impl->find(user, password);
  };
}

EgressGateway::~EgressGateway() { stop(); }

Status EgressGateway::listen(const std::string& address, std::uint16_t port) {
  error_code ec;
  auto ip = asio::ip::make_address(address, ec);
  if (ec) return Error::make("egress gateway", "cannot listen on " + address + ": not an IP address");
  auto acceptor = std::make_unique<tcp::acceptor>(impl_->core.io);
  tcp::endpoint endpoint(ip, port);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Error::make("egress gateway", "cannot listen on " + address + ":" +
                                             std::to_string(port) + ": " + ec.message());
  impl_->core.acceptors.push_back(std::move(acceptor));
  impl_->core.acceptor_forwards.emplace_back(std::nullopt);
  return {};
}

std::uint16_t EgressGateway::port() const {
  if (impl_->core.acceptors.empty()) return 0;
  error_code ec;
  auto endpoint = impl_->core.acceptors.front()->local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

void EgressGateway::start() { impl_->core.start(); }

void EgressGateway::stop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->admitted.clear();
  }
  impl_->core.stop();
}

Result<std::unique_ptr<EgressGateway::Admission>> EgressGateway::admit(EgressPolicy policy,
                                                                      std::string rule_set,
                                                                      const std::string& username) {
  if (username.empty() || username.size() > 255 || username.find(':') != std::string::npos)
    return Error::make("egress gateway", "the invocation name '" + username +
                                             "' cannot be a proxy user name (1-255 bytes, no ':')");
  auto password = random_password();
  if (!password) return password.error();
  auto state = std::make_shared<Admission::State>();
  state->gateway = impl_;
  state->tenant = std::make_shared<Tenant>(std::move(policy), std::move(rule_set));
  {
    std::lock_guard lock(impl_->mu);
    if (!impl_->admitted.emplace(username, Impl::Entry{*password, state->tenant}).second)
      return Error::make("egress gateway", "invocation " + username + " is admitted already");
  }
  return std::unique_ptr<Admission>(new Admission(std::move(state), username, std::move(*password)));
}

EgressGateway::Admission::Admission(std::shared_ptr<State> state, std::string username,
                                    std::string password)
    : state_(std::move(state)), username_(std::move(username)), password_(std::move(password)) {}

EgressGateway::Admission::~Admission() { (void)close(); }

std::vector<EgressRecord> EgressGateway::Admission::close() {
  if (state_->closed) return {};
  state_->closed = true;
  if (auto gateway = state_->gateway.lock()) {
    {
      std::lock_guard lock(gateway->mu);
      auto it = gateway->admitted.find(username_);
      if (it != gateway->admitted.end() && it->second.tenant == state_->tenant)
        gateway->admitted.erase(it);
    }
    gateway->end_connections_of(state_->tenant.get());
  }
  std::lock_guard lock(state_->tenant->mu);
  return std::move(state_->tenant->records);
}

std::vector<std::pair<std::string, std::string>> gateway_proxy_environment(
    const std::string& host, std::uint16_t port, const std::string& username,
    const std::string& password) {
  const std::string authority = username + ":" + password + "@" + host + ":" + std::to_string(port);
  const std::string http = "http://" + authority;
  const std::string socks = "socks5h://" + authority;
  return {{"HTTP_PROXY", http},  {"HTTPS_PROXY", http},  {"ALL_PROXY", socks}, {"NO_PROXY", ""},
          {"http_proxy", http},  {"https_proxy", http},  {"all_proxy", socks}, {"no_proxy", ""}};
}

}  // namespace airlock::egress
