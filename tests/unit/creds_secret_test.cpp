// The secret store and the `secret` provider as a threat model: each test makes the attack
// (read the database, alter or move a row, loosen or swap the key file) and asserts it failed.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "creds/providers/secret_provider.hpp"
#include "creds/secret_store.hpp"
#include "creds/wipe.hpp"

namespace airlock::creds {
namespace {

namespace fs = std::filesystem;

const std::string kValue = "s3cr3t-Value-7f2c9a";  // nothing else in the files looks like it

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const fs::path& path, const std::string& bytes, fs::perms mode) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  fs::permissions(path, mode);
}

class SecretStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("AIRLOCK_SECRETS_KEY_FILE");
    root_ = fs::temp_directory_path() /
            ("airlock-secrets-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    data_ = (root_ / "data").string();
  }
  void TearDown() override {
    ::unsetenv("AIRLOCK_SECRETS_KEY_FILE");
    fs::remove_all(root_);
  }

  std::unique_ptr<SecretStore> open_store() {
    auto store = SecretStore::open(data_);
    EXPECT_TRUE(store.ok()) << store.error().code << ": " << store.error().message;
    return store.ok() ? std::move(*store) : nullptr;
  }

  // A column of a row of secrets.db, read and written directly (the attacker's view).
  std::string column(const std::string& name, const std::string& col) {
    std::string out;
    with_statement("SELECT " + col + " FROM secrets WHERE name = ?", [&](sqlite3_stmt* stmt) {
      sqlite3_bind_text(stmt, 1, name.c_str(), -1, SQLITE_TRANSIENT);
      EXPECT_EQ(sqlite3_step(stmt), SQLITE_ROW);
      const void* p = sqlite3_column_blob(stmt, 0);
      out.assign(static_cast<const char*>(p),
                 static_cast<std::size_t>(sqlite3_column_bytes(stmt, 0)));
    });
    return out;
  }
  void put_column(const std::string& name, const std::string& col, const std::string& bytes) {
    with_statement("UPDATE secrets SET " + col + " = ? WHERE name = ?", [&](sqlite3_stmt* stmt) {
      sqlite3_bind_blob(stmt, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
      sqlite3_bind_text(stmt, 2, name.c_str(), -1, SQLITE_TRANSIENT);
      EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE);
      EXPECT_EQ(sqlite3_changes(sqlite3_db_handle(stmt)), 1);
    });
  }
  template <typename F>
  void with_statement(const std::string& sql, F&& use) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((data_ + "/secrets.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    use(stmt);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }

  // Every byte the data directory holds: the database, its -wal and -shm, anything else.
  std::string data_dir_bytes() const {
    std::string all;
    for (const auto& entry : fs::recursive_directory_iterator(data_))
      if (entry.is_regular_file()) all += read_file(entry.path());
    return all;
  }

  fs::path root_;
  std::string data_;
};

TEST_F(SecretStoreTest, RoundTrip) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->set("slack-token", kValue).ok());
  auto got = store->get("slack-token");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, kValue);
  // Any bytes, NUL included, and an overwrite replaces the value.
  const std::string binary("a\0b\n\xff", 5);
  ASSERT_TRUE(store->set("slack-token", binary).ok());
  EXPECT_EQ(*store->get("slack-token"), binary);
}

TEST_F(SecretStoreTest, ValueIsNotInTheDataDirectory) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->set("db-password", kValue).ok());
  ASSERT_TRUE(store->set("other", kValue).ok());       // the same value twice: still not readable
  ASSERT_TRUE(fs::exists(data_ + "/secrets.db-wal"));  // WAL: the rows are in here
  const std::string bytes = data_dir_bytes();
  EXPECT_NE(bytes.find("db-password"), std::string::npos) << "control: the files were read";
  EXPECT_EQ(bytes.find(kValue), std::string::npos);
  // Closed: the WAL is checkpointed into secrets.db.
  store.reset();
  const std::string checkpointed = data_dir_bytes();
  EXPECT_NE(checkpointed.find("db-password"), std::string::npos);
  EXPECT_EQ(checkpointed.find(kValue), std::string::npos);
}

TEST_F(SecretStoreTest, EachSetHasAFreshNonce) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->set("token", kValue).ok());
  const std::string first = column("token", "nonce");
  ASSERT_TRUE(store->set("token", kValue).ok());
  EXPECT_EQ(first.size(), 12u);
  EXPECT_NE(column("token", "nonce"), first);
  EXPECT_EQ(column("token", "tag").size(), 16u);
}

TEST_F(SecretStoreTest, AlteredRowIsCorrupt) {
  auto store = open_store();
  ASSERT_TRUE(store);
  for (const std::string col : {"ciphertext", "tag", "nonce"}) {
    ASSERT_TRUE(store->set("token", kValue).ok());
    std::string bytes = column("token", col);
    ASSERT_FALSE(bytes.empty());
    bytes[bytes.size() / 2] ^= 0x01;
    put_column("token", col, bytes);
    auto got = store->get("token");
    ASSERT_FALSE(got.ok()) << col << " flipped and still decrypted";
    EXPECT_EQ(got.error().code, "secret_corrupt") << col;
    EXPECT_EQ(got.error().message.find(kValue), std::string::npos);
  }
}

TEST_F(SecretStoreTest, TruncatedCiphertextIsCorrupt) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->set("token", kValue).ok());
  put_column("token", "ciphertext", column("token", "ciphertext").substr(0, 4));
  auto got = store->get("token");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, "secret_corrupt");
}

// The name is the associated data: a row moved under another name does not open, so whoever
// can write the database cannot make the tool of one secret receive another.
TEST_F(SecretStoreTest, RowCopiedUnderAnotherNameIsCorrupt) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->set("admin-token", kValue).ok());
  ASSERT_TRUE(store->set("public-token", "harmless").ok());
  for (const std::string col : {"nonce", "ciphertext", "tag"})
    put_column("public-token", col, column("admin-token", col));
  auto got = store->get("public-token");
  ASSERT_FALSE(got.ok()) << "the moved row decrypted";
  EXPECT_EQ(got.error().code, "secret_corrupt");
  EXPECT_EQ(*store->get("admin-token"), kValue) << "control: the row itself is intact";
}

TEST_F(SecretStoreTest, KeyFileIsCreatedPrivateBesideTheDataDirectory) {
  ASSERT_TRUE(SecretStore::open(data_ + "/").ok());  // a trailing slash names the same key
  const fs::path key = data_ + ".secrets-key";
  EXPECT_EQ(SecretStore::key_file_for(data_ + "/"), key.string());
  struct stat st {};
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 32);
  EXPECT_FALSE(fs::exists(fs::path(data_) / "secrets-key")) << "the key is outside the data dir";
  for (const auto& entry : fs::directory_iterator(root_))
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
}

TEST_F(SecretStoreTest, ExistingKeyIsReused) {
  ASSERT_TRUE(open_store()->set("token", kValue).ok());
  const std::string key = read_file(data_ + ".secrets-key");
  auto again = open_store();
  ASSERT_TRUE(again);
  EXPECT_EQ(*again->get("token"), kValue);
  EXPECT_EQ(read_file(data_ + ".secrets-key"), key);
}

TEST_F(SecretStoreTest, KeyFileReadableByOthersIsRefused) {
  ASSERT_TRUE(open_store());
  const fs::path key = data_ + ".secrets-key";
  for (auto mode : {fs::perms(0644), fs::perms(0640), fs::perms(0620), fs::perms(0602)}) {
    fs::permissions(key, mode);
    auto store = SecretStore::open(data_);
    ASSERT_FALSE(store.ok()) << "mode " << std::oct << static_cast<int>(mode);
    EXPECT_EQ(store.error().code, "insecure_key_file");
    EXPECT_NE(store.error().message.find(key.string()), std::string::npos);
  }
  fs::permissions(key, fs::perms(0400));
  EXPECT_TRUE(SecretStore::open(data_).ok()) << "control: owner-only modes are fine";
}

TEST_F(SecretStoreTest, WrongSizeKeyIsRefused) {
  const fs::path key = data_ + ".secrets-key";
  for (std::size_t size : {0u, 16u, 31u, 33u, 64u}) {
    write_file(key, std::string(size, 'k'), fs::perms(0600));
    auto store = SecretStore::open(data_);
    ASSERT_FALSE(store.ok()) << size << " bytes accepted";
    EXPECT_EQ(store.error().code, "storage");
    EXPECT_NE(store.error().message.find("not 32"), std::string::npos) << store.error().message;
  }
  write_file(key, std::string(32, 'k'), fs::perms(0600));
  EXPECT_TRUE(SecretStore::open(data_).ok()) << "control: 32 bytes are a key";
}

// A symlink planted where the key goes is not followed, neither to create nor to read.
TEST_F(SecretStoreTest, SymlinkKeyFileIsRefused) {
  const fs::path planted = root_ / "attacker-key";
  write_file(planted, std::string(32, 'a'), fs::perms(0600));
  fs::create_symlink(planted, data_ + ".secrets-key");
  auto store = SecretStore::open(data_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, "storage");
  fs::remove(data_ + ".secrets-key");
  fs::create_symlink(root_ / "missing", data_ + ".secrets-key");  // dangling: not created through
  EXPECT_FALSE(SecretStore::open(data_).ok());
  EXPECT_FALSE(fs::exists(root_ / "missing"));
}

TEST_F(SecretStoreTest, KeyFileFromTheEnvironment) {
  const fs::path key = root_ / "elsewhere.key";
  ::setenv("AIRLOCK_SECRETS_KEY_FILE", key.c_str(), 1);
  EXPECT_EQ(SecretStore::key_file_for(data_), key.string());
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->set("token", kValue).ok());
  EXPECT_EQ(fs::file_size(key), 32u);
  EXPECT_FALSE(fs::exists(data_ + ".secrets-key"));
  // Without the variable, the default key is another one: the value does not open.
  ::unsetenv("AIRLOCK_SECRETS_KEY_FILE");
  auto other = open_store();
  ASSERT_TRUE(other);
  auto got = other->get("token");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, "secret_corrupt");
}

// A copy of the data directory alone (the database, without its key) reveals nothing.
TEST_F(SecretStoreTest, AnotherKeyCannotRead) {
  ASSERT_TRUE(open_store()->set("token", kValue).ok());
  const std::string copy = (root_ / "stolen").string();
  fs::copy(data_, copy, fs::copy_options::recursive);
  auto thief = SecretStore::open(copy);  // makes a key of its own for the copy
  ASSERT_TRUE(thief.ok());
  auto got = (*thief)->get("token");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, "secret_corrupt");
  EXPECT_EQ(got.error().message.find(kValue), std::string::npos);
  ASSERT_TRUE((*thief)->list().ok());
  EXPECT_EQ((*thief)->list()->size(), 1u) << "control: the copy holds the row";
}

TEST_F(SecretStoreTest, ListHasNamesAndTimesOnly) {
  auto store = open_store();
  ASSERT_TRUE(store);
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  ASSERT_TRUE(store->set("zeta", kValue).ok());
  ASSERT_TRUE(store->set("alpha", "other-value").ok());
  auto entries = store->list();
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].name, "alpha");
  EXPECT_EQ((*entries)[1].name, "zeta");
  for (const auto& e : *entries) {
    EXPECT_GE(e.updated_ms, before);
    EXPECT_EQ(e.name.find(kValue), std::string::npos);
  }
}

TEST_F(SecretStoreTest, Remove) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->set("token", kValue).ok());
  ASSERT_TRUE(store->set("kept", kValue).ok());
  ASSERT_TRUE(store->remove("token").ok());
  auto got = store->get("token");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, "unknown_secret");
  auto again = store->remove("token");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, "unknown_secret");
  EXPECT_EQ(*store->get("kept"), kValue);
  EXPECT_EQ(store->list()->size(), 1u);
}

TEST_F(SecretStoreTest, NamesFollowTheToolNameRule) {
  auto store = open_store();
  ASSERT_TRUE(store);
  for (const std::string& name : std::vector<std::string>{"", "Upper", "a/b", "../x", "a b", "x\n",
                                                          "x'--", std::string("a\0b", 3)}) {
    auto s = store->set(name, kValue);
    ASSERT_FALSE(s.ok()) << "name [" << name << "] accepted";
    EXPECT_EQ(s.error().code, "invalid_argument");
    EXPECT_NE(s.error().message.find("lower-case letters"), std::string::npos);
    EXPECT_EQ(store->get(name).error().code, "invalid_argument");
    EXPECT_EQ(store->remove(name).error().code, "invalid_argument");
  }
  EXPECT_TRUE(store->list()->empty());
  EXPECT_TRUE(store->set("ok-name_1.v2", kValue).ok());
}

TEST_F(SecretStoreTest, ValueLimits) {
  auto store = open_store();
  ASSERT_TRUE(store);
  auto empty = store->set("token", "");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, "invalid_argument");
  const std::string big(64 * 1024 + 1, 'v');
  auto too_big = store->set("token", big);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().code, "invalid_argument");
  EXPECT_EQ(too_big.error().message.find("vvvv"), std::string::npos)
      << "the value is not in the error";
  const std::string largest(64 * 1024, 'v');
  ASSERT_TRUE(store->set("token", largest).ok());
  EXPECT_EQ(*store->get("token"), largest);
}

// The CLI and the daemon are two processes with two connections: a value set by one is read
// by the other's open store, without reopening it.
TEST_F(SecretStoreTest, SetIsSeenByAnOpenStore) {
  auto daemon = open_store();
  auto cli = open_store();
  ASSERT_TRUE(daemon && cli);
  EXPECT_EQ(daemon->get("token").error().code, "unknown_secret");
  ASSERT_TRUE(cli->set("token", "first").ok());
  EXPECT_EQ(*daemon->get("token"), "first");
  ASSERT_TRUE(cli->set("token", "second").ok());
  EXPECT_EQ(*daemon->get("token"), "second");
  ASSERT_TRUE(cli->remove("token").ok());
  EXPECT_EQ(daemon->get("token").error().code, "unknown_secret");
}

// The first opens race to make the key: one wins, every store ends up with the same key (a
// store that read a half-written key, or kept its own, would not open the others' values).
TEST_F(SecretStoreTest, ConcurrentFirstOpensShareOneKey) {
  constexpr int kStores = 8;
  std::vector<std::unique_ptr<SecretStore>> stores(kStores);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStores; ++i)
    threads.emplace_back([&, i] {
      auto store = SecretStore::open(data_);
      if (store.ok()) stores[i] = std::move(*store);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kStores; ++i) {
    ASSERT_TRUE(stores[i]) << "store " << i << " did not open";
    ASSERT_TRUE(stores[i]->set("s" + std::to_string(i), "value-" + std::to_string(i)).ok());
  }
  for (const auto& store : stores)
    for (int i = 0; i < kStores; ++i)
      EXPECT_EQ(*store->get("s" + std::to_string(i)), "value-" + std::to_string(i));
}

// The CLI writes while the daemon reads: the busy timeout makes them wait, not fail.
TEST_F(SecretStoreTest, WritersAndReadersDoNotFail) {
  auto seed = open_store();
  ASSERT_TRUE(seed && seed->set("token", "v0").ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto store = SecretStore::open(data_);
      if (!store.ok()) return void(++failures);
      for (int i = 0; i < 50; ++i) {
        bool ok = t % 2 == 0 ? (*store)->set("token", "v" + std::to_string(i)).ok()
                             : (*store)->get("token").ok();
        if (!ok) ++failures;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(SecretStoreTest, DatabaseFilesArePrivate) {
  auto store = open_store();  // open: the -wal file exists
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->set("token", kValue).ok());
  for (const char* file : {"/secrets.db", "/secrets.db-wal"}) {
    struct stat st {};
    ASSERT_EQ(::stat((data_ + file).c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 077, 0u) << file;
  }
}

// --- the provider ---

policy::CredentialSpec secret_spec(const std::string& name) {
  policy::CredentialSpec spec;
  spec.env = "API_TOKEN";
  spec.source = policy::SecretCredential{name};
  spec.where = "airlock.yaml:12";
  return spec;
}

class SecretProviderTest : public ::testing::Test {
 protected:
  std::map<std::string, std::string> values_{{"api-token", kValue}, {"other", "other-Value-91x"}};
  SecretProvider provider_{[this](const std::string& name) -> Result<std::string> {
    auto it = values_.find(name);
    if (it == values_.end()) return Error::make("unknown_secret", "no secret named '" + name + "'");
    return it->second;
  }};
  Lease lease_;
  LeaseContext context_;
};

TEST_F(SecretProviderTest, Issue) {
  EXPECT_EQ(provider_.kind(), "secret");
  auto target = provider_.target(secret_spec("api-token"), lease_);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(*target, (nlohmann::json{{"secret", "api-token"}}));
  context_.max_ttl = std::chrono::seconds(90);
  auto issued = provider_.issue(secret_spec("api-token"), lease_, context_);
  ASSERT_TRUE(issued.ok()) << issued.error().message;
  EXPECT_EQ(issued->value, kValue);
  EXPECT_EQ(issued->scopes, std::vector<std::string>{"secret:api-token"});
  EXPECT_EQ(issued->expires_at, context_.now + std::chrono::seconds(90));
  EXPECT_EQ(target->dump().find(kValue), std::string::npos) << "the target is stored: no value";
}

TEST_F(SecretProviderTest, RevokeHasNothingToEnd) {
  EXPECT_TRUE(provider_.revoke(lease_, &kValue).ok());
  EXPECT_TRUE(provider_.revoke(lease_, nullptr).ok());
  EXPECT_EQ(values_.at("api-token"), kValue);
}

TEST_F(SecretProviderTest, UnknownSecretSaysHowToSetItAndNoValue) {
  auto issued = provider_.issue(secret_spec("missing"), lease_, context_);
  ASSERT_FALSE(issued.ok());
  EXPECT_EQ(issued.error().code, "credential_unavailable");
  EXPECT_NE(issued.error().message.find("airlock secrets set missing"), std::string::npos)
      << issued.error().message;
  for (const auto& [name, value] : values_)
    EXPECT_EQ(issued.error().message.find(value), std::string::npos);
}

TEST_F(SecretProviderTest, NotASecretSpecIsRefused) {
  policy::CredentialSpec spec = secret_spec("api-token");
  spec.source = policy::TokenCredential{"billing", {}, std::chrono::seconds(60)};
  EXPECT_FALSE(provider_.target(spec, lease_).ok());
  EXPECT_FALSE(provider_.issue(spec, lease_, context_).ok());
}

// With the real store behind it: a corrupt row is unavailable, named, with no value.
TEST_F(SecretStoreTest, ProviderOverTheStore) {
  std::shared_ptr<SecretStore> store = open_store();
  ASSERT_TRUE(store);
  SecretProvider provider(SecretProvider::lookup_in(store));
  ASSERT_TRUE(store->set("api-token", kValue).ok());
  Lease lease;
  LeaseContext context;
  auto issued = provider.issue(secret_spec("api-token"), lease, context);
  ASSERT_TRUE(issued.ok());
  EXPECT_EQ(issued->value, kValue);
  std::string tag = column("api-token", "tag");
  tag[0] ^= 0x80;
  put_column("api-token", "tag", tag);
  auto corrupt = provider.issue(secret_spec("api-token"), lease, context);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.error().code, "credential_unavailable");
  EXPECT_NE(corrupt.error().message.find("secret_corrupt"), std::string::npos);
  EXPECT_EQ(corrupt.error().message.find(kValue), std::string::npos);
  ASSERT_TRUE(store->remove("api-token").ok());
  auto gone = provider.issue(secret_spec("api-token"), lease, context);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("airlock secrets set api-token"), std::string::npos);
}

// A wiped secret is overwritten where it lay, not only emptied: the string keeps its buffer
// (clear() does not free it), so the bytes it held are read there.
TEST(WipeSecret, OverwritesTheBytesBeforeEmptying) {
  std::string value = kValue + kValue;  // past the short-string buffer: on the heap
  const char* where = value.data();
  const std::size_t size = value.size();
  wipe_secret(value);
  EXPECT_TRUE(value.empty());
  ASSERT_EQ(value.data(), where);
  EXPECT_EQ(std::string(where, size), std::string(size, '\0'));

  std::map<std::string, std::string> env = {{"API_TOKEN", kValue + kValue}, {"EMPTY", ""}};
  const char* token = env["API_TOKEN"].data();
  wipe_secrets(env);
  EXPECT_EQ(env.size(), 2U);  // the names stay
  EXPECT_TRUE(env["API_TOKEN"].empty());
  EXPECT_EQ(std::string(token, size), std::string(size, '\0'));
}

}  // namespace
}  // namespace airlock::creds
