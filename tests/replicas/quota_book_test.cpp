// The quota book's one suite, run against both books: in memory (one daemon) and in
// PostgreSQL (a fresh database in a throwaway cluster, the replicas' book). Real clocks and
// small windows: a test waits for a window to move, and never asserts how long that took.
// Then what only the shared book does: two books on one database (two replicas) count
// together, a dead replica's holds are released, and the database away fails closed while
// releases are kept until it is back.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "pg_support.hpp"
#include "pipeline/quotas/quota_book.hpp"
#include "policy/config.hpp"
#include "server/invocations/invocation_store_pg.hpp"
#include "pipeline/quotas/quota_book_pg.hpp"

namespace airlock::replicas_test {
namespace {

using namespace std::chrono_literals;
using pipeline::QuotaAdmission;
using pipeline::QuotaBook;
using pipeline::QuotaHold;
using pipeline::QuotaRefusal;

policy::QuotasConfig quotas(const std::string& yaml) {
  auto c = policy::parse_config("apiVersion: airlock.dev/v1\nkind: AirlockConfig\nprincipals:\n"
                                "  - {name: research-agent, apiKeySha256: " + std::string(64, 'a') +
                                    "}\n  - {name: other, apiKeySha256: " + std::string(64, 'b') + "}\n" + yaml,
                                "test.yaml", "/tmp");
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? c->quotas : policy::QuotasConfig{};
}

const QuotaRefusal* refusal(const QuotaAdmission& r) { return std::get_if<QuotaRefusal>(&r); }
bool admitted(const QuotaAdmission& r) { return std::holds_alternative<std::shared_ptr<QuotaHold>>(r); }
std::string what(const QuotaAdmission& r) {
  if (auto* e = std::get_if<Error>(&r)) return "error " + e->code + ": " + e->message;
  if (auto* q = refusal(r)) return "refused: " + q->message;
  return "admitted";
}

// Polls `done` (up to `limit`, which only keeps a broken build from hanging).
bool eventually(const std::function<bool()>& done, std::chrono::seconds limit = 20s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return done();
}

std::shared_ptr<pipeline::PostgresQuotaBook> pg_book(const std::string& url, const std::string& replica) {
  storage::pg::Database::Location location;
  location.url = url;
  auto book = pipeline::PostgresQuotaBook::open(location, replica, {});
  if (!book) throw std::runtime_error(book.error().message);
  return *book;
}

struct MemoryBook {
  static std::shared_ptr<QuotaBook> make() { return pipeline::MemoryQuotaBook::create(); }
};
struct PostgresBook {
  static std::shared_ptr<QuotaBook> make() { return pg_book(url_of(fresh_database("quotas")), "replica-a"); }
};

template <typename Kind>
class QuotaBookTest : public ::testing::Test {
 protected:
  std::shared_ptr<QuotaBook> book_ = Kind::make();
};
using Kinds = ::testing::Types<MemoryBook, PostgresBook>;
class KindNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, MemoryBook> ? "memory" : "postgres";
  }
};
TYPED_TEST_SUITE(QuotaBookTest, Kinds, KindNames);

TYPED_TEST(QuotaBookTest, ConcurrentCountsHoldsAndADestroyedHoldGivesItsPlaceBack) {
  auto& book = *this->book_;
  auto q = quotas("quotas: {default: {concurrent: 2}}\n");
  auto a = book.admit(q, "other", "");
  auto b = book.admit(q, "other", "");
  ASSERT_TRUE(admitted(a) && admitted(b)) << what(a) << " / " << what(b);
  auto c = book.admit(q, "other", "");
  ASSERT_TRUE(refusal(c)) << what(c);
  EXPECT_EQ(refusal(c)->quota, "concurrent");
  EXPECT_NE(refusal(c)->message.find("principal other has 2"), std::string::npos) << refusal(c)->message;
  EXPECT_TRUE(admitted(book.admit(q, "research-agent", "")));  // its own count
  EXPECT_EQ(book.in_flight("other"), 2u);
  a = QuotaRefusal{};  // the first call ends
  EXPECT_EQ(book.in_flight("other"), 1u);
  EXPECT_TRUE(admitted(book.admit(q, "other", "")));
}

TYPED_TEST(QuotaBookTest, TheRatesBurstIsSpentThenRefusedWithASaneRetryAfter) {
  auto& book = *this->book_;
  auto q = quotas("quotas: {default: {rate: 1/10s, burst: 2}}\n");
  EXPECT_TRUE(admitted(book.admit(q, "other", "")));
  EXPECT_TRUE(admitted(book.admit(q, "other", "")));
  auto refused = book.admit(q, "other", "");
  ASSERT_TRUE(refusal(refused)) << what(refused);
  EXPECT_EQ(refusal(refused)->quota, "rate");
  EXPECT_GE(refusal(refused)->retry_after, 1s);
  EXPECT_LE(refusal(refused)->retry_after, 10s);  // one token at 0.1/s
  EXPECT_TRUE(admitted(book.admit(q, "research-agent", "")));  // a bucket of its own
}

TYPED_TEST(QuotaBookTest, CpuSecondsRefuseAfterAChargeUntilTheWindowMoves) {
  auto& book = *this->book_;
  auto q = quotas("quotas: {principals: {research-agent: {cpuSeconds: 1/2s}}}\n");
  EXPECT_TRUE(admitted(book.admit(q, "research-agent", "")));
  book.charge_cpu(q, "research-agent", "", 1.5);
  auto refused = book.admit(q, "research-agent", "");
  ASSERT_TRUE(refusal(refused)) << what(refused);
  EXPECT_EQ(refusal(refused)->quota, "cpuSeconds");
  EXPECT_GE(refusal(refused)->retry_after, 1s);
  EXPECT_LE(refusal(refused)->retry_after, 2s);
  EXPECT_TRUE(admitted(book.admit(q, "other", "")));  // no cpuSeconds for it
  EXPECT_TRUE(eventually([&] { return admitted(book.admit(q, "research-agent", "")); }));
}

TYPED_TEST(QuotaBookTest, AUserIsCountedAcrossPrincipals) {
  auto& book = *this->book_;
  auto q = quotas("quotas: {users: {concurrent: 2}}\n");
  const std::string alice = pipeline::quota_user_key("https://idp.corp", "alice");
  auto a = book.admit(q, "research-agent", alice);
  auto b = book.admit(q, "other", alice);
  ASSERT_TRUE(admitted(a) && admitted(b)) << what(a) << " / " << what(b);
  auto c = book.admit(q, "other", alice);
  ASSERT_TRUE(refusal(c)) << what(c);
  EXPECT_NE(refusal(c)->message.find("user alice (https://idp.corp)"), std::string::npos) << refusal(c)->message;
  EXPECT_EQ(book.in_flight("", alice), 2u);
  EXPECT_EQ(book.in_flight("other"), 1u);  // the refused call holds nothing
  EXPECT_TRUE(admitted(book.admit(q, "other", pipeline::quota_user_key("https://idp.corp", "bob"))));
}

// Refused by the user's `concurrent`, a call takes no token from its principal's bucket.
TYPED_TEST(QuotaBookTest, ARefusalUsesUpNothing) {
  auto& book = *this->book_;
  auto q = quotas("quotas: {default: {rate: 1/m, burst: 2}, users: {concurrent: 1}}\n");
  const std::string alice = pipeline::quota_user_key("corp", "alice"), bob = pipeline::quota_user_key("corp", "bob");
  auto held = book.admit(q, "other", alice);
  ASSERT_TRUE(admitted(held)) << what(held);
  for (int i = 0; i < 3; ++i) {
    auto r = book.admit(q, "research-agent", alice);
    ASSERT_TRUE(refusal(r) && refusal(r)->quota == "concurrent") << what(r);
  }
  EXPECT_TRUE(admitted(book.admit(q, "research-agent", bob)));  // its burst of 2 is whole
  EXPECT_TRUE(admitted(book.admit(q, "research-agent", bob)));
  auto third = book.admit(q, "research-agent", bob);
  ASSERT_TRUE(refusal(third)) << what(third);
  EXPECT_EQ(refusal(third)->quota, "rate");
}

// Two replicas' books on one database: one principal's places, bucket and CPU together.
TEST(PostgresQuotaBook, TwoReplicasBooksCountTogether) {
  const std::string url = url_of(fresh_database("quotas"));
  auto a = pg_book(url, "replica-a"), b = pg_book(url, "replica-b");
  auto q = quotas("quotas: {default: {concurrent: 2, rate: 1/m, burst: 3, cpuSeconds: 1/m}}\n");
  auto on_a = a->admit(q, "other", ""), on_b = b->admit(q, "other", "");
  ASSERT_TRUE(admitted(on_a) && admitted(on_b)) << what(on_a) << " / " << what(on_b);
  auto third = a->admit(q, "other", "");
  ASSERT_TRUE(refusal(third) && refusal(third)->quota == "concurrent") << what(third);
  on_b = QuotaRefusal{};
  auto again = a->admit(q, "other", "");  // B's place given back; the bucket's last token
  ASSERT_TRUE(admitted(again)) << what(again);
  on_a = QuotaRefusal{};
  auto rate = b->admit(q, "other", "");
  ASSERT_TRUE(refusal(rate) && refusal(rate)->quota == "rate") << what(rate);
  b->charge_cpu(q, "research-agent", "", 2);
  auto cpu = a->admit(q, "research-agent", "");
  ASSERT_TRUE(refusal(cpu) && refusal(cpu)->quota == "cpuSeconds") << what(cpu);
}

// A's replica row is gone (failover removed it): its holds are released, B's stay.
TEST(PostgresQuotaBook, ADeadReplicasHoldsAreReleased) {
  const std::string database = fresh_database("quotas"), url = url_of(database);
  storage::pg::Database::Location location;
  location.url = url;
  auto store = server::PostgresInvocationStore::open(location, "replica-b");  // the replicas table
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE(cluster().exec("INSERT INTO replicas VALUES ('replica-b', 'h', 1, now(), now())",
                             database));
  auto a = pg_book(url, "replica-a"), b = pg_book(url, "replica-b");
  auto q = quotas("quotas: {default: {concurrent: 2}}\n");
  auto on_a = a->admit(q, "other", ""), on_b = b->admit(q, "other", "");
  ASSERT_TRUE(admitted(on_a) && admitted(on_b));
  ASSERT_TRUE(refusal(b->admit(q, "other", "")));
  auto released = b->release_dead_replicas();
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(*released, 1);
  EXPECT_EQ(b->in_flight("other"), 1u);
  EXPECT_TRUE(admitted(b->admit(q, "other", "")));
}

// The database away: an admission fails with storage_unavailable (never admitted); a release
// and a CPU charge are kept and written once it is back: the place is free again, the CPU
// counts.
TEST(PostgresQuotaBook, TheDatabaseAwayFailsClosedAndKeepsReleasesAndCharges) {
  auto book = pg_book(url_of(fresh_database("quotas")), "replica-a");
  auto q = quotas("quotas: {default: {concurrent: 1}, principals: {research-agent: {cpuSeconds: 1/m}}}\n");
  auto held = book->admit(q, "other", "");
  ASSERT_TRUE(admitted(held)) << what(held);
  cluster().stop_server();
  auto away = book->admit(q, "research-agent", "");
  ASSERT_TRUE(std::holds_alternative<Error>(away)) << what(away);
  EXPECT_EQ(std::get<Error>(away).code, "storage_unavailable");
  EXPECT_NE(std::get<Error>(away).message.find("the quota store"), std::string::npos) << what(away);
  held = QuotaRefusal{};  // the call ends while the database is away
  book->charge_cpu(q, "research-agent", "", 2);
  ASSERT_TRUE(cluster().restart_server());
  EXPECT_TRUE(eventually([&] { return admitted(book->admit(q, "other", "")); })) << "the release was lost";
  auto cpu = book->admit(q, "research-agent", "");
  ASSERT_TRUE(refusal(cpu)) << "the charge was lost: " << what(cpu);
  EXPECT_EQ(refusal(cpu)->quota, "cpuSeconds");
}

// Two replicas' books, 8 threads each, admitting one principal and user at once (each hold
// kept a moment): `concurrent` is never exceeded across them, and no admission fails (the
// rows are locked in one order: no deadlock). With a count read in the lock's own statement
// (its snapshot older than the lock) or a book per replica, more than 3 would be seen.
TEST(PostgresQuotaBook, AdmissionsRacingOnTwoReplicasNeverExceedConcurrent) {
  const std::string url = url_of(fresh_database("quotas"));
  std::shared_ptr<QuotaBook> books[2] = {pg_book(url, "replica-a"), pg_book(url, "replica-b")};
  auto q = quotas("quotas: {default: {concurrent: 3}, users: {concurrent: 3}}\n");
  const std::string alice = pipeline::quota_user_key("corp", "alice");
  std::atomic<int> live{0}, most{0}, admissions{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto r = books[t % 2]->admit(q, "other", alice);
        if (std::holds_alternative<Error>(r)) ++failures;
        if (!admitted(r)) continue;
        ++admissions;
        const int now = ++live;
        for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {}
        std::this_thread::sleep_for(2ms);
        --live;  // before the release: never counted after its place is given back
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(admissions.load(), 0);
  EXPECT_LE(most.load(), 3) << "more calls held places at once than `concurrent` allows";
  EXPECT_EQ(books[0]->in_flight("other"), 0u);
}

}  // namespace
}  // namespace airlock::replicas_test
