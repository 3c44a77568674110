// The approval store on both stores (SQLite, PostgreSQL): the same tests, through the
// factory the daemon uses. Two stores opened on one location stand for two replicas: a
// decision, an expiry and a resume claim race to exactly one winner between them.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "creds/sealing_key.hpp"
#include "server/approvals/approval_store.hpp"
#include "state_store_support.hpp"

namespace airlock::server {
namespace {

template <typename State>
class ApprovalStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<ApprovalStore> open() {
    auto store = ApprovalStore::open(state_.location(), key_);
    EXPECT_TRUE(store) << (store ? "" : store.error().message);
    return store ? std::move(*store) : nullptr;
  }
  static ApprovalRecord record(const std::string& id, std::uint32_t required = 1, std::int64_t expires_ms = 10'000) {
    ApprovalRecord r;
    r.id = id;
    r.invocation_id = "inv-" + id;
    r.tool = "deploy";
    r.config_version = "v1";
    r.arguments_sha256 = std::string(64, 'a');
    r.approvers_required = required;
    r.requester_principal = "agent";
    r.requested_ms = 1'000;
    r.expires_ms = expires_ms;
    r.invocation = {{"id", r.invocation_id}, {"arguments", {{"target", "prod"}, {"note", std::string(400, 'x')}}}};
    return r;
  }
  static ApprovalDecision by(const std::string& sub, const std::string& verdict = "approve") {
    return {"https://idp", sub, "", verdict, "ok", 0};
  }
  State state_;
  // Both "replicas" share one key, as replicas that run each other's approvals must.
  ApprovalStore::Key key_ = creds::SealingKey::from_bytes({1, 2, 3, 4, 5, 6, 7, 8});
};

TYPED_TEST_SUITE(ApprovalStoreTest, test::BothStores, test::StoreNames);

TYPED_TEST(ApprovalStoreTest, StoresAndListsAnApproval) {
  auto store = this->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create(this->record("a1")));
  EXPECT_FALSE(store->create(this->record("a1"))) << "an id is stored once";
  auto got = store->get("a1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->state, "pending");
  EXPECT_EQ(got->invocation["arguments"]["target"], "prod");
  EXPECT_EQ(store->by_invocation("inv-a1")->id, "a1");
  EXPECT_FALSE(store->get("nope"));
  auto pending = store->pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_TRUE(pending[0].invocation.is_null()) << "a list carries no invocation document";
  EXPECT_EQ(pending[0].arguments_preview.size(), 256u);
  EXPECT_EQ(pending[0].arguments_preview.rfind("{\"note\":\"xxx", 0), 0u) << pending[0].arguments_preview;
  EXPECT_GT(pending[0].arguments_bytes, 400);
}

TYPED_TEST(ApprovalStoreTest, DecisionsCountEachApproverOnceAndADenyEndsIt) {
  auto store = this->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create(this->record("two", 2)));
  auto first = store->decide("two", this->by("alice"), 2'000);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->state, "pending");
  auto again = store->decide("two", this->by("alice"), 2'001);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "already_decided");
  auto second = store->decide("two", this->by("bob"), 2'002);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->state, "approved");
  EXPECT_EQ(store->get("two")->decisions.size(), 2u);
  auto late = store->decide("two", this->by("carol", "deny"), 2'003);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, "not_pending");

  ASSERT_TRUE(store->create(this->record("denied", 2)));
  auto deny = store->decide("denied", this->by("alice", "deny"), 2'000);
  ASSERT_TRUE(deny);
  EXPECT_EQ(deny->state, "denied");
  auto missing = store->decide("nope", this->by("alice"), 2'000);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
}

// An approver's reason is their text, NUL bytes included: kept whole, or the decision refused
// (PostgreSQL text cannot hold a NUL), never stored cut short.
TYPED_TEST(ApprovalStoreTest, AReasonWithANulByteIsKeptWholeOrRefused) {
  auto store = this->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create(this->record("nul")));
  ApprovalDecision decision = this->by("alice");
  decision.reason = std::string("fine\0 but not this", 19);
  auto decided = store->decide("nul", decision, 2'000);
  if (decided) {
    ASSERT_EQ(store->get("nul")->decisions.size(), 1u);
    EXPECT_EQ(store->get("nul")->decisions[0].reason, decision.reason);
  } else {
    EXPECT_EQ(decided.error().code, "storage") << decided.error().message;
    EXPECT_NE(decided.error().message.find("NUL"), std::string::npos) << decided.error().message;
    EXPECT_EQ(store->get("nul")->state, "pending");
  }
}

// Its requester withdraws a pending approval (MCP's tasks/cancel): it ends "withdrawn" with
// its invocation, and neither a decision after it nor a second withdrawal changes it; one
// already decided is not withdrawn. Two stores on one location race to one winner.
TYPED_TEST(ApprovalStoreTest, AWithdrawalEndsAPendingApprovalAndNothingElse) {
  auto store = this->open();
  auto replica = this->open();
  ASSERT_TRUE(store && replica);
  ASSERT_TRUE(store->create(this->record("w1")));
  auto withdrawn = store->withdraw("w1", 3'000);
  ASSERT_TRUE(withdrawn) << withdrawn.error().message;
  EXPECT_EQ(withdrawn->state, "withdrawn");
  EXPECT_EQ(withdrawn->decided_ms, 3'000);
  EXPECT_EQ(withdrawn->invocation["id"], "inv-w1") << "the invocation comes with it, to end it";
  auto late = replica->decide("w1", this->by("alice"), 3'001);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, "not_pending");
  auto twice = replica->withdraw("w1", 3'002);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, "not_pending");
  EXPECT_EQ(store->get("w1")->state, "withdrawn");
  EXPECT_TRUE(store->pending().empty());

  ASSERT_TRUE(store->create(this->record("w2")));
  ASSERT_TRUE(store->decide("w2", this->by("alice"), 4'000));
  auto decided = replica->withdraw("w2", 4'001);
  ASSERT_FALSE(decided);
  EXPECT_EQ(decided.error().code, "not_pending");
  EXPECT_EQ(store->get("w2")->state, "approved");
  auto missing = store->withdraw("nope", 4'002);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
}

TYPED_TEST(ApprovalStoreTest, ExpiresWhatIsDueAndNothingElse) {
  auto store = this->open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create(this->record("due", 1, 5'000)));
  ASSERT_TRUE(store->create(this->record("later", 1, 50'000)));
  auto expired = store->expire_due(5'000);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].id, "due");
  EXPECT_EQ(expired[0].state, "expired");
  EXPECT_EQ(expired[0].invocation["id"], "inv-due");
  EXPECT_TRUE(store->expire_due(5'001).empty());
  auto refused = store->decide("later", this->by("alice"), 50'000);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "expired");
  EXPECT_EQ(store->get("due")->state, "expired");
}

TYPED_TEST(ApprovalStoreTest, AnApprovedOneIsClaimedOnceAcrossTwoStores) {
  auto a = this->open(), b = this->open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->create(this->record("run")));
  EXPECT_FALSE(a->claim_resume("run")) << "a pending one is not resumed";
  ASSERT_TRUE(b->decide("run", this->by("alice"), 2'000));
  ASSERT_EQ(a->approved_not_resumed().size(), 1u);
  std::atomic<int> claimed{0};
  std::vector<std::thread> claimers;
  for (int i = 0; i < 8; ++i)
    claimers.emplace_back([&, i] { claimed += (i % 2 ? a : b)->claim_resume("run") ? 1 : 0; });
  for (auto& t : claimers) t.join();
  EXPECT_EQ(claimed, 1);
  EXPECT_TRUE(a->approved_not_resumed().empty());
  EXPECT_TRUE(b->get("run")->resumed);
}

// Two replicas decide at once (different approvers, one approval needed) while a third
// thread expires it: exactly one of them ends it, the others are refused.
TYPED_TEST(ApprovalStoreTest, ConcurrentDecisionsAndExpiryEndItOneWay) {
  auto a = this->open(), b = this->open();
  ASSERT_TRUE(a && b);
  for (int round = 0; round < 10; ++round) {
    const std::string id = "race-" + std::to_string(round);
    ASSERT_TRUE(a->create(this->record(id, 1, 3'000)));
    std::atomic<int> won{0}, refused{0};
    std::atomic<bool> expired{false};
    std::thread ta([&] { a->decide(id, this->by("alice"), 2'999) ? ++won : ++refused; });
    std::thread tb([&] { b->decide(id, this->by("bob", "deny"), 2'999) ? ++won : ++refused; });
    std::thread te([&] { expired = !b->expire_due(3'000).empty(); });
    ta.join();
    tb.join();
    te.join();
    const auto final_state = a->get(id)->state;
    EXPECT_EQ(won + (expired ? 1 : 0), 1) << id << " ended " << final_state;
    EXPECT_EQ(a->get(id)->decisions.size(), static_cast<std::size_t>(won.load())) << id;
    EXPECT_NE(final_state, "pending");
  }
}

// Issue #33: a kept user token opens for the store that sealed it, and is gone once the
// approval is denied, expired, or resumed (read once, then forgotten); the sweeper's pass
// deletes any left on an ended row.
TYPED_TEST(ApprovalStoreTest, AKeptUserTokenLastsOnlyWhileTheApprovalCanStillRun) {
  auto store = this->open();
  ASSERT_TRUE(store);
  for (const char* id : {"deny", "expire", "run", "left"}) {
    auto r = this->record(id, 1, std::string(id) == "expire" ? 5'000 : 50'000);
    r.user_token = std::string("eyJ.user-token-of.") + id;
    ASSERT_TRUE(store->create(r));
    EXPECT_EQ(store->get(id)->user_token, r.user_token);
  }
  EXPECT_TRUE(store->pending()[0].user_token.empty()) << "a list carries no token";
  ASSERT_TRUE(store->decide("deny", this->by("alice", "deny"), 2'000));
  EXPECT_EQ(store->get("deny")->user_token, "");
  ASSERT_EQ(store->expire_due(5'000).size(), 1u);
  EXPECT_EQ(store->get("expire")->user_token, "");
  ASSERT_TRUE(store->decide("run", this->by("alice"), 2'000));
  EXPECT_EQ(store->get("run")->user_token, "eyJ.user-token-of.run") << "approved, not run yet: kept";
  ASSERT_TRUE(store->claim_resume("run"));
  ASSERT_TRUE(store->forget_user_token("run"));
  EXPECT_EQ(store->get("run")->user_token, "");
  // A claim whose forget never came (the daemon stopped between them): the sweeper's pass.
  ASSERT_TRUE(store->decide("left", this->by("alice"), 2'000));
  ASSERT_TRUE(store->claim_resume("left"));
  EXPECT_EQ(store->forget_spent_user_tokens(), 1u);
  EXPECT_EQ(store->get("left")->user_token, "");
}

// What another key sealed does not open, and says so: a replica given another key file.
TYPED_TEST(ApprovalStoreTest, AStoreWithAnotherKeyOpensNothingAndSaysWhy) {
  auto store = this->open();
  ASSERT_TRUE(store);
  auto r = this->record("sealed");
  r.user_token = "eyJ.token";
  ASSERT_TRUE(store->create(r));
  auto other = ApprovalStore::open(this->state_.location(), creds::SealingKey::from_bytes({42}));
  ASSERT_TRUE(other) << other.error().message;
  auto seen = (*other)->get("sealed");
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->sealed_error, "sealed_other_key") << seen->sealed_error_message;
  EXPECT_TRUE(seen->invocation.is_null());
  EXPECT_EQ(seen->user_token, "");
  EXPECT_EQ(seen->arguments_preview, "");
  EXPECT_EQ(seen->arguments_sha256, r.arguments_sha256) << "what is not sealed reads as ever";
}

}  // namespace
}  // namespace airlock::server
