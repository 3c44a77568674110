// The fair queue (server/core/executor.hpp): lanes are taken in turn by weight, intake before any
// lane, and an admitted job is never refused. One worker, so the order is exact.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/core/executor.hpp"

namespace airlock::server {
namespace {

// Holds the only worker until released, so that jobs pile up behind it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

class Order {
 public:
  std::function<void()> job(std::string name) {
    return [this, name] {
      std::lock_guard lock(mu_);
      seen_.push_back(name);
    };
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> seen_;
};

TEST(FairQueue, LanesAreServedInTurnNotInArrivalOrder) {
  InvocationExecutor executor(1, 0);
  Gate gate;
  Order order;
  executor.submit_to_lane("hold", 1, [&] { gate.wait(); });
  while (executor.running() == 0) std::this_thread::yield();
  for (int i = 0; i < 5; ++i) executor.submit_to_lane("flood", 1, order.job("f" + std::to_string(i)));
  executor.submit_to_lane("victim", 1, order.job("v0"));
  executor.submit_to_lane("victim", 1, order.job("v1"));
  gate.release();
  ASSERT_TRUE(executor.drain(std::chrono::seconds(10)));
  EXPECT_EQ(order.seen(), (std::vector<std::string>{"f0", "v0", "f1", "v1", "f2", "f3", "f4"}));
}

TEST(FairQueue, AWeightTakesThatManyJobsPerTurn) {
  InvocationExecutor executor(1, 0);
  Gate gate;
  Order order;
  executor.submit_to_lane("hold", 1, [&] { gate.wait(); });
  while (executor.running() == 0) std::this_thread::yield();
  for (int i = 0; i < 4; ++i) executor.submit_to_lane("heavy", 3, order.job("h" + std::to_string(i)));
  for (int i = 0; i < 2; ++i) executor.submit_to_lane("light", 1, order.job("l" + std::to_string(i)));
  gate.release();
  ASSERT_TRUE(executor.drain(std::chrono::seconds(10)));
  EXPECT_EQ(order.seen(), (std::vector<std::string>{"h0", "h1", "h2", "l0", "h3", "l1"}));
}

TEST(FairQueue, IntakeIsBoundedAndRunsWhileEveryWorkerIsBusy) {
  InvocationExecutor executor(1, 1);  // intake holds workers + queueLength = 2
  Gate gate;
  executor.submit_to_lane("hold", 1, [&] { gate.wait(); });
  while (executor.running() == 0) std::this_thread::yield();
  // The only worker is held: intake still runs, on its own thread.
  std::mutex mu;
  std::condition_variable cv;
  bool admitted = false;
  ASSERT_TRUE(executor.submit([&] {
    std::lock_guard lock(mu);
    admitted = true;
    cv.notify_all();
  }));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return admitted; }));
  }
  // Intake held too: two wait, the third is refused; lanes are never refused.
  Gate intake_gate;
  ASSERT_TRUE(executor.submit([&] { intake_gate.wait(); }));
  while (executor.queued() != 0) std::this_thread::yield();
  EXPECT_TRUE(executor.submit([] {}));
  EXPECT_TRUE(executor.submit([] {}));
  EXPECT_FALSE(executor.submit([] {}));
  executor.submit_to_lane("any", 1, [] {});
  intake_gate.release();
  gate.release();
  EXPECT_TRUE(executor.drain(std::chrono::seconds(10)));
  EXPECT_FALSE(executor.submit([] {}));  // draining
}

// A lane job still waiting at its deadline leaves its lane and its `expired` runs then, while
// the only worker is still busy (the caller hears at the deadline, not when a worker frees
// up); a job taken in time never runs `expired`; the lane's other jobs keep their turn.
TEST(FairQueue, AJobStillWaitingAtItsDeadlineExpiresWhileEveryWorkerIsBusy) {
  InvocationExecutor executor(1, 0);
  Gate gate;
  Order order;
  executor.submit_to_lane("hold", 1, [&] { gate.wait(); });
  while (executor.running() == 0) std::this_thread::yield();
  const auto now = std::chrono::steady_clock::now();
  executor.submit_to_lane("flood", 1, order.job("f0"), {now + std::chrono::hours(1), order.job("f0 expired")});
  executor.submit_to_lane("flood", 1, order.job("f1"), {now + std::chrono::milliseconds(50), order.job("f1 expired")});
  executor.submit_to_lane("victim", 1, order.job("v0"), {now + std::chrono::milliseconds(100), order.job("v0 expired")});
  executor.submit_to_lane("victim", 1, order.job("v1"));  // no deadline: waits for a worker
  // The worker is still held: only the expiries can have run.
  for (int i = 0; i < 2000 && order.seen().size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(order.seen(), (std::vector<std::string>{"f1 expired", "v0 expired"}));
  EXPECT_EQ(executor.queued(), 2u);
  gate.release();
  ASSERT_TRUE(executor.drain(std::chrono::seconds(10)));
  EXPECT_EQ(order.seen(), (std::vector<std::string>{"f1 expired", "v0 expired", "f0", "v1"}));
}

// Intake is shared out by caller: when it is full, a caller holding fewer requests takes the
// newest place of the caller holding most (which is answered through `displaced`); a caller
// already holding as many as the others but one is refused. Callers are served in turn.
TEST(FairQueue, AFloodFillsOnlyItsOwnShareOfTheIntake) {
  InvocationExecutor executor(1, 3);  // intake holds workers + queueLength = 4
  Gate gate, intake_gate;
  Order order;
  executor.submit_to_lane("hold", 1, [&] { gate.wait(); });
  while (executor.running() == 0) std::this_thread::yield();
  ASSERT_TRUE(executor.submit("hold", [&] { intake_gate.wait(); }, nullptr));
  while (executor.queued() != 0) std::this_thread::yield();  // both threads held
  std::vector<std::string> displaced;
  auto flood = [&](int i) {
    return executor.submit("flood", order.job("f" + std::to_string(i)),
                           [&, i] { displaced.push_back("f" + std::to_string(i)); });
  };
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(flood(i));
  EXPECT_FALSE(flood(4));  // full, and the flood holds most
  EXPECT_TRUE(executor.submit("victim", order.job("v0"), [&] { displaced.push_back("v0"); }));
  EXPECT_EQ(displaced, (std::vector<std::string>{"f3"}));
  EXPECT_TRUE(executor.submit("other", order.job("o0"), [&] { displaced.push_back("o0"); }));
  EXPECT_EQ(displaced, (std::vector<std::string>{"f3", "f2"}));
  // flood 2, victim 1, other 1: the victim would hold 2 against the flood's 2: refused.
  EXPECT_FALSE(executor.submit("victim", order.job("v1"), nullptr));
  // Only the intake thread is let go, so the order seen is the order served (with the worker
  // free too, two threads would take intake and could finish out of turn).
  intake_gate.release();
  for (int i = 0; i < 2000 && order.seen().size() < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  gate.release();
  ASSERT_TRUE(executor.drain(std::chrono::seconds(10)));
  EXPECT_EQ(order.seen(), (std::vector<std::string>{"f0", "v0", "o0", "f1"}));
}

// Unverified callers (credentials not yet authenticated) hold at most half the intake, each a
// caller of its own: a fifth, sixth... forged credential is refused while the verified
// callers still find the other half; among themselves, the unverified displace the largest.
TEST(FairQueue, UnverifiedCallersHoldAtMostHalfTheIntake) {
  InvocationExecutor executor(1, 3);  // intake 4, the unverified at most 2
  Gate gate, intake_gate;
  executor.submit_to_lane("hold", 1, [&] { gate.wait(); });
  while (executor.running() == 0) std::this_thread::yield();
  ASSERT_TRUE(executor.submit("hold", [&] { intake_gate.wait(); }, nullptr));
  while (executor.queued() != 0) std::this_thread::yield();  // both threads held
  std::vector<std::string> displaced;
  auto unverified = [&](const std::string& key, const std::string& name) {
    return executor.submit(IntakeCaller{key, false}, [] {}, [&, name] { displaced.push_back(name); });
  };
  EXPECT_TRUE(unverified("forged-a", "a0"));
  EXPECT_TRUE(unverified("forged-a", "a1"));
  EXPECT_TRUE(unverified("forged-b", "b0"));  // the unverified half is full: a's newest goes
  EXPECT_EQ(displaced, (std::vector<std::string>{"a1"}));
  EXPECT_FALSE(unverified("forged-c", "c0")) << "a and b hold one each: none holds two more";
  EXPECT_EQ(executor.queued(), 2u);
  EXPECT_TRUE(executor.submit("agent", [] {}, nullptr));  // the verified half is free
  EXPECT_TRUE(executor.submit("other", [] {}, nullptr));
  EXPECT_EQ(executor.queued(), 4u);
  EXPECT_EQ(displaced.size(), 1u);
  intake_gate.release();
  gate.release();
  ASSERT_TRUE(executor.drain(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace airlock::server
