// The invocation store's one suite, run against both implementations: SQLite (a state.db in
// a temp directory) and PostgreSQL (a fresh database in a throwaway cluster). Then what only
// the shared store does: orphaned rows of dead replicas, aborted exactly once, and the typed
// error while its server is down.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "pg_support.hpp"
#include "server/invocations/invocation_store.hpp"
#include "server/invocations/invocation_store_pg.hpp"

namespace airlock::replicas_test {
namespace {

namespace fs = std::filesystem;
using server::InvocationStore;
using server::PostgresInvocationStore;
using Q = InvocationStore::Query;

Q with(void (*set)(Q&)) {
  Q q;
  set(q);
  return q;
}

struct SqliteStore {
  static storage::StateLocation location() {
    static int n = 0;
    const fs::path dir = fs::temp_directory_path() / ("airlock-store-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(dir);
    fs::create_directories(dir);
    storage::StateLocation l;
    l.sqlite_path = (dir / "state.db").string();
    return l;
  }
};

struct PostgresStore {
  static storage::StateLocation location() {
    storage::StateLocation l;
    l.postgres.url = url_of(fresh_database());
    return l;
  }
};

template <typename Kind>
class InvocationStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    location_ = Kind::location();
    auto opened = InvocationStore::open(location_);
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
  }
  InvocationStore& store() { return *store_; }
  storage::StateLocation location_;
  std::unique_ptr<InvocationStore> store_;
};

using Kinds = ::testing::Types<SqliteStore, PostgresStore>;
class KindNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, SqliteStore> ? "sqlite" : "postgres";
  }
};
TYPED_TEST_SUITE(InvocationStoreTest, Kinds, KindNames);

nlohmann::json response(const std::string& id, const std::string& status, const std::string& principal,
                        const std::string& sub = "") {
  nlohmann::json j{{"id", id}, {"tool", "echo"}, {"status", status}, {"principal", principal},
                   {"verdict", "ok"}, {"output", {{"n", 1}}}};
  if (!sub.empty()) j["subject"] = {{"issuer", "corp"}, {"sub", sub}};
  if (status == "error") j["error"] = {{"kind", "timeout"}, {"message", "too slow"}};
  return j;
}

TYPED_TEST(InvocationStoreTest, ARowRunsThenHoldsItsResponse) {
  ASSERT_TRUE(this->store().begin("a", "echo", {"agent", "", ""}));
  auto running = this->store().get("a");
  ASSERT_TRUE(running);
  EXPECT_EQ((*running)["status"], "running");
  EXPECT_EQ((*running)["tool"], "echo");
  ASSERT_EQ(this->store().running().size(), 1u);
  EXPECT_EQ(this->store().running()[0].id, "a");

  ASSERT_TRUE(this->store().finish("a", "ok", response("a", "ok", "agent")));
  EXPECT_EQ(*this->store().get("a"), response("a", "ok", "agent"));
  EXPECT_TRUE(this->store().running().empty());
  EXPECT_FALSE(this->store().get("nobody"));
}

TYPED_TEST(InvocationStoreTest, AnIdIsRecordedOnce) {
  ASSERT_TRUE(this->store().begin("a", "echo"));
  Status again = this->store().begin("a", "echo");
  ASSERT_FALSE(again) << "a second row with the same id";
  EXPECT_EQ(again.error().code, "storage");
}

TYPED_TEST(InvocationStoreTest, ListFiltersAndOrders) {
  auto& s = this->store();
  ASSERT_TRUE(s.begin("1", "echo", {"agent", "", ""}));
  ASSERT_TRUE(s.finish("1", "ok", response("1", "ok", "agent")));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // distinct started_ms: the order
  ASSERT_TRUE(s.begin("2", "sleep", {"other", "corp", "alice"}));
  ASSERT_TRUE(s.finish("2", "error", response("2", "error", "other", "alice")));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(s.begin("3", "echo", {"", "corp", "alice"}));
  ASSERT_TRUE(s.finish("3", "suspended", response("3", "suspended", "", "alice")));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(s.begin("4", "echo", {"agent", "", ""}));

  auto ids = [&](InvocationStore::Query q) {
    auto listed = s.list(q);
    EXPECT_TRUE(listed) << listed.error().message;
    std::vector<std::string> out;
    for (const auto& row : *listed) out.push_back(row["id"]);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids({}), (V{"4", "3", "2", "1"}));
  EXPECT_EQ(ids(with([](Q& q) { q.tool = "echo"; })), (V{"4", "3", "1"}));
  EXPECT_EQ(ids(with([](Q& q) { q.user = "alice"; })), (V{"3", "2"}));
  EXPECT_EQ(ids(with([](Q& q) { q.agent = "agent"; })), (V{"4", "1"}));
  EXPECT_EQ(ids(with([](Q& q) { q.status = "running"; })), (V{"4"}));
  EXPECT_EQ(ids(with([](Q& q) { q.status = "suspended"; })), (V{"3"}));
  EXPECT_EQ(ids(with([](Q& q) { q.owner = InvocationStore::Owner{"agent", "", ""}; })), (V{"4", "1"}));
  EXPECT_EQ(ids(with([](Q& q) { q.owner = InvocationStore::Owner{"", "corp", "alice"}; })), (V{"3", "2"})) << "a user sees the calls on its behalf";
  EXPECT_EQ(ids(with([](Q& q) { q.owner = InvocationStore::Owner{"", "elsewhere", "alice"}; })), V{});
  EXPECT_EQ(ids(with([](Q& q) { q.limit = 2; })), (V{"4", "3"}));

  auto all = s.list({});
  ASSERT_TRUE(all);
  const auto& pending = (*all)[1];
  EXPECT_EQ(pending["status"], "pending_approval");
  EXPECT_EQ(pending["subject"], (nlohmann::json{{"issuer", "corp"}, {"sub", "alice"}}));
  EXPECT_EQ(pending["actor"], nullptr);
  const auto& failed = (*all)[2];
  EXPECT_EQ(failed["error_kind"], "timeout");
  EXPECT_EQ(failed["verdict"], "ok");
  EXPECT_EQ(failed["actor"], (nlohmann::json{{"principal", "other"}}));
  EXPECT_NE(failed["finished_at"], nullptr);
  EXPECT_EQ((*all)[0]["finished_at"], nullptr) << "still running";
  EXPECT_EQ((*all)[0]["error_kind"], nullptr);

  // since/until are compared as numbers.
  EXPECT_EQ(ids(with([](Q& q) { q.since_ms = std::int64_t{0}; q.until_ms = std::int64_t{1}; })), V{});
  EXPECT_EQ(ids(with([](Q& q) { q.since_ms = std::int64_t{0}; })).size(), 4u);
}

// A row recorded as aborted names no principal: the owner the row began with stays, so the
// agent still finds it.
TYPED_TEST(InvocationStoreTest, AnAbortedRowKeepsItsOwner) {
  ASSERT_TRUE(this->store().begin("a", "echo", {"agent", "", ""}));
  ASSERT_TRUE(this->store().finish("a", "error",
                                   {{"id", "a"}, {"tool", "echo"}, {"status", "error"}, {"principal", ""},
                                    {"error", {{"kind", "aborted"}, {"message", "stopped"}}}}));
  auto mine = this->store().list(with([](Q& q) { q.owner = InvocationStore::Owner{"agent", "", ""}; }));
  ASSERT_TRUE(mine);
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ((*mine)[0]["error_kind"], "aborted");
}

// Whose a row is comes from its start: while it runs, and once resumed as "running" after its
// approval (a response that names no one), as when it is done.
TYPED_TEST(InvocationStoreTest, ARowNamesItsOwnerFromItsStart) {
  auto owner_of = [this](const std::string& id) {
    auto o = this->store().owner(id);
    return o ? o->principal + "|" + o->issuer + "|" + o->sub : std::string("none");
  };
  ASSERT_TRUE(this->store().begin("a", "echo", {"agent", "corp", "alice"}));
  EXPECT_EQ(owner_of("a"), "agent|corp|alice");
  ASSERT_TRUE(this->store().finish("a", "suspended", response("a", "suspended", "agent", "alice")));
  ASSERT_TRUE(this->store().finish("a", "running", {{"id", "a"}, {"tool", "echo"}, {"status", "running"}}));
  EXPECT_EQ(owner_of("a"), "agent|corp|alice");
  ASSERT_TRUE(this->store().finish("a", "ok", response("a", "ok", "agent", "alice")));
  EXPECT_EQ(owner_of("a"), "agent|corp|alice");
  ASSERT_TRUE(this->store().begin("b", "echo", {"", "corp", "bob"}));
  EXPECT_EQ(owner_of("b"), "|corp|bob");
  EXPECT_EQ(owner_of("nobody"), "none");
}

TYPED_TEST(InvocationStoreTest, HostileNamesAreStoredNotRefused) {
  const std::string name = std::string("tool\xff\xfe") + "'; DROP TABLE invocations; --";
  ASSERT_TRUE(this->store().begin("x", name, {"agent", "", ""}));
  auto listed = this->store().list({});
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), 1u);
  EXPECT_TRUE(this->store().get("x"));
}

// ---- PostgreSQL only ----

std::unique_ptr<PostgresInvocationStore> pg_store(const std::string& url, const std::string& replica) {
  auto opened = PostgresInvocationStore::open({url, ""}, replica);
  if (!opened) throw std::runtime_error(opened.error().message);
  return std::move(*opened);
}

nlohmann::json aborted(const PostgresInvocationStore::Orphan& o) {
  return {{"id", o.id}, {"tool", o.tool}, {"status", "error"}, {"principal", ""},
          {"error", {{"kind", "aborted"}, {"message", "replica " + o.replica + " died"}}}};
}

TEST(PostgresInvocationStore, TwoReplicasCreateTheTablesAtOnce) {
  const std::string url = url_of(fresh_database());
  std::vector<std::thread> openers;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i)
    openers.emplace_back([&] {
      if (PostgresInvocationStore::open({url, ""})) ++ok;
    });
  for (auto& t : openers) t.join();
  EXPECT_EQ(ok, 6);
}

// Replica "dead" has no row in `replicas`, "alive" has one: only the dead one's running rows
// are aborted, each by exactly one of several stores claiming at once, after its record.
TEST(PostgresInvocationStore, ADeadReplicasRunningRowsAreAbortedExactlyOnce) {
  const std::string url = url_of(fresh_database());
  auto dead = pg_store(url, "dead"), alive = pg_store(url, "alive");
  ASSERT_TRUE(cluster().exec("INSERT INTO replicas VALUES ('alive', 'h', 1, now(), now())", url.substr(url.rfind('/') + 1)));
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(dead->begin("d" + std::to_string(i), "echo", {"agent", "", ""}));
  ASSERT_TRUE(dead->begin("done", "echo"));
  ASSERT_TRUE(dead->finish("done", "ok", response("done", "ok", "agent")));
  ASSERT_TRUE(alive->begin("a", "echo", {"agent", "", ""}));

  std::mutex mu;
  std::multiset<std::string> recorded;
  std::vector<std::thread> claimers;
  for (int c = 0; c < 4; ++c)
    claimers.emplace_back([&] {
      auto me = pg_store(url, "");
      for (;;) {
        auto claimed = me->abort_orphan(
            [&](const PostgresInvocationStore::Orphan& o) {
              std::lock_guard lock(mu);
              recorded.insert(o.id);
              return Status();
            },
            aborted);
        ASSERT_TRUE(claimed) << claimed.error().message;
        if (!*claimed) return;
        EXPECT_EQ((*claimed)->replica, "dead");
      }
    });
  for (auto& t : claimers) t.join();
  EXPECT_EQ(recorded.size(), 40u);
  EXPECT_EQ(std::set<std::string>(recorded.begin(), recorded.end()).size(), 40u) << "one record per row";
  for (int i = 0; i < 40; ++i) {
    auto row = alive->get("d" + std::to_string(i));
    ASSERT_TRUE(row);
    EXPECT_EQ((*row)["error"]["kind"], "aborted");
  }
  EXPECT_EQ((*alive->get("a"))["status"], "running") << "a live replica's call is left alone";
  EXPECT_EQ((*alive->get("done"))["status"], "ok");
}

// The audit record could not be written: the row stays running, for the next round.
TEST(PostgresInvocationStore, ARowWhoseRecordFailsStaysRunning) {
  const std::string url = url_of(fresh_database());
  auto dead = pg_store(url, "dead"), me = pg_store(url, "me");
  ASSERT_TRUE(dead->begin("d", "echo"));
  auto claimed = me->abort_orphan([](const auto&) { return Status(Error::make("storage_unavailable", "no log")); },
                                  aborted);
  ASSERT_FALSE(claimed);
  EXPECT_EQ(claimed.error().code, "storage_unavailable");
  EXPECT_EQ((*me->get("d"))["status"], "running");
  auto again = me->abort_orphan([](const auto&) { return Status(); }, aborted);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*me->get("d"))["status"], "error");
}

// The server stops: every method fails with the typed error (none pretends), and works once
// it is back (the connection is made again).
TEST(PostgresInvocationStore, ADownServerIsStorageUnavailableThenRecovers) {
  const std::string url = url_of(fresh_database());
  auto store = pg_store(url, "r");
  ASSERT_TRUE(store->begin("before", "echo"));
  ASSERT_TRUE(store->begin("answered", "echo"));
  cluster().stop_server();
  Status finished = store->finish("answered", "ok", response("answered", "ok", "agent"));
  ASSERT_FALSE(finished);
  EXPECT_EQ(finished.error().code, "storage_unavailable");
  Status begun = store->begin("during", "echo");
  ASSERT_FALSE(begun);
  EXPECT_EQ(begun.error().code, "storage_unavailable") << begun.error().message;
  EXPECT_EQ(begun.error().message.find(kPassword), std::string::npos) << "no secret in the error";
  auto listed = store->list({});
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().code, "storage_unavailable");
  ASSERT_TRUE(cluster().restart_server());
  Status after = Error::make("storage_unavailable", "not tried");
  for (int i = 0; i < 50 && !after; ++i) {  // the store reconnects at most once a second
    after = store->begin("after", "echo");
    if (!after) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_TRUE(store->get("before"));
  EXPECT_FALSE(store->get("during"));
  EXPECT_EQ((*store->get("answered"))["status"], "running") << "not written while the server was down";
  ASSERT_TRUE(store->flush_pending());
  EXPECT_EQ((*store->get("answered"))["status"], "ok") << "a finish kept while the server was down is written";
  ASSERT_TRUE(store->flush_pending()) << "nothing left to write";
}

}  // namespace
}  // namespace airlock::replicas_test
