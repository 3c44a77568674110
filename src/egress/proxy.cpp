// The egress proxy's listeners: accepts each connection and starts its session
// (src/egress/session.hpp; the protocols in http_proxy.cpp, socks5.cpp and forward.cpp).
#include "egress/proxy.hpp"

#include <memory>

#include "egress/session.hpp"

namespace airlock::egress {

void ProxyCore::accept(std::size_t index) {
  acceptors[index]->async_accept([this, index](error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptors[index]->is_open()) return;
    if (!ec) {
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Session>(*this, std::move(socket), acceptor_forwards[index])->start();
    }
    accept(index);
  });
}

void ProxyCore::start() {
  work.emplace(io.get_executor());
  for (std::size_t i = 0; i < acceptors.size(); ++i) accept(i);
  thread = std::thread([this] { io.run(); });
}

void ProxyCore::stop() {
  if (!thread.joinable()) return;
  asio::post(io, [this] {
    for (auto& a : acceptors) {
      error_code ignored;
      a->close(ignored);
    }
    // Copy: finish() removes sessions from `live` once their handlers drain.
    std::vector<Session*> open(live.begin(), live.end());
    for (auto* s : open) s->finish("the sandbox ended");
  });
  work.reset();
  thread.join();
}

EgressProxy::EgressProxy(EgressPolicy policy, std::string rule_set)
    : impl_(std::make_unique<Impl>()) {
  impl_->first_tenant = std::make_shared<Tenant>(std::move(policy), std::move(rule_set));
}

EgressProxy::~EgressProxy() { stop(); }

void EgressProxy::add_proxy_listener(UniqueFd fd) {
  impl_->acceptors.push_back(std::make_unique<tcp::acceptor>(impl_->io, tcp::v4(), fd.release()));
  impl_->acceptor_forwards.emplace_back(std::nullopt);
}

void EgressProxy::add_forward_listener(UniqueFd fd, const PortForward& forward) {
  impl_->acceptors.push_back(std::make_unique<tcp::acceptor>(impl_->io, tcp::v4(), fd.release()));
  impl_->acceptor_forwards.emplace_back(forward);
}

Result<std::string> EgressProxy::make_interception_ca() {
  auto ca = InterceptCa::create();
  if (!ca) return ca.error();
  auto upstream = make_upstream_tls_context();
  if (!upstream) return upstream.error();
  auto& tenant = *impl_->first_tenant;
  tenant.ca = std::move(*ca);
  tenant.upstream_tls = std::move(*upstream);
  return tenant.ca->certificate_pem();
}

void EgressProxy::start() { impl_->start(); }

void EgressProxy::stop() { impl_->stop(); }

std::vector<EgressRecord> EgressProxy::records() const {
  std::lock_guard lock(impl_->first_tenant->mu);
  return impl_->first_tenant->records;
}

std::vector<std::pair<std::string, std::string>> proxy_environment() {
  const std::string http = "http://127.0.0.1:" + std::to_string(kProxyPort);
  const std::string socks = "socks5h://127.0.0.1:" + std::to_string(kProxyPort);
  return {{"HTTP_PROXY", http},  {"HTTPS_PROXY", http},  {"ALL_PROXY", socks}, {"NO_PROXY", ""},
          {"http_proxy", http},  {"https_proxy", http},  {"all_proxy", socks}, {"no_proxy", ""}};
}

}  // namespace airlock::egress
