// The pin store as the daemon and `airlock mcp pins` use it: two connections to one state.db,
// each seeing the other's changes, and a write that waits for the other's instead of failing.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "mcp/pin_store.hpp"

namespace airlock::mcp {
namespace {

namespace fs = std::filesystem;

class PinStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("airlock-mcp-pins-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    db_ = (dir_ / "state.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<PinStore> open() {
    auto s = PinStore::open(db_);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return s.ok() ? std::move(*s) : nullptr;
  }

  fs::path dir_;
  std::string db_;
};

TEST_F(PinStoreTest, PinIfNewOnlyOnce) {
  auto store = open();
  ASSERT_TRUE(store);
  auto first = store->pin_if_new("files", "read_file", std::string(64, 'a'));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(*first);
  auto again = store->pin_if_new("files", "read_file", std::string(64, 'b'));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_EQ(store->get("files", "read_file")->sha256, std::string(64, 'a'));
  EXPECT_FALSE(store->get("files", "other").has_value());
  EXPECT_FALSE(store->get("other", "read_file").has_value());
}

TEST_F(PinStoreTest, TwoConnectionsSeeEachOthersChanges) {
  auto daemon = open();
  auto cli = open();
  ASSERT_TRUE(daemon && cli);
  ASSERT_TRUE(daemon->pin_if_new("files", "read_file", std::string(64, 'a')).ok());
  ASSERT_TRUE(daemon->pin_if_new("everything", "echo", std::string(64, 'c')).ok());
  ASSERT_TRUE(
      daemon->record_pending("files", "read_file", std::string(64, 'b'), {{"name", "read_file"}})
          .ok());
  auto listed = cli->list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].server, "everything");  // ordered by server, then tool
  EXPECT_EQ(listed[1].pending_sha256, std::string(64, 'b'));
  EXPECT_EQ(listed[1].pending["name"], "read_file");
  ASSERT_TRUE(cli->approve("files", "read_file", std::string(64, 'b')).ok());
  EXPECT_EQ(daemon->get("files", "read_file")->sha256, std::string(64, 'b'));
  EXPECT_TRUE(daemon->get("files", "read_file")->pending_sha256.empty());
}

TEST_F(PinStoreTest, PendingSinceIsTheFirstSightingOfThatListing) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->pin_if_new("files", "read_file", std::string(64, 'a')).ok());
  ASSERT_TRUE(store->record_pending("files", "read_file", std::string(64, 'b'), {}).ok());
  // Rewrite the time so that a second record of the same listing would visibly change it.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(raw, "UPDATE mcp_pins SET pending_since = 'then'", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(raw);
  ASSERT_TRUE(store->record_pending("files", "read_file", std::string(64, 'b'), {}).ok());
  EXPECT_EQ(store->get("files", "read_file")->pending_since, "then");
  ASSERT_TRUE(store->record_pending("files", "read_file", std::string(64, 'c'), {}).ok());
  EXPECT_NE(store->get("files", "read_file")->pending_since, "then");
}

// The CLI writing while the daemon holds the write lock waits for it (the busy timeout).
TEST_F(PinStoreTest, AWriteWaitsForAnotherConnectionsTransaction) {
  auto store = open();
  ASSERT_TRUE(store);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other,
                         "BEGIN IMMEDIATE; INSERT INTO mcp_pins (server, tool, sha256, pinned_at)"
                         " VALUES ('x', 'y', 'z', 'now')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  std::thread committer([other] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  });
  auto pinned = store->pin_if_new("files", "read_file", std::string(64, 'a'));
  committer.join();
  sqlite3_close(other);
  ASSERT_TRUE(pinned.ok()) << pinned.error().message;
  EXPECT_TRUE(*pinned);
  EXPECT_EQ(store->list().size(), 2u);
}

TEST_F(PinStoreTest, AnUnopenableFileIsAnError) {
  auto s = PinStore::open((dir_ / "no-such-dir" / "state.db").string());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "storage");
}

}  // namespace
}  // namespace airlock::mcp
