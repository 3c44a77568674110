// The egress proxy: runs in the supervisor, in the host's network namespace, and accepts on
// listening sockets that were created inside the sandbox's namespace. It speaks HTTP CONNECT,
// plain HTTP with absolute-URI requests and SOCKS5 (CONNECT, names resolved here) on each
// proxy listener, and relays each forward listener to its one target. Every connection
// attempt is decided by the EgressPolicy and recorded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "egress/policy.hpp"
#include "egress/rules.hpp"

namespace airlock::egress {

// The port the proxy listens on inside every sandbox (HTTP and SOCKS5 on the same port).
inline constexpr std::uint16_t kProxyPort = 3128;

class EgressProxy {
 public:
  // `rule_set` names the rules in denial messages ("the egress rules of tool weather").
  EgressProxy(EgressPolicy policy, std::string rule_set);
  ~EgressProxy();
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  // Listening sockets (already bound and listening), in whatever namespace they were made.
  void add_proxy_listener(UniqueFd fd);
  void add_forward_listener(UniqueFd fd, const PortForward& forward);

  // For rules with header injections, before start(): makes the per-run CA that signs the
  // injected hosts' certificates and the upstream TLS context, which trusts this process's
  // default store (SSL_CERT_FILE / SSL_CERT_DIR as they are now). Returns the CA certificate
  // (PEM) for the sandbox's trust store; the CA's key never leaves this object.
  Result<std::string> make_interception_ca();

  void start();  // serves on its own thread
  // Closes the listeners, ends every open connection (recording it) and joins the thread.
  void stop();

  // One entry per connection attempt, in the order they ended.
  std::vector<EgressRecord> records() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The child's proxy environment: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (socks5h) and their
// lower-case forms, NO_PROXY empty.
std::vector<std::pair<std::string, std::string>> proxy_environment();

}  // namespace airlock::egress
