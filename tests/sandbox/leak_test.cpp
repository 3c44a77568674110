// "Leaves nothing behind": 1,000 sandboxes of a hostile mix, then the host must look exactly
// as before — cgroups, mounts, temp dir, our descriptors and our children.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sandbox/sandbox.hpp"
#include "test_support.hpp"

namespace airlock::sandbox {
namespace {

using namespace std::chrono_literals;

Spec hostile_run(int i, const std::string& marker) {
  switch (i % 10) {
    case 0: {
      Spec s;
      s.argv = {"/bin/true"};
      return s;
    }
    case 1: {
      Spec s;
      s.argv = {"/bin/sh", "-c", "exit 3"};
      return s;
    }
    case 2: {
      Spec s = test::helper("hostile", {"forkbomb"});
      s.limits.wall_time = 150ms;
      s.limits.pids = 16;
      return s;
    }
    case 3: {
      Spec s = test::helper("hostile", {"membomb"});
      s.limits.memory_bytes = 16ULL << 20;
      return s;
    }
    case 4: {
      Spec s = test::helper("hostile", {"spin"});
      s.limits.wall_time = 100ms;
      return s;
    }
    case 5:
      return test::helper("hostile", {"daemon", marker});
    case 6: {
      Spec s = test::helper("hostile", {"flood"});
      s.kill_on_output_limit = true;
      s.limits.output_bytes = 16 << 10;
      return s;
    }
    case 7:
      return test::helper("hostile", {"mount"});
    case 8: {
      Spec s;
      s.argv = {"/no/such/program"};
      return s;
    }
    default: {
      Spec s = test::helper("hostile", {"fill", "/tmp/fill"});
      s.limits.disk_bytes = 1ULL << 20;
      return s;
    }
  }
}

TEST(LeavesNothingBehind, ThousandHostileRuns) {
  const std::string marker = "airlock-leak-marker-" + test::unique();
  // Warm up once so lazily created process-wide state (none expected) is not counted.
  (void)run(hostile_run(0, marker));
  const test::HostSnapshot before = test::snapshot_host();
  std::map<Verdict, int> verdicts;
  for (int i = 0; i < 1000; ++i) verdicts[run(hostile_run(i, marker)).verdict]++;
  const test::HostSnapshot after = test::snapshot_host();

  EXPECT_EQ(after.cgroups, before.cgroups);
  EXPECT_EQ(after.mountinfo, before.mountinfo);
  // Only what differs is printed (ctest gives the test a temp directory of its own, TMPDIR).
  std::vector<std::string> appeared, vanished;
  std::set_difference(after.temp_entries.begin(), after.temp_entries.end(), before.temp_entries.begin(),
                      before.temp_entries.end(), std::back_inserter(appeared));
  std::set_difference(before.temp_entries.begin(), before.temp_entries.end(), after.temp_entries.begin(),
                      after.temp_entries.end(), std::back_inserter(vanished));
  EXPECT_TRUE(appeared.empty()) << "left in the temp directory: " << testing::PrintToString(appeared);
  if (!vanished.empty()) std::cerr << "gone from the temp directory meanwhile (not ours): "
                                   << testing::PrintToString(vanished) << "\n";
  EXPECT_EQ(after.open_fds, before.open_fds);
  EXPECT_EQ(after.children, before.children);
  EXPECT_EQ(test::host_processes_with(marker), 0);
  // The mix really was hostile: every kind of ending happened.
  for (Verdict v : {Verdict::ok, Verdict::exit_nonzero, Verdict::timeout, Verdict::output_limit,
                    Verdict::seccomp_violation, Verdict::setup_error})
    EXPECT_GT(verdicts[v], 0) << verdict_name(v);
  for (const auto& [v, n] : verdicts) std::printf("%-18s %d\n", verdict_name(v).data(), n);
}

}  // namespace
}  // namespace airlock::sandbox
