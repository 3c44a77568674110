// storage::open_sqlite_state, the one way the SQLite state stores open their file: what it
// refuses (a path it cannot open or make, a symlink where a private file is made, a schema
// that fails, a database that cannot be in WAL mode), each error naming the step and the file;
// and what it sets (WAL, synchronous, the file mode).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <chrono>
#include <fstream>
#include <thread>

#include "storage/sqlite_state.hpp"
#include "storage/wal_checkpoints.hpp"

namespace airlock::storage {
namespace {

namespace fs = std::filesystem;

class SqliteStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("airlock-sqlite-state-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "state.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string pragma(sqlite3* db, const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW) out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    return out;
  }

  fs::path dir_;
  std::string path_;
};

SqliteStateOptions private_file() {
  SqliteStateOptions options;
  options.file_mode = 0600;
  return options;
}

constexpr const char* kSchema = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER)";

TEST_F(SqliteStateTest, OpensInWalWithTheSchemaAndNormalSync) {
  auto db = open_sqlite_state(path_, kSchema, "test store");
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(pragma(db->get(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(pragma(db->get(), "PRAGMA synchronous"), "1") << "NORMAL";
  EXPECT_EQ(sqlite3_exec(db->get(), "INSERT INTO t VALUES ('a', 1)", nullptr, nullptr, nullptr), SQLITE_OK);
  // Another connection (the CLI beside the daemon) finds the file in WAL mode, and opening
  // it again runs the schema again harmlessly.
  auto again = open_sqlite_state(path_, kSchema, "test store");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(pragma(again->get(), "SELECT v FROM t WHERE k = 'a'"), "1");
}

TEST_F(SqliteStateTest, RefusesAPathItCannotOpen) {
  const std::string path = (dir_ / "missing-dir" / "state.db").string();
  auto db = open_sqlite_state(path, kSchema, "test store");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.error().code, "storage");
  EXPECT_NE(db.error().message.find("test store: opening " + path + ": "), std::string::npos)
      << db.error().message;
}

TEST_F(SqliteStateTest, ASchemaErrorNamesTheStepAndTheFile) {
  auto db = open_sqlite_state(path_, "CREATE TABLE t (k TEXT PRIMARY KEY", "test store");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.error().code, "storage");
  EXPECT_NE(db.error().message.find("test store: creating the schema in " + path_ + ": "), std::string::npos)
      << db.error().message;
  EXPECT_NE(db.error().message.find(": incomplete input"), std::string::npos) << "SQLite's reason" << db.error().message;
}

// An in-memory database cannot be in WAL mode: refused, not used with another journal.
TEST_F(SqliteStateTest, RefusesADatabaseThatStaysOutOfWal) {
  auto db = open_sqlite_state(":memory:", kSchema, "test store");
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message.find("test store: setting WAL mode on :memory:: the journal mode stayed memory"),
            std::string::npos)
      << db.error().message;
}

TEST_F(SqliteStateTest, APrivateFileIsMadeWithItsModeWhateverTheUmask) {
  const mode_t old = ::umask(0);
  SqliteStateOptions options;
  options.file_mode = 0600;
  options.serialized = false;
  options.synchronous = "FULL";
  auto db = open_sqlite_state(path_, kSchema, "secrets", options);
  ::umask(old);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(pragma(db->get(), "PRAGMA synchronous"), "2") << "FULL";
  ASSERT_EQ(sqlite3_exec(db->get(), "INSERT INTO t VALUES ('a', 1)", nullptr, nullptr, nullptr), SQLITE_OK);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    struct stat st{};
    ASSERT_EQ(::stat((path_ + suffix).c_str(), &st), 0) << suffix;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << path_ << suffix;
  }
}

// The attack: a symlink planted where the private database goes, pointing at a file the
// attacker can read. Refused (O_NOFOLLOW); the target is left as it was.
TEST_F(SqliteStateTest, APrivateFileIsNotMadeThroughASymlink) {
  const fs::path target = dir_ / "attacker-readable";
  { std::ofstream(target) << ""; }
  fs::create_symlink(target, path_);
  auto db = open_sqlite_state(path_, kSchema, "secrets", private_file());
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message.find("secrets: making " + path_ + ": "), std::string::npos) << db.error().message;
  EXPECT_EQ(fs::file_size(target), 0u);
}

// Without a file mode SQLite makes the file; with one it may not (the file must be the one
// made with that mode), so the "making" step is the only one that creates it.
TEST_F(SqliteStateTest, APrivateFileInAMissingDirectoryIsRefusedAtMaking) {
  const std::string path = (dir_ / "missing-dir" / "secrets.db").string();
  auto db = open_sqlite_state(path, kSchema, "secrets", private_file());
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message.find("secrets: making " + path + ": "), std::string::npos) << db.error().message;
}

// The statement and exec the stores share: a value round-trips, a NULL reads as one, and a
// failing statement is an error naming the store and SQLite's reason.
TEST_F(SqliteStateTest, StatementsAndExecOfAStore) {
  auto db = open_sqlite_state(path_, kSchema, "test store");
  ASSERT_TRUE(db.ok()) << db.error().message;
  {
    SqliteStatement insert(db->get(), "INSERT INTO t (k, v) VALUES (?, ?), ('null', NULL)");
    ASSERT_TRUE(insert.ok());
    insert.bind(1, std::string("a\0b", 3));
    insert.bind(2, std::int64_t{1} << 40);
    EXPECT_TRUE(insert.step_done());
  }
  SqliteStatement read(db->get(), "SELECT k, v FROM t ORDER BY v IS NULL");
  ASSERT_TRUE(read.step_row());
  EXPECT_EQ(read.text(0), std::string("a\0b", 3));
  EXPECT_EQ(read.integer(1), std::int64_t{1} << 40);
  ASSERT_TRUE(read.step_row());
  EXPECT_TRUE(read.is_null(1));
  EXPECT_TRUE(read.step_done());

  SqliteStatement bad(db->get(), "SELECT nope FROM t");
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(bad.step_row()) << "a statement that did not prepare steps to an error";
  auto failed = sqlite_exec(db->get(), "INSERT INTO missing VALUES (1)", "test store");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, "storage");
  EXPECT_EQ(failed.error().message, "test store: no such table: missing");
}

// Commits that take the WAL past SQLite's checkpoint bound hand the checkpoint to the
// background thread: its count rises and the commits' own does not. Without the hook SQLite
// would have checkpointed inside those commits and the background count would not move; with
// the hook and no thread, the WAL (24,576 commits) would pass the inline bound and the
// commits' own count would rise. (How far the WAL grows meanwhile depends on how fast the
// thread runs beside the writer, so it is not asserted.)
TEST_F(SqliteStateTest, CheckpointsRunInTheBackgroundNotInTheCommit) {
  auto db = open_sqlite_state(path_, kSchema, "test store");
  ASSERT_TRUE(db.ok()) << db.error().message;
  const auto before = checkpoint_counts();
  for (int i = 0; i < 6 * kBackgroundCheckpointFrames; ++i) {
    const std::string sql = "INSERT OR REPLACE INTO t VALUES ('k" + std::to_string(i % 50) + "', " + std::to_string(i) + ")";
    ASSERT_EQ(sqlite3_exec(db->get(), sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    // Pauses, as a daemon's calls have: a PASSIVE checkpoint restarts the WAL only once it has
    // caught up with the writer, which a writer that never pauses would not let it do.
    if (i % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int i = 0; i < 500 && checkpoint_counts().background == before.background; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto after = checkpoint_counts();
  EXPECT_GT(after.background, before.background) << "the background thread checkpointed";
  EXPECT_EQ(after.inline_, before.inline_) << "no commit checkpointed itself";
}

// The bound when the thread cannot keep up: with it held, a commit past
// kInlineCheckpointFrames checkpoints itself, as SQLite would, so the WAL stays bounded.
TEST_F(SqliteStateTest, AWalTheThreadCannotKeepUpWithIsCheckpointedByTheCommit) {
  auto db = open_sqlite_state(path_, kSchema, "test store");
  ASSERT_TRUE(db.ok()) << db.error().message;
  hold_background_checkpoints(true);
  const auto before = checkpoint_counts();
  for (int i = 0; i < kInlineCheckpointFrames + 100; ++i) {
    const std::string sql = "INSERT OR REPLACE INTO t VALUES ('k', " + std::to_string(i) + ")";
    ASSERT_EQ(sqlite3_exec(db->get(), sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  }
  const auto after = checkpoint_counts();
  EXPECT_GT(after.inline_, before.inline_);
  // Read while the thread is still held (released, it runs the checkpoints asked meanwhile).
  int log = -1, done = -1;
  const int rc = sqlite3_wal_checkpoint_v2(db->get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
  hold_background_checkpoints(false);
  ASSERT_EQ(rc, SQLITE_OK);
  EXPECT_LT(log, kInlineCheckpointFrames) << "frames in the WAL";
}

}  // namespace
}  // namespace airlock::storage
