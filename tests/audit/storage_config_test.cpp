// storage: in the configuration (policy/config_storage.cpp): postgres {url, passwordFile} and
// signingKeyFile read, and every mistake refused with an error naming it. A password never
// appears in an error.
#include <gtest/gtest.h>

#include <fstream>

#include "../unit/audit_test_support.hpp"
#include "policy/config.hpp"
#include "pipeline/storage_locations.hpp"
#include "storage/postgres.hpp"
#include "storage/state_location.hpp"

namespace airlock::policy {
namespace {

std::string config_with(const std::string& storage) {
  return "apiVersion: airlock.dev/v1\nkind: AirlockConfig\nstorage:\n" + storage +
         "tools:\n  - name: echo\n    runtime: {type: command, command: [/bin/cat]}\n";
}

Result<Config> parse(const std::string& yaml) { return parse_config(yaml, "test.yaml", "/etc/airlock"); }

TEST(StorageConfig, DefaultIsSqliteInTheDataDirectory) {
  auto c = parse(config_with("  dataDir: /var/lib/airlock\n"));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FALSE(c->storage.postgres);
  auto location = pipeline::audit_log_location(c->storage);
  EXPECT_FALSE(location.is_postgres());
  EXPECT_EQ(location.sqlite_path, "/var/lib/airlock/audit.db");
  EXPECT_EQ(location.signing_key_file(), "/var/lib/airlock/audit.db.key");
}

TEST(StorageConfig, PostgresWithThePasswordInTheUrl) {
  auto c = parse(config_with("  signingKeyFile: keys/audit.key\n  tokenKeyFile: keys/token.key\n"
                             "  postgres: {url: \"postgresql://airlock:s3cret@db:5432/airlock\"}\n"));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->storage.postgres);
  EXPECT_EQ(c->storage.postgres->url, "postgresql://airlock:s3cret@db:5432/airlock");
  EXPECT_EQ(c->storage.signing_key_file, "/etc/airlock/keys/audit.key");
  auto location = pipeline::audit_log_location(c->storage);
  EXPECT_TRUE(location.is_postgres());
  EXPECT_EQ(location.key_file, "/etc/airlock/keys/audit.key");
  EXPECT_EQ(location.describe().find("s3cret"), std::string::npos) << location.describe();
  EXPECT_EQ(c->storage.token_key_file, "/etc/airlock/keys/token.key");
  EXPECT_TRUE(pipeline::state_location(c->storage).is_postgres()) << "the state is the database's too";
}

TEST(StorageConfig, PostgresWithAPasswordFile) {
  audit::testing::ScratchDir dir;
  std::ofstream(dir.file("pw")) << "s3cret\n";
  auto c = parse(config_with("  signingKeyFile: /k\n  tokenKeyFile: /t\n  postgres:\n    url: postgresql://airlock@db/airlock\n"
                             "    passwordFile: " + dir.file("pw") + "\n"));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->storage.postgres->password_file, dir.file("pw"));
}

TEST(StorageConfig, MistakesAreNamed) {
  audit::testing::ScratchDir dir;
  std::ofstream(dir.file("pw")) << "s3cret\n";
  struct Case {
    std::string storage, expected;
  };
  const Case cases[] = {
      {"  signingKeyFile: /k\n  tokenKeyFile: /t\n  postgres: {url: \"mysql://u:Hidden1@db/x\"}\n",
       "storage.postgres.url: must be a postgresql:// URL"},
      {"  signingKeyFile: /k\n  tokenKeyFile: /t\n  postgres: {url: \"postgresql://u@db/x\", user: u}\n", "user"},
      {"  signingKeyFile: /k\n  tokenKeyFile: /t\n  postgres: {passwordFile: " + dir.file("pw") + "}\n",
       "storage.postgres.url: required"},
      {"  postgres: {url: \"postgresql://u@db/x\"}\n", "storage.postgres: needs storage.signingKeyFile"},
      {"  signingKeyFile: /k\n  postgres: {url: \"postgresql://u@db/x\"}\n",
       "storage.postgres: needs storage.tokenKeyFile"},
      {"  signingKeyFile: /k\n  tokenKeyFile: /t\n  postgres: {url: \"postgresql://u:Hidden1@db/x\", passwordFile: " +
           dir.file("pw") + "}\n",
       "the password is in the url and in passwordFile"},
      {"  signingKeyFile: /k\n  tokenKeyFile: /t\n  postgres: {url: \"postgresql://u@db/x\", passwordFile: " +
           dir.file("absent") + "}\n",
       "storage.postgres.passwordFile: " + dir.file("absent") + " is not a file"},
      {"  signingKeyFile: /k\n  tokenKeyFile: /t\n  postgres: \"postgresql://u@db/x\"\n", "storage.postgres"},
      {"  sqlite: {}\n", "sqlite"},
  };
  for (const auto& c : cases) {
    auto parsed = parse(config_with(c.storage));
    ASSERT_FALSE(parsed) << c.storage;
    EXPECT_NE(parsed.error().message.find(c.expected), std::string::npos)
        << "expected \"" << c.expected << "\" in: " << parsed.error().message;
    EXPECT_EQ(parsed.error().message.find("Hidden1"), std::string::npos)
        << "a password in an error: " << parsed.error().message;
  }
}

// The database's TCP endpoints, which the daemon forbids to every tool's egress: each host of a
// multi-host URL with its port (one port for all, or one each), 5432 by default, hostaddr over
// host, Unix sockets left out, a bad port refused.
TEST(StorageConfig, TheDatabasesTcpEndpoints) {
  auto text = [](const std::string& url) {
    auto hosts = storage::pg::tcp_hosts(url);
    if (!hosts) return std::string("refused");
    std::string out;
    for (const auto& h : *hosts) out += h.host + ":" + std::to_string(h.port) + " ";
    return out;
  };
  EXPECT_EQ(text("postgresql://u:p@db.internal/airlock"), "db.internal:5432 ");
  EXPECT_EQ(text("postgresql://u@a:5433,b:5434/airlock"), "a:5433 b:5434 ");
  EXPECT_EQ(text("postgresql://u@a,b:6000/airlock"), "a:5432 b:6000 ");
  EXPECT_EQ(text("host=a,b port=7000 dbname=x"), "a:7000 b:7000 ");
  EXPECT_EQ(text("host=db.internal hostaddr=10.0.0.7 port=5544 dbname=x"), "10.0.0.7:5544 ");
  EXPECT_EQ(text("host=/run/postgresql dbname=x"), "");
  EXPECT_EQ(text("postgresql:///airlock"), "");
  EXPECT_EQ(text("host=a port=70000 dbname=x"), "refused");
  EXPECT_EQ(text("postgresql://u@a:notaport/x"), "refused");
}

}  // namespace
}  // namespace airlock::policy
