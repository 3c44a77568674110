// The data directory's lock (src/storage/data_dir_lock.hpp): one holder, what it announces,
// and what a would-be second one reads (`airlock mcp --config` bridges on it).
#include "storage/data_dir_lock.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace airlock::storage {
namespace {

class DataDirLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("airlock-lock-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(DataDirLockTest, NobodyHoldsAFreshDirectory) {
  auto holder = DataDirLock::holder(dir_);
  ASSERT_TRUE(holder);
  EXPECT_FALSE(holder->held);
}

TEST_F(DataDirLockTest, TheHolderIsNamedAndItsUrlReadOnceAnnounced) {
  auto lock = DataDirLock::acquire(dir_);
  ASSERT_TRUE(lock) << lock.error().message;
  auto before = DataDirLock::holder(dir_);
  ASSERT_TRUE(before);
  EXPECT_TRUE(before->held);
  EXPECT_EQ(before->pid, std::to_string(::getpid()));
  EXPECT_EQ(before->url, "");  // an embedded `airlock mcp` never announces one
  ASSERT_TRUE(lock->announce("http://127.0.0.1:8750"));
  auto after = DataDirLock::holder(dir_);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->url, "http://127.0.0.1:8750");
  auto second = DataDirLock::acquire(dir_);  // a second daemon is refused, naming the first
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("pid " + std::to_string(::getpid())), std::string::npos);
}

TEST_F(DataDirLockTest, ALockLetGoIsNoLongerHeldThoughTheFileSaysWhoHadIt) {
  {
    auto lock = DataDirLock::acquire(dir_);
    ASSERT_TRUE(lock);
    ASSERT_TRUE(lock->announce("http://127.0.0.1:1"));
  }
  auto holder = DataDirLock::holder(dir_);
  ASSERT_TRUE(holder);
  EXPECT_FALSE(holder->held);  // a dead daemon's URL is not bridged to
}

}  // namespace
}  // namespace airlock::storage
