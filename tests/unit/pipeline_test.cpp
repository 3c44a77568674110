// The pipeline's contract (docs/pipeline.md): stages run in order until one ends the
// invocation or suspends it; a suspended invocation is persisted, restored and resumed at the
// stage after the one that suspended; finalizers run however the run ends, newest first; the
// final (audit) stage runs once the invocation ends, and if it fails there is no result.
#include <gtest/gtest.h>

#include <filesystem>

#include "audit/audit_log.hpp"
#include "pipeline/invocation_state.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/stages/audit_record.hpp"
#include "server/core/invocation_response.hpp"

namespace airlock::pipeline {
namespace {

using Log = std::vector<std::string>;

class Recorder : public Stage {
 public:
  Recorder(std::string name, Log& log, std::optional<InvocationError> result = {})
      : name_(std::move(name)), log_(log), result_(std::move(result)) {}
  std::string_view name() const override { return name_; }
  StageResult run(Invocation& inv, StageContext&) override {
    log_.push_back(name_);
    if (name_ == "produce") inv.output = nlohmann::json{{"x", 1}};
    if (result_) return *result_;
    return StageResult::next();
  }

 private:
  std::string name_;
  Log& log_;
  std::optional<InvocationError> result_;
};

// Suspends the first time it runs (as an approval stage would), recording why in the data.
class WaitForApproval : public Stage {
 public:
  explicit WaitForApproval(Log& log) : log_(log) {}
  std::string_view name() const override { return "approval"; }
  StageResult run(Invocation&, StageContext&) override {
    log_.push_back("approval");
    return StageResult::suspend("awaiting approval", {{"request", 7}});
  }

 private:
  Log& log_;
};

// Registers a finalizer that logs its name, then answers `result`.
class Deferring : public Stage {
 public:
  Deferring(std::string name, Log& log, Status finalizer_result = {}, bool throws = false)
      : name_(std::move(name)), log_(log), finalizer_result_(std::move(finalizer_result)), throws_(throws) {}
  std::string_view name() const override { return name_; }
  StageResult run(Invocation&, StageContext& ctx) override {
    ctx.defer("undo " + name_, [this](Invocation&) {
      log_.push_back("undo " + name_);
      return finalizer_result_;
    });
    log_.push_back(name_);
    if (throws_) throw std::runtime_error("the backend went away");
    return StageResult::next();
  }

 private:
  std::string name_;
  Log& log_;
  Status finalizer_result_;
  bool throws_;
};

std::shared_ptr<const policy::Config> config_version(std::string version) {
  auto config = std::make_shared<policy::Config>();
  config->version = std::move(version);
  return config;
}

TEST(Pipeline, StopsAtTheFirstErrorButAlwaysRunsTheFinalStage) {
  Log ran;
  Pipeline p(config_version("v1"));
  p.add(std::make_unique<Recorder>("a", ran));
  p.add(std::make_unique<Recorder>("b", ran, deny(ErrorKind::forbidden, "no")));
  p.add(std::make_unique<Recorder>("c", ran));
  p.set_final(std::make_unique<Recorder>("audit", ran));
  Invocation inv;
  p.run(inv);
  EXPECT_EQ(ran, (Log{"a", "b", "audit"}));
  EXPECT_EQ(inv.status(), "denied");
  EXPECT_EQ(inv.stage_times.size(), 3u);
  EXPECT_EQ(inv.config_version, "v1");
}

TEST(Pipeline, AFailingFinalStageTakesTheResultAway) {
  Log ran;
  Pipeline p(config_version("v1"));
  p.add(std::make_unique<Recorder>("produce", ran));
  p.set_final(std::make_unique<Recorder>("audit", ran, fail(ErrorKind::audit_failed, "disk")));
  Invocation inv;
  p.run(inv);
  EXPECT_FALSE(inv.output.has_value());
  ASSERT_TRUE(inv.error);
  EXPECT_EQ(inv.error->kind_name(), "audit_failed");
  EXPECT_TRUE(server::to_response(inv)["output"].is_null());
}

TEST(Pipeline, AnExceptionInAStageFailsClosed) {
  class Thrower : public Stage {
    std::string_view name() const override { return "thrower"; }
    StageResult run(Invocation&, StageContext&) override { throw std::runtime_error("bug"); }
  };
  Pipeline p(config_version("v1"));
  p.add(std::make_unique<Thrower>());
  Invocation inv;
  p.run(inv);
  ASSERT_TRUE(inv.error);
  EXPECT_EQ(inv.error->kind_name(), "internal");
  EXPECT_EQ(server::http_status(*inv.error), 500);
}

TEST(Pipeline, ASuspendedInvocationIsPersistedAndResumesAfterTheSuspendingStage) {
  Log ran;
  auto build = [&ran](const std::string& version) {
    auto p = std::make_unique<Pipeline>(config_version(version));
    p->add(std::make_unique<Recorder>("authorize", ran));
    p->add(std::make_unique<WaitForApproval>(ran));
    p->add(std::make_unique<Recorder>("produce", ran));
    p->set_final(std::make_unique<Recorder>("audit", ran));
    return p;
  };
  Invocation inv;
  inv.id = "inv-1";
  inv.tool_name = "deploy";
  inv.headers["authorization"] = "Bearer secret-key";
  inv.actor = Actor{"agent"};
  build("v1")->run(inv);
  EXPECT_EQ(ran, (Log{"authorize", "approval"}));  // no audit record yet: it has not ended
  ASSERT_TRUE(inv.suspended);
  EXPECT_EQ(inv.status(), "suspended");
  EXPECT_EQ(server::http_status(inv), 202);
  EXPECT_EQ(inv.suspended->stage, "approval");
  EXPECT_EQ(inv.suspended->data["request"], 7);

  // Kept as JSON (never with its headers), restored as after a restart, resumed by a new
  // pipeline under the same configuration.
  auto state = persist(inv);
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->dump().find("secret-key"), std::string::npos);
  auto restored = restore(nlohmann::json::parse(state->dump()));
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(restored->cursor, 2u);
  EXPECT_EQ(restored->actor->principal, "agent");
  ran.clear();
  build("v1")->run(*restored);
  EXPECT_EQ(ran, (Log{"produce", "audit"}));
  EXPECT_EQ(restored->status(), "ok");
  EXPECT_TRUE(restored->output.has_value());
}

TEST(Pipeline, AnInvocationResumedUnderAnotherConfigurationEndsWithConfigChanged) {
  Log ran;
  Pipeline first(config_version("v1"));
  first.add(std::make_unique<WaitForApproval>(ran));
  first.add(std::make_unique<Recorder>("produce", ran));
  Invocation inv;
  first.run(inv);
  ASSERT_TRUE(inv.suspended);

  Pipeline reloaded(config_version("v2"));
  reloaded.add(std::make_unique<WaitForApproval>(ran));
  reloaded.add(std::make_unique<Recorder>("produce", ran));
  reloaded.set_final(std::make_unique<Recorder>("audit", ran));
  ran.clear();
  reloaded.run(inv);
  EXPECT_EQ(ran, (Log{"audit"}));  // nothing after the suspension ran; the end is recorded
  ASSERT_TRUE(inv.error);
  EXPECT_EQ(inv.error->kind, ErrorKind::config_changed);
  EXPECT_FALSE(inv.suspended);
}

TEST(Pipeline, AnInvocationThatHasRunIsNotPersisted) {
  Invocation inv;
  inv.outcome = backend::RunResult{};
  EXPECT_FALSE(persist(inv).ok());
  EXPECT_FALSE(restore(nlohmann::json{{"state_version", 1}}).ok());
  EXPECT_FALSE(restore(nlohmann::json::array()).ok());
}

TEST(Pipeline, FinalizersRunNewestFirstWhateverHappensAndBeforeTheAudit) {
  for (const bool stage_throws : {false, true}) {
    Log ran;
    Pipeline p(config_version("v1"));
    p.add(std::make_unique<Deferring>("lease", ran));
    p.add(std::make_unique<Deferring>("execute", ran, Status{}, stage_throws));
    p.add(std::make_unique<Recorder>("scan_output", ran, deny(ErrorKind::dlp_blocked, "secret")));
    p.set_final(std::make_unique<Recorder>("audit", ran));
    Invocation inv;
    p.run(inv);
    if (stage_throws)
      EXPECT_EQ(ran, (Log{"lease", "execute", "undo execute", "undo lease", "audit"}));
    else
      EXPECT_EQ(ran, (Log{"lease", "execute", "scan_output", "undo execute", "undo lease", "audit"}));
    ASSERT_TRUE(inv.error);
    EXPECT_EQ(inv.error->kind, stage_throws ? ErrorKind::internal : ErrorKind::dlp_blocked);
  }
  // A suspension ends the run too: what was set up is undone before the wait.
  Log ran;
  Pipeline p(config_version("v1"));
  p.add(std::make_unique<Deferring>("lease", ran));
  p.add(std::make_unique<WaitForApproval>(ran));
  Invocation inv;
  p.run(inv);
  EXPECT_EQ(ran, (Log{"lease", "approval", "undo lease"}));
}

TEST(Pipeline, AFailingFinalizerFailsTheInvocationAndIsNoted) {
  Log ran;
  Pipeline p(config_version("v1"));
  p.add(std::make_unique<Deferring>("lease", ran, Error::make("revoke", "the broker refused")));
  p.add(std::make_unique<Recorder>("produce", ran));
  p.set_final(std::make_unique<Recorder>("audit", ran));
  Invocation inv;
  p.run(inv);
  EXPECT_EQ(ran, (Log{"lease", "produce", "undo lease", "audit"}));
  EXPECT_FALSE(inv.output.has_value());
  ASSERT_TRUE(inv.error);
  EXPECT_EQ(inv.error->kind, ErrorKind::internal);
  EXPECT_NE(inv.error->message.find("undo lease failed: the broker refused"), std::string::npos);
  ASSERT_EQ(inv.notes.size(), 1u);
}

TEST(ErrorKind, EveryKindHasAStableNameThatMapsBack) {
  for (int k = 0; k <= static_cast<int>(ErrorKind::internal); ++k) {
    const auto kind = static_cast<ErrorKind>(k);
    auto back = kind_from_name(kind_name(kind));
    ASSERT_TRUE(back) << kind_name(kind);
    EXPECT_EQ(*back, kind);
  }
  EXPECT_EQ(kind_name(ErrorKind::code_rejected), "code_rejected");
  EXPECT_FALSE(kind_from_name("no_such_kind"));
}

TEST(AuditStage, ARealLogThatCannotAppendFailsTheInvocation) {
  auto dir = std::filesystem::temp_directory_path() / ("airlock-pipeline-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto log = audit::AuditLog::open((dir / "audit.db").string());
  ASSERT_TRUE(log.ok()) << log.error().message;
  AuditStage stage(**log);
  policy::Config config;
  StageContext ctx(config);
  Invocation ok;
  ok.id = "first";
  ok.tool_name = "t";
  EXPECT_TRUE(stage.run(ok, ctx).proceeds());
  ASSERT_TRUE(ok.audit);
  EXPECT_EQ(ok.audit->index, 0u);
  ASSERT_TRUE((*log)->close().ok());  // from now on the log refuses appends
  Invocation refused;
  refused.id = "second";
  auto result = stage.run(refused, ctx);
  ASSERT_TRUE(result.error());
  EXPECT_EQ(result.error()->kind_name(), "audit_failed");
  EXPECT_EQ(server::http_status(*result.error()), 500);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace airlock::pipeline
