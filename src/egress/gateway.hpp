// The egress gateway: one proxy listener shared by sandboxes that do not run on this host
// (the kubernetes backend's pods, whose NetworkPolicy lets them reach only this listener and
// the CIDRs their rules name). A pod is told its invocation's proxy credentials
// (HTTP_PROXY=http://USER:PASSWORD@gateway:port, socks5h likewise); each connection must
// present them (Proxy-Authorization: Basic, or SOCKS5 username/password) before anything is
// decided, and is then held to that invocation's rules, limits and records exactly as the
// per-sandbox EgressProxy would hold it. Credentials are revoked when the call ends, and the
// invocation's open connections with them. Port forwards and header injection are not
// offered here: they need a listener or a CA inside the sandbox.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "egress/policy.hpp"
#include "egress/rules.hpp"

namespace airlock::egress {

class EgressGateway {
 public:
  EgressGateway();
  ~EgressGateway();  // stop()
  EgressGateway(const EgressGateway&) = delete;
  EgressGateway& operator=(const EgressGateway&) = delete;

  // Binds address:port and listens (port 0: one the kernel picks; port() tells). Before start().
  Status listen(const std::string& address, std::uint16_t port);
  std::uint16_t port() const;
  void start();  // serves on its own thread
  // Closes the listener and ends every open connection; admissions still held admit nothing.
  void stop();

  // One invocation's credentials: valid from admit() until close() or destruction.
  class Admission {
   public:
    ~Admission();
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;
    const std::string& username() const { return username_; }
    const std::string& password() const { return password_; }  // a secret: never logged
    // Revokes the credentials, ends the invocation's open connections (recording them) and
    // returns every connection attempt they made. Idempotent: later calls return nothing new.
    std::vector<EgressRecord> close();

    struct State;

   private:
    friend class EgressGateway;
    Admission(std::shared_ptr<State> state, std::string username, std::string password);
    std::shared_ptr<State> state_;
    std::string username_, password_;
  };

  // Admits an invocation: `username` names it (its id); the password is 256 random bits.
  // Refused when that name is admitted already or the random source fails.
  Result<std::unique_ptr<Admission>> admit(EgressPolicy policy, std::string rule_set,
                                           const std::string& username);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// The proxy environment for a sandbox that reaches `host:port` with these credentials:
// HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (socks5h) and their lower-case forms, NO_PROXY empty.
std::vector<std::pair<std::string, std::string>> gateway_proxy_environment(
    const std::string& host, std::uint16_t port, const std::string& username,
    const std::string& password);

}  // namespace airlock::egress
