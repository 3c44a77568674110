// The audit log shared by several writer processes through PostgreSQL: real processes (fork)
// appending at once, one killed mid-append, and the database stopped under a writer.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "../unit/audit_test_support.hpp"
#include "audit/merkle.hpp"
#include "audit_pg_support.hpp"

namespace airlock::audit::testing {
namespace {

using namespace std::chrono_literals;

// Each acknowledged append of a writer process, one line "<index> <leaf hash hex>", written
// with one write(2) after append() returned (O_APPEND: lines from its threads do not mix).
struct Receipt {
  std::uint64_t index;
  std::string leaf;
};

std::vector<Receipt> read_receipts(const std::string& file) {
  std::ifstream in(file);
  std::vector<Receipt> out;
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line without its newline: the writer died writing it
    std::istringstream fields(line);
    Receipt r;
    if (fields >> r.index >> r.leaf) out.push_back(r);
  }
  return out;
}

// A writer process: `threads` threads, each appending `per_thread` records (0: until killed).
// Exits 0 when every append succeeded.
pid_t start_writer(const LogLocation& location, const std::string& receipts, int threads,
                   int per_thread, int writer_id) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  int fd = ::open(receipts.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  AuditLogOptions options;
  options.checkpoint_every_records = 100;
  auto log = AuditLog::open(location, options);
  if (fd < 0 || !log) ::_exit(2);
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; per_thread == 0 || i < per_thread; ++i) {
        auto receipt = (*log)->append(sample_fields(
            static_cast<std::uint64_t>(writer_id * 1'000'000 + t * 100'000 + i)));
        if (!receipt) {
          failed = true;
          return;
        }
        std::string line = std::to_string(receipt->index) + " " + to_hex(receipt->leaf_hash) + "\n";
        if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) failed = true;
      }
    });
  for (auto& w : workers) w.join();
  bool closed = static_cast<bool>((*log)->close());
  ::_exit(failed || !closed ? 1 : 0);  // never exit(): it would stop the shared cluster
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Every receipt names a record that is in the log with exactly that leaf hash, and no index
// was acknowledged twice.
void expect_receipts_in_log(const LogLocation& location, const std::vector<Receipt>& receipts) {
  auto reader = LogReader::open(location);
  ASSERT_TRUE(reader) << reader.error().message;
  std::map<std::uint64_t, std::string> seen;
  for (const auto& r : receipts) {
    EXPECT_TRUE(seen.emplace(r.index, r.leaf).second) << "index " << r.index << " acknowledged twice";
    auto record = reader->record(r.index);
    ASSERT_TRUE(record) << "acknowledged record " << r.index << " is not in the log";
    EXPECT_EQ(to_hex(leaf_hash(as_bytes(*record))), r.leaf) << "record " << r.index;
  }
}

VerifyReport verify(const LogLocation& location) {
  auto reader = LogReader::open(location);
  if (!reader) throw std::runtime_error(reader.error().message);
  auto report = verify_log(*reader);
  if (!report) throw std::runtime_error(report.error().message);
  return std::move(*report);
}

class PostgresAudit : public ::testing::Test {
 protected:
  ScratchDir dir_;
  LogLocation location_ = fresh_postgres_log(dir_.file("shared.key"));
};

// Two processes, four threads each, appending at once: indices 0..N-1, each exactly once.
TEST_F(PostgresAudit, TwoProcessesOfFourThreadsShareOneGapFreeLog) {
  constexpr int kPerThread = 150;
  // The key exists before the writers start, as the one file every replica is given.
  ASSERT_TRUE(SigningKey::load_or_create(location_.key_file));
  pid_t a = start_writer(location_, dir_.file("a.receipts"), 4, kPerThread, 1);
  pid_t b = start_writer(location_, dir_.file("b.receipts"), 4, kPerThread, 2);
  EXPECT_EQ(wait_exit_code(a), 0);
  EXPECT_EQ(wait_exit_code(b), 0);
  auto receipts = read_receipts(dir_.file("a.receipts"));
  auto from_b = read_receipts(dir_.file("b.receipts"));
  receipts.insert(receipts.end(), from_b.begin(), from_b.end());
  ASSERT_EQ(receipts.size(), 2u * 4 * kPerThread);
  std::set<std::uint64_t> indices;
  for (const auto& r : receipts) indices.insert(r.index);
  EXPECT_EQ(indices.size(), receipts.size()) << "an index was handed out twice";
  EXPECT_EQ(*indices.rbegin(), receipts.size() - 1) << "an index was skipped";
  expect_receipts_in_log(location_, receipts);
  VerifyReport report = verify(location_);
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.records, receipts.size());
  EXPECT_EQ(report.signed_size, receipts.size());  // both closed: the last checkpoint covers all
}

// A writer killed in the middle of its appends (a transaction open, or committing): the other
// writer goes on, nothing acknowledged is lost, and no index is skipped.
TEST_F(PostgresAudit, AWriterKilledMidAppendLeavesNoGap) {
  ASSERT_TRUE(SigningKey::load_or_create(location_.key_file));
  const std::string killed_file = dir_.file("killed.receipts");
  pid_t killed = start_writer(location_, killed_file, 4, 0, 1);
  pid_t survivor = start_writer(location_, dir_.file("survivor.receipts"), 4, 200, 2);
  for (auto deadline = std::chrono::steady_clock::now() + 60s;
       read_receipts(killed_file).size() < 300 && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(5ms);
  ASSERT_EQ(::kill(killed, SIGKILL), 0);
  EXPECT_EQ(wait_exit_code(killed), 128 + SIGKILL);
  EXPECT_EQ(wait_exit_code(survivor), 0);

  // A writer that starts after the crash appends right after the last committed record.
  auto log = AuditLog::open(location_);
  ASSERT_TRUE(log) << log.error().message;
  auto after = (*log)->append(sample_fields(7));
  ASSERT_TRUE(after) << after.error().message;
  ASSERT_TRUE((*log)->close());

  auto receipts = read_receipts(killed_file);
  EXPECT_GE(receipts.size(), 300u);
  auto survived = read_receipts(dir_.file("survivor.receipts"));
  EXPECT_EQ(survived.size(), 800u);
  receipts.insert(receipts.end(), survived.begin(), survived.end());
  expect_receipts_in_log(location_, receipts);
  VerifyReport report = verify(location_);
  EXPECT_TRUE(report.intact()) << findings_text(report);  // a gap would be "missing"
  EXPECT_EQ(report.records, after->index + 1);
  EXPECT_GE(report.records, receipts.size() + 1);
}

// The database stopped under a running writer: appends fail with storage_unavailable (no
// receipt: the caller must not run the call unaudited), and work again once it is back.
TEST_F(PostgresAudit, DatabaseDownFailsClosedAndRecoversAfterRestart) {
  auto log = AuditLog::open(location_);
  ASSERT_TRUE(log) << log.error().message;
  auto before = (*log)->append(sample_fields(1));
  ASSERT_TRUE(before) << before.error().message;

  cluster().stop_server();
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto refused = (*log)->append(sample_fields(2));
    ASSERT_FALSE(refused) << "a receipt while the database is down";
    EXPECT_EQ(refused.error().code, "storage_unavailable") << refused.error().message;
  }
  auto restarted = cluster().restart_server();
  ASSERT_TRUE(restarted) << restarted.error().message;

  // Reconnection is tried at most once a second: retry until then (not a timing assertion).
  Result<AppendReceipt> after = Error::make("none", "not tried");
  for (auto deadline = std::chrono::steady_clock::now() + 30s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(100ms)) {
    after = (*log)->append(sample_fields(3));
    if (after) break;
    EXPECT_EQ(after.error().code, "storage_unavailable") << after.error().message;
  }
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->index, before->index + 1) << "the failed appends took indices";
  ASSERT_TRUE((*log)->close());
  VerifyReport report = verify(location_);
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.records, 2u);
}

// A URL that reaches no server: open fails with storage_unavailable, and the password in the
// URL is not in the message.
TEST_F(PostgresAudit, UnreachableServerIsATypedErrorWithoutThePassword) {
  LogLocation nowhere = location_;
  nowhere.postgres_url = "postgresql://" + kLogRole + ":" + kLogPassword + "@127.0.0.1:1/x";
  auto log = AuditLog::open(nowhere);
  ASSERT_FALSE(log);
  EXPECT_EQ(log.error().code, "storage_unavailable");
  EXPECT_EQ(log.error().message.find(kLogPassword), std::string::npos) << log.error().message;
}

// A writer without the shared key file is refused: it could not sign what the others verify.
TEST_F(PostgresAudit, AKeyFileIsRequired) {
  LogLocation keyless = location_;
  keyless.key_file.clear();
  auto log = AuditLog::open(keyless);
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().message.find("signingKeyFile"), std::string::npos) << log.error().message;
}

// A password given in a file, not the URL.
TEST_F(PostgresAudit, PasswordFromAFile) {
  LogLocation from_file = location_;
  from_file.postgres_url = cluster().url(kLogRole, "", database_of(location_));
  const std::string password_file = dir_.file("password");
  std::ofstream(password_file) << kLogPassword << "\n";
  from_file.postgres_password_file = password_file;
  auto log = AuditLog::open(from_file);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_TRUE((*log)->append(sample_fields(0)));
}

}  // namespace
}  // namespace airlock::audit::testing
