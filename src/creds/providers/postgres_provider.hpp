// The `postgres` provider: a role made for one call on a credentialServers entry, the way
// Vault's database secrets engine makes them. issue() creates `airlock_<lease id>` in one
// transaction (LOGIN, VALID UNTIL the lease's end, a connection limit, no inheritance) and
// grants it only the spec's privileges; revoke() forbids its login, ends its sessions and
// drops it. The admin role (a secret holding its libpq URL) needs CREATEROLE and the grant
// option on the tables; it makes itself a member of each role so that it may terminate its
// sessions and drop what it holds without being a superuser.
//
// The password never reaches the server: the role is created with a SCRAM-SHA-256 verifier
// computed here (PQencryptPasswordConn), so statement logging shows only the verifier.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "creds/providers/provider.hpp"

namespace airlock::creds {

class PostgresProvider final : public Provider {
 public:
  // The admin libpq URL stored under a server's admin_secret. Called from every issue and
  // revoke, from several threads at once; read per call, so a changed secret applies at once.
  using AdminUrl = SecretLookup;  // the admin libpq URL, by the name of its secret

  // Seconds libpq waits for each connection (it rounds anything below 2 up to 2).
  static constexpr int kConnectTimeoutSeconds = 5;

  PostgresProvider(std::vector<policy::CredentialServer> servers, AdminUrl admin_url);
  ~PostgresProvider() override;

  std::string_view kind() const override { return "postgres"; }
  struct Pool;  // idle admin connections, reused across calls and threads

  // {"server": name, "role": "airlock_<lease id>"}.
  Result<nlohmann::json> target(const policy::CredentialSpec& spec,
                                const Lease& lease) const override;
  // The value: postgresql://<role>:<password>@<host>:<port>/<database>, where host:port is the
  // sandbox's side of a forward to the server when the call has one. Scopes: "select:orders".
  Result<Issued> issue(const policy::CredentialSpec& spec, const Lease& lease,
                       const LeaseContext& context) override;
  Status revoke(const Lease& lease, const std::string* value) override;

 private:
  const policy::CredentialServer* find_server(const std::string& name) const;

  std::vector<policy::CredentialServer> servers_;
  AdminUrl admin_url_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace airlock::creds
