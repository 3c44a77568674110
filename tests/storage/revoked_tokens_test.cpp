// Airlock's revoked token ids on both stores (SQLite, PostgreSQL). On PostgreSQL two stores on
// one database are two replicas: what one revoked, the other refuses at once; on SQLite the
// one daemon's revocations survive its restart.
#include <gtest/gtest.h>

#include "creds/revoked_tokens.hpp"
#include "state_store_support.hpp"

namespace airlock::creds {
namespace {

using std::chrono::system_clock;

template <typename State>
class RevokedTokensTest : public ::testing::Test {
 protected:
  std::unique_ptr<RevokedTokens> open() {
    auto store = RevokedTokens::open(state_.location());
    EXPECT_TRUE(store) << (store ? "" : store.error().message);
    return store ? std::move(*store) : nullptr;
  }
  State state_;
};

TYPED_TEST_SUITE(RevokedTokensTest, test::BothStores, test::StoreNames);

TYPED_TEST(RevokedTokensTest, ARevocationIsKeptUntilItsTokenExpires) {
  auto store = this->open();
  ASSERT_TRUE(store);
  EXPECT_FALSE(store->is_revoked("jti-1"));
  ASSERT_TRUE(store->revoke("jti-1", system_clock::now() + std::chrono::minutes(5)));
  ASSERT_TRUE(store->revoke("jti-1", system_clock::now() + std::chrono::minutes(10))) << "idempotent";
  EXPECT_TRUE(store->is_revoked("jti-1"));
  EXPECT_FALSE(store->is_revoked("jti-2"));
  EXPECT_FALSE(store->revoke("", system_clock::now()));
  EXPECT_EQ(store->size(), 1u);
  auto reopened = this->open();
  ASSERT_TRUE(reopened);
  EXPECT_TRUE(reopened->is_revoked("jti-1")) << "durable";
}

TEST(RevokedTokensOnPostgres, ARevocationOnOneReplicaIsRefusedOnTheOther) {
  test::PostgresState state;
  auto a = RevokedTokens::open(state.location()), b = RevokedTokens::open(state.location());
  ASSERT_TRUE(a && b);
  EXPECT_FALSE((*b)->is_revoked("shared-jti"));  // asked before: nothing cached that goes stale
  ASSERT_TRUE((*a)->revoke("shared-jti", system_clock::now() + std::chrono::minutes(5)));
  EXPECT_TRUE((*b)->is_revoked("shared-jti"));
}

TEST(RevokedTokensOnPostgres, AQuestionTheDatabaseCannotAnswerIsRevoked) {
  test::PostgresState state;
  auto store = RevokedTokens::open(state.location());
  ASSERT_TRUE(store);
  EXPECT_FALSE((*store)->is_revoked("never-revoked"));
  test::state_cluster().stop_server();
  EXPECT_TRUE((*store)->is_revoked("never-revoked")) << "fail closed while the database is away";
  ASSERT_TRUE(test::state_cluster().restart_server());
}

}  // namespace
}  // namespace airlock::creds
