#include "creds/providers/postgres_provider.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <memory>
#include <mutex>

#include "common/base64.hpp"
#include "common/hex.hpp"
#include "common/percent_encoding.hpp"
#include "storage/postgres.hpp"

namespace airlock::creds {

namespace {

using storage::pg::ConnPtr;
using storage::pg::Reply;

constexpr std::array<std::string_view, 7> kPrivileges = {
    "select", "insert", "update", "delete", "truncate", "references", "trigger"};
// GRANT and DROP OWNED rewrite the ACL of the table, schema and database row without locking
// it: two at once fail with "tuple concurrently updated". Every issue and drop on a database
// takes this transaction-scoped advisory lock first (the transactions take about a millisecond).
const std::string kSerialize = "SELECT pg_advisory_xact_lock(1095912523, 1); ";  // "ARLK"
// How long revoke waits for each terminated session to exit.
constexpr int kTerminateWaitMs = 2000;

// The only roles issue() makes and revoke() drops: DROP OWNED BY another role (a tampered
// lease naming the admin) would drop the tables it owns.
bool is_lease_role(const std::string& role) {
  constexpr std::string_view kPrefix = "airlock_";
  if (role.size() != kPrefix.size() + 32 || role.compare(0, kPrefix.size(), kPrefix) != 0)
    return false;
  return std::all_of(role.begin() + kPrefix.size(), role.end(), [](char c) {
    return hex_digit_value(c) >= 0 && !std::isupper(static_cast<unsigned char>(c));
  });
}

Error database_unavailable(std::string message) {
  return Error::make("credential_unavailable", std::move(message));
}

// An admin connection to a server, its dbname the server's database when it names one.
// `secrets` (the URL, its password) are kept out of the error.
Result<ConnPtr> connect_admin(const std::string& server, const std::string& url,
                              const std::string& database,
                              const std::vector<std::string>& secrets) {
  storage::pg::ConnectOptions options;
  options.connect_timeout_seconds = PostgresProvider::kConnectTimeoutSeconds;
  options.secrets = secrets;
  if (!database.empty()) options.keywords.emplace_back("dbname", database);
  auto conn = storage::pg::connect(url, options);
  if (!conn) return database_unavailable("postgres server '" + server + "': " + conn.error().message);
  return std::move(*conn);
}

// One admin connection in use, and every secret its messages must never show.
class Session {
 public:
  Session(std::string server, std::vector<std::string> secrets, ConnPtr conn, bool pooled)
      : server_(std::move(server)),
        secrets_(std::move(secrets)),
        conn_(std::move(conn)),
        pooled_(pooled) {}

  // Strings that must not appear in any message from here on.
  void add_secret(std::string secret) { secrets_.push_back(std::move(secret)); }
  // It came from the pool, and the server has closed it since.
  bool went_stale() const { return pooled_ && PQstatus(conn_.get()) != CONNECTION_OK; }
  ConnPtr release() { return std::move(conn_); }

  Reply run(const std::string& sql) const { return storage::pg::run(conn_.get(), sql, secrets_); }

  std::string identifier(const std::string& name) const {
    return escaped(PQescapeIdentifier(conn_.get(), name.data(), name.size()));
  }
  std::string literal(const std::string& text) const {
    return escaped(PQescapeLiteral(conn_.get(), text.data(), text.size()));
  }

  std::string database() const { return PQdb(conn_.get()); }
  const std::string& server() const { return server_; }

  std::string redact(std::string text) const { return storage::pg::redact(std::move(text), secrets_); }

 private:
  static std::string escaped(char* text) {
    if (text == nullptr)
      return "''";  // only when out of memory or invalid encoding; fails the statement
    std::string out = text;
    PQfreemem(text);
    return out;
  }

  std::string server_;
  std::vector<std::string> secrets_;
  ConnPtr conn_;
  bool pooled_ = false;
};

struct Grant {
  std::string privilege;  // upper case, from kPrivileges
  std::string schema;     // "public" when the table is not qualified
  std::string table;
  std::string scope;  // "select:orders"
};

Result<std::vector<Grant>> parse_grants(const policy::PostgresCredential& spec) {
  std::vector<Grant> grants;
  for (const auto& [privilege, tables] : spec.grant) {  // privilege -> the tables it is granted on
    if (std::find(kPrivileges.begin(), kPrivileges.end(), privilege) == kPrivileges.end())
      return Error::make("invalid_argument", "postgres grant: '" + privilege + "' is not a table privilege");
    std::string upper = privilege;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    for (const auto& table : tables) {
      auto dot = table.find('.');
      std::string schema = dot == std::string::npos ? "public" : table.substr(0, dot);
      std::string name = dot == std::string::npos ? table : table.substr(dot + 1);
      if (schema.empty() || name.empty() || name.find('.') != std::string::npos)
        return Error::make("invalid_argument", "postgres grant: '" + table + "' is not a table or schema.table");
      grants.push_back({upper, schema, name, privilege + ":" + table});
    }
  }
  return grants;
}

Result<std::string> random_bytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1)
    return database_unavailable("postgres: no random bytes");
  return out;
}

std::string base64(const unsigned char* data, std::size_t size) {
  return base64_encode(std::string_view(reinterpret_cast<const char*>(data), size));
}

// The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802/7677, as libpq's
// PQencryptPasswordConn makes it: 4096 iterations, a 16-byte salt), computed here so the server
// is sent only this, never the password. OpenSSL's PBKDF2 is about 3.5 times faster than
// libpq's. The password is hex, which SASLprep leaves as it is.
Result<std::string> scram_verifier(const std::string& password) {
  constexpr int kIterations = 4096;
  auto salt = random_bytes(16);
  if (!salt) return salt.error();
  unsigned char salted[32], client_key[32], stored_key[32], server_key[32];
  unsigned int len = 0;
  const auto* salt_bytes = reinterpret_cast<const unsigned char*>(salt->data());
  bool ok =
      PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), salt_bytes,
                        static_cast<int>(salt->size()), kIterations, EVP_sha256(), sizeof salted,
                        salted) == 1 &&
      HMAC(EVP_sha256(), salted, sizeof salted,
           reinterpret_cast<const unsigned char*>("Client Key"), 10, client_key, &len) &&
      EVP_Digest(client_key, sizeof client_key, stored_key, &len, EVP_sha256(), nullptr) == 1 &&
      HMAC(EVP_sha256(), salted, sizeof salted,
           reinterpret_cast<const unsigned char*>("Server Key"), 10, server_key, &len);
  OPENSSL_cleanse(salted, sizeof salted);
  OPENSSL_cleanse(client_key, sizeof client_key);
  if (!ok) return database_unavailable("postgres: could not compute a SCRAM verifier");
  return "SCRAM-SHA-256$" + std::to_string(kIterations) + ":" + base64(salt_bytes, salt->size()) +
         "$" + base64(stored_key, sizeof stored_key) + ":" + base64(server_key, sizeof server_key);
}

// 32 random bytes, hex: nothing in it needs quoting in a URL or SASLprep.
Result<std::string> random_password() {
  auto bytes = random_bytes(32);
  if (!bytes) return bytes.error();
  return hex_encode(*bytes);
}

// The statements that make the role, in one transaction (a failure leaves nothing).
std::string create_statements(const Session& s, const std::string& role,
                              const std::string& verifier, const std::string& valid_until,
                              std::uint32_t connection_limit, const std::vector<Grant>& grants) {
  const std::string r = s.identifier(role);
  // Committed without waiting for the WAL flush: a server crash can lose the role, which fails
  // closed (the tool cannot log in; revoking what is gone succeeds).
  std::string sql =
      "BEGIN; SET LOCAL statement_timeout = '10s'; SET LOCAL synchronous_commit = off; " +
      kSerialize + "CREATE ROLE " + r + " LOGIN PASSWORD " + s.literal(verifier) + " VALID UNTIL " +
      s.literal(valid_until) + " CONNECTION LIMIT " + std::to_string(connection_limit) +
      " NOSUPERUSER NOINHERIT NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; ";
  // The admin's membership lets it terminate the role's sessions and DROP OWNED BY it.
  sql += "GRANT " + r + " TO CURRENT_USER; ";
  sql += "GRANT CONNECT ON DATABASE " + s.identifier(s.database()) + " TO " + r + "; ";
  std::vector<std::string> schemas;
  for (const auto& g : grants)
    if (std::find(schemas.begin(), schemas.end(), g.schema) == schemas.end())
      schemas.push_back(g.schema);
  for (const auto& schema : schemas)
    sql += "GRANT USAGE ON SCHEMA " + s.identifier(schema) + " TO " + r + "; ";
  for (const auto& g : grants)
    sql += "GRANT " + g.privilege + " ON TABLE " + s.identifier(g.schema) + "." +
           s.identifier(g.table) + " TO " + r + "; ";
  return sql + "COMMIT;";
}

// Where the tool reaches the server: the sandbox's end of a forward to it, else the server.
std::string endpoint(const policy::PostgresServer& server, const LeaseContext& context) {
  for (const auto& f : context.forwards)
    if (f.host == server.host && f.port == server.port)
      return "127.0.0.1:" + std::to_string(f.listen_port);
  const bool ipv6 = server.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + server.host + "]" : server.host) + ":" + std::to_string(server.port);
}

// Forbids the role's login, ends its sessions and drops it with what it holds. Succeeds when
// the role does not exist. Fails (to be retried) when a session survived the termination.
Status drop_role(const Session& s, const std::string& role) {
  const std::string r = s.identifier(role);
  Reply found = s.run("SELECT oid, pg_has_role(oid, 'USAGE') FROM pg_roles WHERE rolname = " +
                      s.literal(role));
  if (!found.ok()) return database_unavailable("postgres: looking up role " + role + ": " + found.message);
  if (found.rows() == 0) return Status::success();
  const std::string oid = found.value(0, 0);
  // NOLOGIN first: a client retrying the credential cannot start a session between the
  // termination and the drop (visible to logins at once; its flush is left to the drop's
  // commit, which comes after it in the WAL). Membership for a role made by someone else.
  std::string forbid = "BEGIN; SET LOCAL synchronous_commit = off; ALTER ROLE " + r + " NOLOGIN;";
  if (found.value(0, 1) != "t") forbid += " GRANT " + r + " TO CURRENT_USER;";
  if (Reply reply = s.run(forbid + " COMMIT"); !reply.ok()) {
    (void)s.run("ROLLBACK");
    return reply.sqlstate == "42704"
               ? Status::success()
               : database_unavailable("postgres: disabling role " + role + ": " + reply.message);
  }
  Reply ended = s.run("SELECT pg_terminate_backend(pid, " + std::to_string(kTerminateWaitMs) +
                      ") FROM pg_stat_activity WHERE usesysid = " + oid);
  if (!ended.ok())
    return database_unavailable("postgres: terminating the sessions of " + role + ": " + ended.message);
  // pg_stat_activity is read once per transaction: the count is of after the termination.
  Reply dropped = s.run("BEGIN; SET LOCAL statement_timeout = '10s'; " + kSerialize +
                        "DROP OWNED BY " + r + "; DROP ROLE IF EXISTS " + r +
                        "; SELECT count(*) FROM pg_stat_activity WHERE usesysid = " + oid);
  if (!dropped.ok() || dropped.value(0, 0) != "0") {
    (void)s.run("ROLLBACK");
    if (dropped.sqlstate == "42704") return Status::success();  // dropped meanwhile
    return database_unavailable("postgres: dropping role " + role + ": " +
                                (dropped.ok() ? "a session outlived its termination" : dropped.message));
  }
  if (Reply committed = s.run("COMMIT"); !committed.ok())
    return database_unavailable("postgres: dropping role " + role + ": " + committed.message);
  return Status::success();
}

}  // namespace

// Admin connections kept between calls: connecting (TCP, SCRAM, a new backend) costs more than
// the statements of an issue or a revoke. Keyed by server, URL and database, so a changed
// admin secret is used from the next call on.
struct PostgresProvider::Pool {
  static constexpr std::size_t kMaxIdle = 4;
  static constexpr std::chrono::seconds kMaxIdleTime{60};
  struct Idle {
    std::string key;
    ConnPtr conn;
    std::chrono::steady_clock::time_point since;
  };

  ConnPtr take(const std::string& key) {
    std::lock_guard lock(mutex);
    const auto now = std::chrono::steady_clock::now();
    // The newest first; anything idle too long or unhealthy is closed on the way.
    for (std::size_t i = idle.size(); i-- > 0;) {
      if (now - idle[i].since > kMaxIdleTime || !storage::pg::reusable(idle[i].conn.get())) {
        idle.erase(idle.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (idle[i].key == key) {
        ConnPtr conn = std::move(idle[i].conn);
        idle.erase(idle.begin() + static_cast<std::ptrdiff_t>(i));
        return conn;
      }
    }
    return ConnPtr(nullptr, &PQfinish);
  }

  void give(std::string key, ConnPtr conn) {
    if (conn == nullptr || !storage::pg::reusable(conn.get())) return;
    std::lock_guard lock(mutex);
    if (idle.size() >= kMaxIdle) idle.erase(idle.begin());
    idle.push_back({std::move(key), std::move(conn), std::chrono::steady_clock::now()});
  }

  std::mutex mutex;
  std::vector<Idle> idle;  // oldest first
};

namespace {

// Runs `work` on an admin session of `server`, pooled when one is idle, and gives the
// connection back. A pooled connection the server had closed is replaced, once.
template <typename Work>
auto with_admin(PostgresProvider::Pool& pool, const PostgresProvider::AdminUrl& admin_url,
                const policy::CredentialServer& server, Work work)
    -> decltype(work(std::declval<Session&>())) {
  const auto& pg = server.postgres;
  auto url = admin_url(pg.admin_secret);
  if (!url)
    return database_unavailable("postgres server '" + server.name + "': admin secret '" + pg.admin_secret +
                                "': " + url.error().message);
  auto password = storage::pg::url_password(*url);
  if (!password)
    return database_unavailable("postgres server '" + server.name +
                                "': its admin URL is not a libpq connection string");
  const std::vector<std::string> secrets = {*url, *password};
  const std::string key = server.name + '\n' + *url + '\n' + pg.database;
  for (int attempt = 0;; ++attempt) {
    ConnPtr conn = attempt == 0 ? pool.take(key) : ConnPtr(nullptr, &PQfinish);
    const bool pooled = conn != nullptr;
    if (!pooled) {
      auto fresh = connect_admin(server.name, *url, pg.database, secrets);
      if (!fresh) return fresh.error();
      conn = std::move(*fresh);
    }
    Session session(server.name, secrets, std::move(conn), pooled);
    auto outcome = work(session);
    if (!outcome && session.went_stale() && attempt == 0) continue;
    pool.give(key, session.release());
    return outcome;
  }
}

}  // namespace

PostgresProvider::PostgresProvider(std::vector<policy::CredentialServer> servers,
                                   AdminUrl admin_url)
    : servers_(std::move(servers)),
      admin_url_(std::move(admin_url)),
      pool_(std::make_unique<Pool>()) {}

PostgresProvider::~PostgresProvider() = default;

const policy::CredentialServer* PostgresProvider::find_server(const std::string& name) const {
  for (const auto& s : servers_)
    if (s.name == name) return &s;
  return nullptr;
}

Result<nlohmann::json> PostgresProvider::target(const policy::CredentialSpec& spec,
                                                const Lease& lease) const {
  const auto* pg = std::get_if<policy::PostgresCredential>(&spec.source);
  if (pg == nullptr)
    return Error::make("invalid_argument",
                       "postgres provider: the spec is not a postgres credential");
  if (find_server(pg->server) == nullptr)
    return database_unavailable("postgres: credential server '" + pg->server + "' is not configured");
  const std::string role = "airlock_" + lease.id;
  if (!is_lease_role(role))
    return Error::make("invalid_argument", "postgres provider: the lease id is not 32 hex digits");
  return nlohmann::json{{"server", pg->server}, {"role", role}};
}

namespace {

struct IssueRequest {
  const policy::CredentialServer& server;
  std::string role;
  std::chrono::seconds ttl;
  std::uint32_t connection_limit;
  const std::vector<Grant>& grants;
  const LeaseContext& context;
};

Result<Issued> issue_on(Session& s, const IssueRequest& request) {
  auto password = random_password();
  if (!password) return password.error();
  s.add_secret(*password);
  auto verifier = scram_verifier(*password);
  if (!verifier) return verifier.error();
  s.add_secret(*verifier);
  // The end by the server's clock, which is the one that enforces it.
  Reply until = s.run("SELECT (now() + make_interval(secs => " +
                      std::to_string(request.ttl.count()) + "))::text");
  if (!until.ok()) return database_unavailable("postgres server '" + s.server() + "': " + until.message);
  Reply made = s.run(create_statements(s, request.role, *verifier, until.value(0, 0),
                                       request.connection_limit, request.grants));
  if (!made.ok())
    return database_unavailable("postgres server '" + s.server() + "': creating role " + request.role +
                                ": " + made.message);

  const auto& pg = request.server.postgres;
  Issued issued;
  const std::string database = pg.database.empty() ? s.database() : pg.database;
  issued.value = "postgresql://" + percent_encode(request.role) + ":" + *password + "@" +
                 endpoint(pg, request.context) + "/" + percent_encode(database);
  for (const auto& g : request.grants) issued.scopes.push_back(g.scope);
  issued.expires_at = request.context.now + request.ttl;
  return issued;
}

}  // namespace

Result<Issued> PostgresProvider::issue(const policy::CredentialSpec& spec, const Lease& lease,
                                       const LeaseContext& context) {
  auto where = target(spec, lease);
  if (!where) return where.error();
  const auto& pg = std::get<policy::PostgresCredential>(spec.source);
  const auto ttl = std::min(pg.ttl, context.max_ttl);
  if (ttl.count() <= 0)
    return Error::make("invalid_argument", "postgres: the credential's ttl is not positive");
  auto grants = parse_grants(pg);
  if (!grants) return grants.error();
  // The role revoke() will drop: the one stored with the lease.
  const std::string role = lease.target.value("role", (*where)["role"].get<std::string>());
  if (!is_lease_role(role))
    return Error::make("invalid_argument",
                       "postgres: the lease names a role Airlock does not make: " + role);
  const IssueRequest request{*find_server(pg.server), role,    ttl,
                             pg.connection_limit,     *grants, context};
  return with_admin(*pool_, admin_url_, request.server,
                    [&](Session& s) { return issue_on(s, request); });
}

Status PostgresProvider::revoke(const Lease& lease, const std::string* /*value*/) {
  const auto& t = lease.target;
  if (!t.is_object() || !t.contains("server") || !t.contains("role") || !t["server"].is_string() ||
      !t["role"].is_string())
    return Error::make("invalid_argument",
                       "postgres revoke: lease " + lease.id + " has no server and role");
  const std::string server_name = t["server"].get<std::string>();
  const std::string role = t["role"].get<std::string>();
  if (!is_lease_role(role))
    return Error::make("invalid_argument", "postgres revoke: lease " + lease.id +
                                               " names a role Airlock does not make: " + role);
  const auto* server = find_server(server_name);
  if (server == nullptr)
    return database_unavailable("postgres: credential server '" + server_name + "' is not configured");
  return with_admin(*pool_, admin_url_, *server, [&](Session& s) {
    // Once more when a session appeared between the termination and the drop.
    Status dropped = drop_role(s, role);
    if (!dropped && !s.went_stale()) dropped = drop_role(s, role);
    return dropped;
  });
}

}  // namespace airlock::creds
