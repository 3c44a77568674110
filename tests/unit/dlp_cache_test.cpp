// The compiled-database cache (dlp/vectorscan/database_cache.hpp): a good file is used, anything else is
// refused and replaced, and what a scanner finds is the same with or without it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/digest.hpp"
#include "dlp/vectorscan/database_cache.hpp"
#include "dlp/engine.hpp"
#include "dlp/scanner.hpp"

namespace airlock::dlp {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kAwsKey = "aws key AKIAUP6PPB2TDBM72FQO in the text";
constexpr std::string_view kMagic = "airlock-dlp-database 1\n";

class DatabaseCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dlp-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/cache";  // made by the first store
  }
  void TearDown() override { fs::remove_all(root_); }

  // Builds the detector set for `policy` with the cache; whether its database came from it.
  bool build_from_cache(const Policy& policy = Policy::defaults()) {
    auto set = detail::DetectorSet::build(policy, dir_);
    EXPECT_TRUE(set.ok()) << (set.ok() ? "" : set.error().message);
    return set.ok() && (*set)->block_database_from_cache();
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    if (fs::exists(dir_))
      for (const auto& entry : fs::directory_iterator(dir_)) out.push_back(entry.path());
    return out;
  }
  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  }
  static void write(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  bool finds_aws_key(const Policy& policy = Policy::defaults()) const {
    auto scanner = Scanner::create(policy, BuildOptions{dir_});
    if (!scanner) return false;
    for (const auto& f : scanner->scan(kAwsKey).findings)
      if (f.detector == "aws_access_key_id") return true;
    return false;
  }

  std::string root_, dir_;
};

// A forged file for the set whose file is `own`: its key and widths, `other`'s database, and
// a digest recomputed to match.
std::string forge(const std::string& own, const std::string& other) {
  const std::size_t header = kMagic.size() + 2 * 65;
  auto widths_end = [&](const std::string& file) { return file.find('\n', header) + 1; };
  const std::string payload = own.substr(header, widths_end(own) - header) + other.substr(widths_end(other));
  return std::string(kMagic) + own.substr(kMagic.size(), 64) + "\n" + sha256_hex(payload) + "\n" + payload;
}

Policy without_aws_key() {
  Policy policy = Policy::defaults();
  policy.detectors["aws_access_key_id"].enabled = false;
  return policy;
}

TEST_F(DatabaseCacheTest, TheSecondBuildLoadsWhatTheFirstCompiled) {
  EXPECT_FALSE(build_from_cache());
  ASSERT_EQ(files().size(), 1u);
  struct stat st {};
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(build_from_cache());
  EXPECT_TRUE(finds_aws_key());
  // The same findings as a scanner that compiled its own.
  auto cached = Scanner::create(Policy::defaults(), BuildOptions{dir_});
  auto compiled = Scanner::create(Policy::defaults());
  const std::string text = "mail a.b@example.org, card 4539 1488 0343 6467, " + std::string(kAwsKey);
  EXPECT_EQ(cached->scan(text).findings, compiled->scan(text).findings);
}

TEST_F(DatabaseCacheTest, AnAlteredOrTruncatedFileIsRefusedAndReplaced) {
  ASSERT_FALSE(build_from_cache());
  const fs::path file = files().at(0);
  const std::string good = read(file);
  std::string altered = good;
  altered[altered.size() - 10] ^= 0x01;
  write(file, altered);
  EXPECT_FALSE(build_from_cache());
  EXPECT_EQ(read(file), good);  // replaced by a fresh compile
  write(file, good.substr(0, good.size() / 2));
  EXPECT_FALSE(build_from_cache());
  EXPECT_TRUE(build_from_cache());
  EXPECT_TRUE(finds_aws_key());
}

TEST_F(DatabaseCacheTest, ACacheForAnotherPatternSetIsNotUsed) {
  ASSERT_FALSE(build_from_cache());
  const std::string defaults_file = read(files().at(0));
  ASSERT_FALSE(build_from_cache(without_aws_key()));
  ASSERT_EQ(files().size(), 2u);  // one file per pattern set
  // The other set's file under this set's name: its recorded key is not this one.
  for (const auto& file : files())
    if (read(file) != defaults_file) write(file, defaults_file);
  EXPECT_FALSE(build_from_cache(without_aws_key()));
  EXPECT_TRUE(build_from_cache(without_aws_key()));
  EXPECT_TRUE(build_from_cache());
}

// Someone who rewrites the file with another set's database and a digest to match gets past
// the digest (it is not a signature: the file's owner and mode are the trust). The self-check
// still refuses a database that misses a detector of this set...
TEST_F(DatabaseCacheTest, AForgedDatabaseThatMissesADetectorFailsTheSelfCheck) {
  ASSERT_FALSE(build_from_cache(without_aws_key()));
  const std::string smaller = read(files().at(0));
  ASSERT_FALSE(build_from_cache());
  for (const auto& file : files())
    if (std::string bytes = read(file); bytes != smaller) write(file, forge(bytes, smaller));
  EXPECT_FALSE(build_from_cache());  // loaded, refused by the self-check, compiled afresh
  EXPECT_TRUE(finds_aws_key());
  EXPECT_TRUE(build_from_cache());
}

// ...and the ids a larger set's database reports for detectors this set does not have are not
// followed (no finding of a disabled detector, no crash).
TEST_F(DatabaseCacheTest, AForgedLargerDatabaseReportsNothingOutsideThisSet) {
  ASSERT_FALSE(build_from_cache());
  const std::string larger = read(files().at(0));
  ASSERT_FALSE(build_from_cache(without_aws_key()));
  for (const auto& file : files())
    if (std::string bytes = read(file); bytes != larger) write(file, forge(bytes, larger));
  EXPECT_TRUE(build_from_cache(without_aws_key()));  // it passes: every example is found
  EXPECT_FALSE(finds_aws_key(without_aws_key()));
}

// The widths are part of the entry: a file whose widths are not one per pattern is refused.
TEST_F(DatabaseCacheTest, WidthsForAnotherNumberOfPatternsAreRefused) {
  ASSERT_FALSE(build_from_cache(without_aws_key()));
  const std::string smaller = read(files().at(0));
  ASSERT_FALSE(build_from_cache());
  for (const auto& file : files()) {
    std::string bytes = read(file);
    if (bytes == smaller) continue;
    // This set's key and database with the smaller set's widths line.
    write(file, forge(smaller, bytes).replace(kMagic.size(), 64, bytes.substr(kMagic.size(), 64)));
  }
  EXPECT_FALSE(build_from_cache());
  EXPECT_TRUE(build_from_cache());
}

TEST_F(DatabaseCacheTest, AFileOrDirectoryOthersCanWriteIsNotUsed) {
  ASSERT_FALSE(build_from_cache());
  const fs::path file = files().at(0);
  ASSERT_EQ(chmod(file.c_str(), 0622), 0);
  EXPECT_FALSE(build_from_cache());  // refused, then replaced by a file of mode 0600
  EXPECT_TRUE(build_from_cache());
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  EXPECT_FALSE(build_from_cache());
  EXPECT_FALSE(build_from_cache());  // nor is one written there
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  EXPECT_TRUE(build_from_cache());
}

TEST_F(DatabaseCacheTest, NoDirectoryMeansNoCache) {
  auto set = detail::DetectorSet::build(Policy::defaults(), "");
  ASSERT_TRUE(set.ok());
  EXPECT_FALSE((*set)->block_database_from_cache());
  EXPECT_FALSE(fs::exists(dir_));
}

}  // namespace
}  // namespace airlock::dlp
