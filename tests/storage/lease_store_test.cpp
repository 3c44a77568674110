// The credential lease store on both stores (SQLite, PostgreSQL): the same tests. Two stores
// on one location stand for two replicas: what one leased, the other finds to revoke.
#include <gtest/gtest.h>

#include "creds/lease_store.hpp"
#include "state_store_support.hpp"

namespace airlock::creds {
namespace {

template <typename State>
class LeaseStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaseStore> open() {
    auto store = LeaseStore::open(state_.location());
    EXPECT_TRUE(store) << (store ? "" : store.error().message);
    return store ? std::move(*store) : nullptr;
  }
  static Lease lease(const std::string& invocation, int second) {
    Lease l;
    l.id = *new_lease_id();
    l.invocation_id = invocation;
    l.tool = "report";
    l.env = "DB_URL";
    l.provider = "postgres";
    l.issued_at = Clock::time_point(std::chrono::seconds(1'700'000'000 + second));
    l.expires_at = l.issued_at + std::chrono::seconds(60);
    l.target = {{"server", "analytics"}, {"role", "airlock_x"}};
    return l;
  }
  State state_;
};

TYPED_TEST_SUITE(LeaseStoreTest, test::BothStores, test::StoreNames);

TYPED_TEST(LeaseStoreTest, KeepsWhatRevocationNeeds) {
  auto store = this->open();
  ASSERT_TRUE(store);
  Lease l = this->lease("inv-1", 1);
  ASSERT_TRUE(store->add(l));
  EXPECT_FALSE(store->add(l)) << "a lease id is stored once";
  l.state = Lease::State::active;
  l.scopes = {"SELECT on sales"};
  ASSERT_TRUE(store->update(l));
  auto of = store->of_invocation("inv-1");
  ASSERT_TRUE(of);
  ASSERT_EQ(of->size(), 1u);
  EXPECT_EQ((*of)[0].id, l.id);
  EXPECT_EQ((*of)[0].state, Lease::State::active);
  EXPECT_EQ((*of)[0].scopes, std::vector<std::string>{"SELECT on sales"});
  EXPECT_EQ((*of)[0].target["role"], "airlock_x");
  EXPECT_EQ((*of)[0].issued_at, l.issued_at);
  EXPECT_EQ((*of)[0].expires_at, l.expires_at);
  Lease unknown = this->lease("inv-1", 2);
  auto missing = store->update(unknown);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no lease"), std::string::npos);
}

TYPED_TEST(LeaseStoreTest, OneReplicaFindsWhatTheOtherLeased) {
  auto a = this->open(), b = this->open();
  ASSERT_TRUE(a && b);
  Lease first = this->lease("inv-a", 1), second = this->lease("inv-a", 2), other = this->lease("inv-b", 3);
  ASSERT_TRUE(a->add(second));
  ASSERT_TRUE(a->add(first));
  ASSERT_TRUE(a->add(other));
  auto outstanding = b->outstanding();
  ASSERT_TRUE(outstanding);
  ASSERT_EQ(outstanding->size(), 3u);
  EXPECT_EQ((*outstanding)[0].id, first.id) << "oldest first";
  auto of = b->of_invocation("inv-a");
  ASSERT_TRUE(of);
  EXPECT_EQ(of->size(), 2u);
  other.state = Lease::State::revoked;
  ASSERT_TRUE(b->update(other));
  outstanding = a->outstanding();
  ASSERT_TRUE(outstanding);
  EXPECT_EQ(outstanding->size(), 2u) << "a revoked lease is not outstanding";
  EXPECT_TRUE(a->of_invocation("inv-none")->empty());
}

}  // namespace
}  // namespace airlock::creds
