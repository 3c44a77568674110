// The MCP tool pin store on both stores (SQLite, PostgreSQL): the same tests. Two stores on
// one location stand for the daemon and `airlock mcp pins` (or two replicas).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "mcp/pin_store.hpp"
#include "state_store_support.hpp"

namespace airlock::mcp {
namespace {

const std::string kA(64, 'a'), kB(64, 'b'), kC(64, 'c');

template <typename State>
class PinStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<PinStore> open() {
    auto store = PinStore::open(state_.location());
    EXPECT_TRUE(store) << (store ? "" : store.error().message);
    return store ? std::move(*store) : nullptr;
  }
  State state_;
};

TYPED_TEST_SUITE(PinStoreTest, test::BothStores, test::StoreNames);

TYPED_TEST(PinStoreTest, PinsOnceAndKeepsTheFirstSightingOfAChange) {
  auto store = this->open();
  ASSERT_TRUE(store);
  EXPECT_TRUE(*store->pin_if_new("files", "read", kA));
  EXPECT_FALSE(*store->pin_if_new("files", "read", kB));
  EXPECT_EQ(store->get("files", "read")->sha256, kA);
  EXPECT_FALSE(store->get("files", "other"));
  auto unpinned = store->record_pending("files", "other", kB, {{"name", "other"}});
  ASSERT_FALSE(unpinned);
  EXPECT_EQ(unpinned.error().code, "not_found");
  ASSERT_TRUE(store->record_pending("files", "read", kB, {{"name", "read"}, {"description", "new"}}));
  const auto since = store->get("files", "read")->pending_since;
  ASSERT_TRUE(store->record_pending("files", "read", kB, {{"name", "read"}, {"description", "new"}}));
  auto pin = store->get("files", "read");
  EXPECT_EQ(pin->pending_sha256, kB);
  EXPECT_EQ(pin->pending_since, since);
  EXPECT_EQ(pin->pending["description"], "new");
  EXPECT_EQ(pin->sha256, kA) << "a change is not the pin until approved";
}

TYPED_TEST(PinStoreTest, ApprovesOnlyThePendingListingTheAdminSaw) {
  auto daemon = this->open(), cli = this->open();
  ASSERT_TRUE(daemon && cli);
  ASSERT_TRUE(*daemon->pin_if_new("files", "read", kA));
  auto nothing = cli->approve("files", "read", "");
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().code, "not_pending");
  auto unknown = cli->approve("files", "nope", "");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, "not_found");
  ASSERT_TRUE(daemon->record_pending("files", "read", kB, {{"name", "read"}}));
  auto wrong = cli->approve("files", "read", kC);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, "pin_mismatch");
  EXPECT_EQ(daemon->get("files", "read")->sha256, kA);
  ASSERT_TRUE(cli->approve("files", "read", kB));
  auto pin = daemon->get("files", "read");
  EXPECT_EQ(pin->sha256, kB) << "the daemon sees what the CLI approved";
  EXPECT_TRUE(pin->pending_sha256.empty());
  ASSERT_EQ(cli->list().size(), 1u);
}

TYPED_TEST(PinStoreTest, TwoConcurrentApprovalsApproveOnce) {
  auto a = this->open(), b = this->open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(*a->pin_if_new("files", "read", kA));
  ASSERT_TRUE(a->record_pending("files", "read", kB, {{"name", "read"}}));
  std::atomic<int> approved{0};
  std::thread ta([&] { approved += a->approve("files", "read", kB) ? 1 : 0; });
  std::thread tb([&] { approved += b->approve("files", "read", kB) ? 1 : 0; });
  ta.join();
  tb.join();
  EXPECT_EQ(approved, 1);
  EXPECT_EQ(b->get("files", "read")->sha256, kB);
}

}  // namespace
}  // namespace airlock::mcp
