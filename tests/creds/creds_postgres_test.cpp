// The postgres provider's threat model, against a real PostgreSQL 15 cluster made for the run:
// every defence is attacked as a tool holding the credential would (libpq, as the leased
// role), and the test asserts the attack failed. The admin is a CREATEROLE role that owns the
// tables and the database, not a superuser; PUBLIC may not connect to the database.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "creds/providers/postgres_provider.hpp"
#include "pg_cluster.hpp"

namespace airlock::creds {
namespace {

using namespace std::chrono_literals;
using test::PgCluster;

const std::string kAdminPassword = "Adm1n-pw-" + std::to_string(::getpid()) + "-q7";
const std::string kSecret = "shop-admin";

// SQLSTATEs the attacks must end with.
constexpr const char* kPermissionDenied = "42501";
constexpr const char* kTooManyConnections = "53300";
constexpr const char* kInvalidPassword = "28P01";

using ConnPtr = std::unique_ptr<PGconn, decltype(&PQfinish)>;

ConnPtr connect(const std::string& url) {
  return ConnPtr(PQconnectdb(url.c_str()), &PQfinish);
}
bool connected(const ConnPtr& c) {
  return PQstatus(c.get()) == CONNECTION_OK;
}

// What a connection attempt failed with ("" when it worked): SQLSTATE is not reported for
// connection failures, so the server's words.
std::string login_error(const std::string& url) {
  auto c = connect(url);
  return connected(c) ? "" : PQerrorMessage(c.get());
}

struct Outcome {
  std::string sqlstate;  // "" when it succeeded
  std::string message;
  std::vector<std::string> first_column;
};

Outcome query(PGconn* c, const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c, sql.c_str()), &PQclear);
  Outcome o;
  auto status = PQresultStatus(r.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
    o.sqlstate = state != nullptr ? state : "connection";
    o.message = PQerrorMessage(c);
    return o;
  }
  for (int i = 0; i < PQntuples(r.get()); ++i)
    o.first_column.emplace_back(PQgetvalue(r.get(), i, 0));
  return o;
}

std::string random_hex(std::size_t digits) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < digits; ++i) out += kHex[rng() % 16];
  return out;
}

// The password in a leased URL.
std::string password_of(const std::string& url) {
  static const std::regex kUrl("^postgresql://[^:]+:([^@]+)@");
  std::smatch m;
  return std::regex_search(url, m, kUrl) ? m[1].str() : "";
}

class PostgresProviderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    PgCluster::Options options;
    // Every statement is logged: a password sent in one would be in the log.
    options.settings["log_statement"] = "all";
    options.settings["log_connections"] = "on";
    auto started = PgCluster::start(options);
    ASSERT_TRUE(started.ok()) << started.error().message;
    cluster_ = std::move(*started).release();
    ASSERT_TRUE(cluster_->exec("CREATE ROLE shop_admin LOGIN CREATEROLE PASSWORD '" +
                               kAdminPassword + "'"));
    ASSERT_TRUE(cluster_->exec("CREATE DATABASE shop OWNER shop_admin"));
    ASSERT_TRUE(cluster_->exec("REVOKE CONNECT, TEMPORARY ON DATABASE shop FROM PUBLIC"));
    auto made = cluster_->exec(
        "SET ROLE shop_admin;"
        "CREATE TABLE orders (id int, item text); INSERT INTO orders VALUES (1, 'tea'), (2, "
        "'cake');"
        "CREATE TABLE customers (id int, name text); INSERT INTO customers VALUES (1, 'ann');"
        "CREATE TABLE payroll (name text, salary int); INSERT INTO payroll VALUES ('ann', 100000);",
        "shop");
    ASSERT_TRUE(made) << made.error().message;
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    if (cluster_ == nullptr) GTEST_FAIL() << "no cluster";
  }

  static std::string admin_url() { return cluster_->url("shop_admin", kAdminPassword, "shop"); }

  static policy::CredentialServer server() {
    policy::CredentialServer s;
    s.name = "shop";
    s.postgres.host = cluster_->host();
    s.postgres.port = cluster_->port();
    s.postgres.database = "shop";
    s.postgres.admin_secret = kSecret;
    return s;
  }

  static PostgresProvider provider(std::string url = admin_url()) {
    return PostgresProvider({server()}, [url](const std::string& name) -> Result<std::string> {
      if (name != kSecret) return Error::make("unknown_secret", "no secret " + name);
      return url;
    });
  }

  // `grant`: table -> privileges, turned into the config's privilege -> tables.
  static policy::CredentialSpec spec(const std::map<std::string, std::vector<std::string>>& grant,
                                     std::chrono::seconds ttl = 60s,
                                     std::uint32_t connection_limit = 4) {
    policy::PostgresCredential pg;
    pg.server = "shop";
    for (const auto& [table, privileges] : grant)
      for (const auto& privilege : privileges) pg.grant[privilege].push_back(table);
    pg.ttl = ttl;
    pg.connection_limit = connection_limit;
    policy::CredentialSpec s;
    s.env = "DATABASE_URL";
    s.source = pg;
    return s;
  }

  static Lease lease_for(const PostgresProvider& p, const policy::CredentialSpec& s) {
    Lease lease;
    lease.id = random_hex(32);
    lease.tool = "sql.query";
    lease.provider = "postgres";
    auto target = p.target(s, lease);
    EXPECT_TRUE(target.ok()) << target.error().message;
    if (target) lease.target = *target;
    return lease;
  }

  static LeaseContext context(std::chrono::seconds max_ttl = 60s) {
    LeaseContext c;
    c.tool = "sql.query";
    c.max_ttl = max_ttl;
    return c;
  }

  static std::string role_of(const Lease& lease) { return lease.target["role"].get<std::string>(); }

  static bool role_exists(const std::string& role) {
    auto rows = cluster_->column("SELECT 1 FROM pg_roles WHERE rolname = '" + role + "'");
    EXPECT_TRUE(rows.ok()) << rows.error().message;
    return rows && !rows->empty();
  }

  // Issues, failing the test when it cannot.
  static Issued issue(PostgresProvider& p, const policy::CredentialSpec& s, const Lease& lease,
                      const LeaseContext& c = context()) {
    auto issued = p.issue(s, lease, c);
    EXPECT_TRUE(issued.ok()) << issued.error().message;
    return issued ? *issued : Issued{};
  }

  static inline PgCluster* cluster_ = nullptr;
};

TEST_F(PostgresProviderTest, TheAdminIsNotASuperuser) {
  // The tests below show CREATEROLE and table ownership are enough.
  auto rows = cluster_->column("SELECT rolsuper::text FROM pg_roles WHERE rolname = 'shop_admin'");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, std::vector<std::string>{"false"});
}

TEST_F(PostgresProviderTest, TargetNamesTheServerAndARoleOfTheLease) {
  auto p = provider();
  Lease lease;
  lease.id = "0123456789abcdef0123456789abcdef";
  auto target = p.target(spec({{"orders", {"select"}}}), lease);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(*target, (nlohmann::json{{"server", "shop"},
                                     {"role", "airlock_0123456789abcdef0123456789abcdef"}}));
  EXPECT_EQ(p.kind(), "postgres");
}

TEST_F(PostgresProviderTest, AnUnconfiguredServerIsRefused) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  std::get<policy::PostgresCredential>(s.source).server = "elsewhere";
  Lease lease;
  lease.id = random_hex(32);
  auto target = p.target(s, lease);
  ASSERT_FALSE(target.ok());
  EXPECT_EQ(target.error().code, "credential_unavailable");
  auto issued = p.issue(s, lease, context());
  ASSERT_FALSE(issued.ok());
  EXPECT_EQ(issued.error().code, "credential_unavailable");
}

TEST_F(PostgresProviderTest, TheGrantedTableIsReadableAndNoOtherIs) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  EXPECT_EQ(issued.scopes, std::vector<std::string>{"select:orders"});
  auto c = connect(issued.value);
  ASSERT_TRUE(connected(c)) << PQerrorMessage(c.get());
  EXPECT_EQ(query(c.get(), "SELECT item FROM orders ORDER BY id").first_column,
            (std::vector<std::string>{"tea", "cake"}));
  EXPECT_EQ(query(c.get(), "SELECT salary FROM payroll").sqlstate, kPermissionDenied);
  EXPECT_EQ(query(c.get(), "SELECT name FROM customers").sqlstate, kPermissionDenied);
  c.reset();
  EXPECT_TRUE(p.revoke(lease, &issued.value));
}

TEST_F(PostgresProviderTest, ASelectGrantDoesNotAllowWrites) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  auto c = connect(issued.value);
  ASSERT_TRUE(connected(c)) << PQerrorMessage(c.get());
  EXPECT_EQ(query(c.get(), "INSERT INTO orders VALUES (3, 'stolen')").sqlstate, kPermissionDenied);
  EXPECT_EQ(query(c.get(), "UPDATE orders SET item = 'x'").sqlstate, kPermissionDenied);
  EXPECT_EQ(query(c.get(), "DELETE FROM orders").sqlstate, kPermissionDenied);
  EXPECT_EQ(query(c.get(), "TRUNCATE orders").sqlstate, kPermissionDenied);
  // Nor can it hand itself more: no CREATEROLE, no admin's privileges (NOINHERIT, no SET ROLE).
  EXPECT_EQ(query(c.get(), "CREATE ROLE escape LOGIN").sqlstate, kPermissionDenied);
  EXPECT_EQ(query(c.get(), "SET ROLE shop_admin").sqlstate, kPermissionDenied);
  c.reset();
  EXPECT_EQ(cluster_->column("SELECT count(*) FROM orders", "shop")->front(), "2");
  EXPECT_TRUE(p.revoke(lease, &issued.value));
}

TEST_F(PostgresProviderTest, SeveralGrantsAndQualifiedTables) {
  auto p = provider();
  auto s = spec({{"public.customers", {"select"}}, {"orders", {"select", "insert"}}});
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  // In the config's order: by privilege, then the tables listed for it.
  EXPECT_EQ(issued.scopes, (std::vector<std::string>{"insert:orders", "select:orders",
                                                     "select:public.customers"}));
  auto c = connect(issued.value);
  ASSERT_TRUE(connected(c)) << PQerrorMessage(c.get());
  EXPECT_EQ(query(c.get(), "SELECT name FROM customers").first_column,
            std::vector<std::string>{"ann"});
  EXPECT_EQ(query(c.get(), "INSERT INTO orders VALUES (9, 'granted')").sqlstate, "");
  EXPECT_EQ(query(c.get(), "DELETE FROM orders").sqlstate, kPermissionDenied);
  c.reset();
  EXPECT_TRUE(p.revoke(lease, &issued.value));
  ASSERT_TRUE(cluster_->exec("DELETE FROM orders WHERE id = 9", "shop"));
}

TEST_F(PostgresProviderTest, AfterRevokeTheLoginFailsAndTheRoleIsGone) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  ASSERT_EQ(login_error(issued.value), "");
  ASSERT_TRUE(role_exists(role_of(lease)));
  auto revoked = p.revoke(lease, &issued.value);
  ASSERT_TRUE(revoked) << revoked.error().message;
  EXPECT_NE(login_error(issued.value), "");
  EXPECT_FALSE(role_exists(role_of(lease)));
  // Nothing it was granted is left behind either (DROP OWNED BY).
  auto acl = cluster_->column(
      "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = '" +
          role_of(lease) + "'",
      "shop");
  EXPECT_EQ(acl->front(), "0");
}

TEST_F(PostgresProviderTest, RevokeIsIdempotent) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  EXPECT_TRUE(p.revoke(lease, &issued.value));
  auto again = p.revoke(lease, nullptr);  // recovery after a crash: no value
  EXPECT_TRUE(again) << again.error().message;
  // A lease whose issue never ran (the crash came between storing it and issuing).
  auto never = lease_for(p, s);
  auto nothing = p.revoke(never, nullptr);
  EXPECT_TRUE(nothing) << nothing.error().message;
}

TEST_F(PostgresProviderTest, RevokeWithoutTheValueStillEndsIt) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  // A fresh provider, as after a restart: only the stored lease (its target) is known.
  auto restarted = provider();
  ASSERT_TRUE(restarted.revoke(lease, nullptr));
  EXPECT_NE(login_error(issued.value), "");
  EXPECT_FALSE(role_exists(role_of(lease)));
}

TEST_F(PostgresProviderTest, RevokeTerminatesAnOpenSession) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  auto c = connect(issued.value);
  ASSERT_TRUE(connected(c));
  ASSERT_EQ(query(c.get(), "SELECT 1").sqlstate, "");
  auto revoked = p.revoke(lease, &issued.value);
  ASSERT_TRUE(revoked) << revoked.error().message;
  // The session that was open is over: its next query fails and it reads nothing.
  auto after = query(c.get(), "SELECT item FROM orders");
  EXPECT_NE(after.sqlstate, "");
  EXPECT_TRUE(after.first_column.empty());
  EXPECT_EQ(
      cluster_
          ->column("SELECT count(*) FROM pg_stat_activity WHERE usename = '" + role_of(lease) + "'")
          ->front(),
      "0");
}

TEST_F(PostgresProviderTest, RevokeWinsAgainstAClientThatKeepsReconnecting) {
  // A forked child that retries the credential in a loop, keeping each session it gets.
  auto p = provider();
  auto s = spec({{"orders", {"select"}}}, 60s, 16);
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  auto oid = cluster_->column("SELECT oid FROM pg_roles WHERE rolname = '" + role_of(lease) + "'");
  ASSERT_TRUE(oid.ok() && oid->size() == 1);
  std::atomic<bool> stop{false};
  std::atomic<int> sessions{0};
  std::thread attacker([&] {
    std::vector<ConnPtr> held;
    while (!stop) {
      auto c = connect(issued.value);
      if (connected(c)) {
        ++sessions;
        held.push_back(std::move(c));
        if (held.size() > 8) held.erase(held.begin());
      }
    }
  });
  while (sessions < 3) std::this_thread::sleep_for(1ms);
  auto revoked = p.revoke(lease, &issued.value);
  // Give a retry that raced the revoke its chance to log in, then look.
  std::this_thread::sleep_for(200ms);
  const int after_revoke = sessions;
  std::this_thread::sleep_for(200ms);
  stop = true;
  attacker.join();
  ASSERT_TRUE(revoked) << revoked.error().message;
  EXPECT_FALSE(role_exists(role_of(lease)));
  EXPECT_EQ(sessions.load(), after_revoke) << "a session started after the revoke";
  EXPECT_EQ(
      cluster_->column("SELECT count(*) FROM pg_stat_activity WHERE usesysid = " + oid->front())
          ->front(),
      "0");
}

TEST_F(PostgresProviderTest, AnExpiredLeaseCannotLogInEvenIfNeverRevoked) {
  // Revocation made to fail: the process that leased died and nothing revoked it.
  auto p = provider();
  auto s = spec({{"orders", {"select"}}}, 2s);
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  EXPECT_EQ(login_error(issued.value), "");
  std::this_thread::sleep_for(3s);
  auto refused = login_error(issued.value);
  EXPECT_NE(refused, "");
  EXPECT_NE(refused.find("password authentication failed"), std::string::npos) << refused;
  EXPECT_TRUE(p.revoke(lease, nullptr));
}

TEST_F(PostgresProviderTest, TheTtlIsCappedByTheCall) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}}, 3600s);
  auto lease = lease_for(p, s);
  auto c = context(30s);
  auto issued = issue(p, s, lease, c);
  EXPECT_EQ(issued.expires_at, c.now + 30s);
  auto left = cluster_->column(
      "SELECT extract(epoch FROM rolvaliduntil - now())::int FROM pg_roles WHERE rolname = '" +
      role_of(lease) + "'");
  ASSERT_TRUE(left.ok() && left->size() == 1);
  EXPECT_LE(std::stoi(left->front()), 30);
  EXPECT_GE(std::stoi(left->front()), 25);
  EXPECT_TRUE(p.revoke(lease, &issued.value));
}

TEST_F(PostgresProviderTest, ConcurrentLeasesGetDifferentRolesAndPasswords) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  constexpr int kLeases = 8;
  std::vector<Lease> leases;
  for (int i = 0; i < kLeases; ++i) leases.push_back(lease_for(p, s));
  std::vector<Result<Issued>> issued(kLeases, Error::make("not_run", ""));
  std::vector<std::thread> threads;
  for (int i = 0; i < kLeases; ++i)
    threads.emplace_back([&, i] { issued[i] = p.issue(s, leases[i], context()); });
  for (auto& t : threads) t.join();
  std::set<std::string> roles, passwords;
  for (int i = 0; i < kLeases; ++i) {
    ASSERT_TRUE(issued[i].ok()) << issued[i].error().message;
    roles.insert(role_of(leases[i]));
    passwords.insert(password_of(issued[i]->value));
    auto c = connect(issued[i]->value);
    ASSERT_TRUE(connected(c));
    EXPECT_EQ(query(c.get(), "SELECT current_user").first_column,
              std::vector<std::string>{role_of(leases[i])});
  }
  EXPECT_EQ(roles.size(), std::size_t{kLeases});
  EXPECT_EQ(passwords.size(), std::size_t{kLeases});
  for (const auto& pw : passwords) EXPECT_EQ(pw.size(), 64u);  // 32 random bytes
  // One lease's password does not open another's role.
  auto swapped = issued[0]->value;
  swapped.replace(swapped.find(password_of(swapped)), 64, password_of(issued[1]->value));
  EXPECT_NE(login_error(swapped), "");
  threads.clear();
  std::vector<Status> revoked(kLeases);
  for (int i = 0; i < kLeases; ++i)
    threads.emplace_back([&, i] { revoked[i] = p.revoke(leases[i], nullptr); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kLeases; ++i) {
    EXPECT_TRUE(revoked[i]) << revoked[i].error().message;
    EXPECT_FALSE(role_exists(role_of(leases[i])));
  }
}

TEST_F(PostgresProviderTest, TheConnectionLimitHolds) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}}, 60s, 2);
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  auto first = connect(issued.value), second = connect(issued.value);
  ASSERT_TRUE(connected(first) && connected(second));
  auto third = connect(issued.value);
  EXPECT_FALSE(connected(third));
  EXPECT_NE(std::string(PQerrorMessage(third.get())).find("too many connections for role"),
            std::string::npos)
      << PQerrorMessage(third.get()) << " (SQLSTATE " << kTooManyConnections << ")";
  first.reset();
  second.reset();
  third.reset();
  EXPECT_TRUE(p.revoke(lease, &issued.value));
}

TEST_F(PostgresProviderTest, AnInjectionInATableNameIsQuoted) {
  auto p = provider();
  for (std::string table :
       {"orders; DROP TABLE payroll", "orders TO PUBLIC; GRANT SELECT ON payroll",
        "orders\" TO PUBLIC; DROP TABLE payroll; --", "x'; DROP TABLE payroll; --"}) {
    auto s = spec({{table, {"select"}}});
    auto lease = lease_for(p, s);
    auto issued = p.issue(s, lease, context());
    ASSERT_FALSE(issued.ok()) << table;
    EXPECT_EQ(issued.error().code, "credential_unavailable");
    EXPECT_NE(issued.error().message.find("does not exist"), std::string::npos)
        << issued.error().message;
    EXPECT_FALSE(role_exists(role_of(lease))) << "the failed transaction left its role";
  }
  EXPECT_EQ(cluster_->column("SELECT count(*) FROM payroll", "shop")->front(), "1");
  EXPECT_EQ(
      cluster_
          ->column(
              "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = 'PUBLIC' "
              "AND table_name IN ('orders', 'payroll')",
              "shop")
          ->front(),
      "0");
}

TEST_F(PostgresProviderTest, OnlyTablePrivilegesAreGranted) {
  auto p = provider();
  for (std::string privilege : {"all", "SELECT", "select; DROP TABLE payroll", "usage", "create"}) {
    auto s = spec({{"orders", {privilege}}});
    auto lease = lease_for(p, s);
    auto issued = p.issue(s, lease, context());
    ASSERT_FALSE(issued.ok()) << privilege;
    EXPECT_EQ(issued.error().code, "invalid_argument");
    EXPECT_FALSE(role_exists(role_of(lease)));
  }
  auto s = spec({{"shop.public.orders", {"select"}}});
  auto lease = lease_for(p, s);
  EXPECT_FALSE(p.issue(s, lease, context()).ok());
}

TEST_F(PostgresProviderTest, AFailedIssueNeverShowsTheAdminPassword) {
  const std::string port = std::to_string(cluster_->port());
  const std::vector<std::string> urls = {
      // wrong password for the admin
      cluster_->url("shop_admin", kAdminPassword + "-wrong", "shop"),
      // not a URL libpq reads: its own message would quote it
      "postgresql://shop_admin:" + kAdminPassword + "%zz@127.0.0.1:" + port + "/shop",
      "postgresql://shop_admin:" + kAdminPassword + "@127.0.0.1:" + port +
          "/shop?sslmode=" + kAdminPassword,
      // nothing listening
      "postgresql://shop_admin:" + kAdminPassword + "@127.0.0.1:1/shop",
  };
  for (const auto& url : urls) {
    auto p = provider(url);
    auto s = spec({{"orders", {"select"}}});
    auto lease = lease_for(p, s);
    auto issued = p.issue(s, lease, context());
    ASSERT_FALSE(issued.ok()) << url;
    EXPECT_EQ(issued.error().code, "credential_unavailable");
    EXPECT_EQ(issued.error().message.find(kAdminPassword), std::string::npos)
        << issued.error().message;
    EXPECT_EQ(issued.error().message.find(url), std::string::npos) << issued.error().message;
    auto revoked = p.revoke(lease, nullptr);
    ASSERT_FALSE(revoked.ok());
    EXPECT_EQ(revoked.error().message.find(kAdminPassword), std::string::npos)
        << revoked.error().message;
  }
}

TEST_F(PostgresProviderTest, AFailedIssueNeverShowsTheLeasedPassword) {
  // It fails after the password and its verifier exist, inside the transaction.
  auto p = provider();
  auto s = spec({{"orders", {"select"}}, {"missing", {"select"}}});
  auto lease = lease_for(p, s);
  auto issued = p.issue(s, lease, context());
  ASSERT_FALSE(issued.ok());
  EXPECT_FALSE(std::regex_search(issued.error().message, std::regex("[0-9a-f]{64}")))
      << issued.error().message;
  EXPECT_EQ(issued.error().message.find("SCRAM-SHA-256$"), std::string::npos)
      << issued.error().message;
}

TEST_F(PostgresProviderTest, ThePasswordNeverReachesTheServerLog) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  const std::string password = password_of(issued.value);
  ASSERT_EQ(password.size(), 64u);
  {
    auto c = connect(issued.value);
    ASSERT_TRUE(connected(c));
    EXPECT_EQ(query(c.get(), "SELECT count(*) FROM orders").sqlstate, "");
    EXPECT_NE(query(c.get(), "SELECT * FROM payroll").sqlstate,
              "");  // an error report in the log too
  }
  ASSERT_TRUE(p.revoke(lease, &issued.value));
  const std::string log = cluster_->log();
  // The log does record the statements: the role's creation, with what was sent instead.
  ASSERT_NE(log.find("CREATE ROLE \"" + role_of(lease) + "\""), std::string::npos);
  EXPECT_NE(log.find("SCRAM-SHA-256$4096:"), std::string::npos);
  EXPECT_EQ(log.find(password), std::string::npos)
      << "the leased password is in " << cluster_->log_file();
  EXPECT_EQ(log.find(kAdminPassword + "-wrong"), std::string::npos);
}

TEST_F(PostgresProviderTest, TheUrlPointsWhereTheToolConnects) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto direct_lease = lease_for(p, s);
  auto direct = issue(p, s, direct_lease);
  const std::string server_end = "@127.0.0.1:" + std::to_string(cluster_->port()) + "/shop";
  EXPECT_NE(direct.value.find(server_end), std::string::npos) << "no forward: the server itself";
  EXPECT_EQ(direct.value.rfind("postgresql://" + role_of(direct_lease) + ":", 0), 0u);

  auto c = context();
  c.forwards.push_back({15432, "db.elsewhere", 5432});
  c.forwards.push_back({25432, cluster_->host(), cluster_->port()});
  auto forwarded_lease = lease_for(p, s);
  auto forwarded = issue(p, s, forwarded_lease, c);
  EXPECT_NE(forwarded.value.find("@127.0.0.1:25432/shop"), std::string::npos)
      << "the sandbox's end of the forward";
  EXPECT_TRUE(p.revoke(direct_lease, nullptr));
  EXPECT_TRUE(p.revoke(forwarded_lease, nullptr));
}

TEST_F(PostgresProviderTest, TheRoleHasNoPowersBeyondItsGrants) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto lease = lease_for(p, s);
  auto issued = issue(p, s, lease);
  auto flags = cluster_->column(
      "SELECT concat_ws(',', rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolreplication, "
      "rolbypassrls, "
      "rolconnlimit) FROM pg_roles WHERE rolname = '" +
      role_of(lease) + "'");
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(*flags, std::vector<std::string>{"f,f,f,f,f,f,4"});
  EXPECT_TRUE(p.revoke(lease, &issued.value));
}

TEST_F(PostgresProviderTest, ATamperedLeaseCannotMakeRevokeDropAnotherRole) {
  // The stored lease names the admin (or any role that owns things): DROP OWNED BY it would
  // drop the tables.
  auto p = provider();
  ASSERT_TRUE(cluster_->exec("CREATE ROLE airlock_bystander LOGIN"));
  for (std::string victim : {"shop_admin", "airlock_bystander",
                             "airlock_0123456789ABCDEF0123456789ABCDEF", "postgres"}) {
    Lease lease;
    lease.id = random_hex(32);
    lease.target = {{"server", "shop"}, {"role", victim}};
    auto revoked = p.revoke(lease, nullptr);
    ASSERT_FALSE(revoked.ok()) << victim;
    EXPECT_EQ(revoked.error().code, "invalid_argument");
    auto issued = p.issue(spec({{"orders", {"select"}}}), lease, context());
    EXPECT_FALSE(issued.ok()) << victim;
  }
  EXPECT_TRUE(role_exists("shop_admin"));
  EXPECT_TRUE(role_exists("airlock_bystander"));
  EXPECT_EQ(cluster_
                ->column("SELECT count(*) FROM pg_tables WHERE tablename IN ('orders', "
                         "'customers', 'payroll')",
                         "shop")
                ->front(),
            "3");
  Lease bad_id;
  bad_id.id = "x; DROP TABLE orders";
  EXPECT_FALSE(p.target(spec({{"orders", {"select"}}}), bad_id).ok());
  ASSERT_TRUE(cluster_->exec("DROP ROLE airlock_bystander"));
}

TEST_F(PostgresProviderTest, APooledAdminConnectionTheServerClosedIsReplaced) {
  auto p = provider();
  auto s = spec({{"orders", {"select"}}});
  auto first = lease_for(p, s);
  auto issued = issue(p, s, first);
  ASSERT_TRUE(p.revoke(first, &issued.value));
  // The admin's idle connections are killed (a server restart, idle_session_timeout).
  ASSERT_TRUE(cluster_->exec(
      "SELECT pg_terminate_backend(pid, 2000) FROM pg_stat_activity WHERE usename = 'shop_admin'"));
  auto second = lease_for(p, s);
  auto again = p.issue(s, second, context());
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(login_error(again->value), "");
  EXPECT_TRUE(p.revoke(second, &again->value));
  // Connections kept stay few.
  auto admins =
      cluster_->column("SELECT count(*) FROM pg_stat_activity WHERE usename = 'shop_admin'");
  EXPECT_LE(std::stoi(admins->front()), 4);
}

TEST_F(PostgresProviderTest, AChangedAdminSecretTakesEffectAtTheNextCall) {
  // A pooled connection must not outlive the secret it was opened with.
  auto url = std::make_shared<std::string>(admin_url());
  PostgresProvider p({server()}, [url](const std::string&) -> Result<std::string> { return *url; });
  auto s = spec({{"orders", {"select"}}});
  auto first = lease_for(p, s);
  auto issued = issue(p, s, first);
  ASSERT_TRUE(p.revoke(first, &issued.value));
  *url = cluster_->url("shop_admin", kAdminPassword + "-rotated-away", "shop");
  auto second = lease_for(p, s);
  auto refused = p.issue(s, second, context());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("password authentication failed"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(role_exists(role_of(second)));
}

}  // namespace
}  // namespace airlock::creds
