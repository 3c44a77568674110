// Durability: SIGKILL the writer at random points during 10,000 appends, 20 times over one
// log. Every append the writer saw acknowledged must be in the log with its content, and the
// log must verify after every crash (an unsigned tail after a crash is fine; a gap is not).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <random>
#include <sstream>

#include "audit_test_support.hpp"

using namespace airlock::audit;
using namespace airlock::audit::testing;
using nlohmann::json;

namespace {

constexpr int kRounds = 20;
constexpr int kAppendsPerRound = 10'000;
constexpr int kWriterThreads = 4;

struct Ack {
  std::uint64_t index;
  long round, writer, seq;
};

// Starts the writer; returns its pid and the read end of its acknowledgement pipe.
std::pair<pid_t, int> start_writer(const std::string& log, int round) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 3);  // the ack fd survives exec; every other pipe end is close-on-exec
    std::string round_text = std::to_string(round), count = std::to_string(kAppendsPerRound),
                writers = std::to_string(kWriterThreads);
    execl(AIRLOCK_AUDIT_CRASH_WRITER, AIRLOCK_AUDIT_CRASH_WRITER, log.c_str(), round_text.c_str(),
          count.c_str(), writers.c_str(), "3", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

// Reads acknowledgements; kills the writer once `kill_after` have arrived (or after
// `kill_after_us` microseconds when that is set), then drains what it acknowledged before dying.
std::vector<Ack> run_until_killed(pid_t pid, int ack_fd, std::size_t kill_after,
                                  std::optional<long> kill_after_us, int& exit_status) {
  if (kill_after_us) {
    ::usleep(static_cast<useconds_t>(*kill_after_us));
    ::kill(pid, SIGKILL);
  }
  std::vector<Ack> acks;
  std::string buffer;
  char chunk[4096];
  bool killed = kill_after_us.has_value();
  while (true) {
    if (!killed && acks.size() >= kill_after) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    ssize_t n = ::read(ack_fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<std::size_t>(n));
    std::size_t newline;
    while ((newline = buffer.find('\n')) != std::string::npos) {
      std::istringstream line(buffer.substr(0, newline));
      buffer.erase(0, newline + 1);
      Ack ack{};
      line >> ack.index >> ack.round >> ack.writer >> ack.seq;
      acks.push_back(ack);
    }
  }
  ::close(ack_fd);
  ::waitpid(pid, &exit_status, 0);
  return acks;
}

}  // namespace

TEST(AuditCrash, EveryAcknowledgedAppendSurvivesSigkill) {
  ScratchDir dir;
  std::string path = dir.file("audit.db");
  unsigned seed = std::random_device{}();
  if (const char* fixed = std::getenv("AIRLOCK_CRASH_SEED")) seed = static_cast<unsigned>(std::atol(fixed));
  std::mt19937 random(seed);
  std::cout << "crash test seed " << seed << " (AIRLOCK_CRASH_SEED to repeat)\n";

  std::vector<Ack> all_acks;
  int killed_mid_run = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Most rounds die after a random number of acknowledgements; every fifth dies after a
    // random few milliseconds, which can land in open(), key creation or recovery.
    std::optional<long> kill_after_us;
    std::size_t kill_after = std::uniform_int_distribution<std::size_t>(1, kAppendsPerRound - 1)(random);
    if (round % 5 == 0) kill_after_us = std::uniform_int_distribution<long>(0, 30'000)(random);
    auto [pid, ack_fd] = start_writer(path, round);
    int status = 0;
    auto acks = run_until_killed(pid, ack_fd, kill_after, kill_after_us, status);
    bool died_of_sigkill = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    ASSERT_TRUE(died_of_sigkill || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "writer failed on its own: status " << status;
    killed_mid_run += died_of_sigkill && !acks.empty() && acks.size() < kAppendsPerRound;

    auto reader = LogReader::open(path);
    if (!reader) {
      // Killed before the log existed: then nothing can have been acknowledged.
      ASSERT_TRUE(acks.empty()) << reader.error().message;
      continue;
    }
    for (const Ack& ack : acks) {
      auto record = reader->record(ack.index);
      ASSERT_TRUE(record) << "acknowledged record " << ack.index << " is gone";
      auto fields = json::parse(*record);
      ASSERT_EQ(fields["round"], ack.round);
      ASSERT_EQ(fields["writer"], ack.writer);
      ASSERT_EQ(fields["seq"], ack.seq);
    }
    auto report = verify_log(*reader);
    ASSERT_TRUE(report) << report.error().message;
    ASSERT_TRUE(report->intact()) << findings_text(*report);
    ASSERT_GE(report->records, acks.size());
    all_acks.insert(all_acks.end(), acks.begin(), acks.end());
  }
  EXPECT_GE(killed_mid_run, kRounds / 2) << "too few rounds were killed mid-run to mean anything";

  // A writer that opens the crashed log recovers it and signs what is unsigned.
  {
    auto log = AuditLog::open(path);
    ASSERT_TRUE(log) << log.error().message;
    ASSERT_TRUE((*log)->close());
  }
  auto report = verify_path(path);
  EXPECT_TRUE(report.intact()) << findings_text(report);
  EXPECT_EQ(report.signed_size, report.records);
  std::cout << all_acks.size() << " acknowledged appends over " << kRounds << " crashes ("
            << killed_mid_run << " mid-run), " << report.records << " records, all present\n";
}
