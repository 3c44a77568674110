// The pipeline's contract: stages run in order until one ends the invocation; the final
// (audit) stage always runs; if it fails, the invocation has no result (fail closed).
#include <gtest/gtest.h>

#include <filesystem>

#include "audit/audit_log.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/stages/audit_record.hpp"

namespace airlock::pipeline {
namespace {

class Recorder : public Stage {
 public:
  Recorder(std::string name, std::vector<std::string>& log, std::optional<InvocationError> result = {})
      : name_(std::move(name)), log_(log), result_(std::move(result)) {}
  std::string_view name() const override { return name_; }
  std::optional<InvocationError> run(Invocation& inv) override {
    log_.push_back(name_);
    if (name_ == "produce") inv.output = nlohmann::json{{"x", 1}};
    return result_;
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  std::optional<InvocationError> result_;
};

TEST(Pipeline, StopsAtTheFirstErrorButAlwaysRunsTheFinalStage) {
  std::vector<std::string> ran;
  Pipeline p;
  p.add(std::make_unique<Recorder>("a", ran));
  p.add(std::make_unique<Recorder>("b", ran, InvocationError{"forbidden", "no", "denied", 403, ""}));
  p.add(std::make_unique<Recorder>("c", ran));
  p.set_final(std::make_unique<Recorder>("audit", ran));
  Invocation inv;
  p.run(inv);
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "b", "audit"}));
  EXPECT_EQ(inv.status(), "denied");
  EXPECT_EQ(inv.stage_times.size(), 3u);
}

TEST(Pipeline, AFailingFinalStageTakesTheResultAway) {
  std::vector<std::string> ran;
  Pipeline p;
  p.add(std::make_unique<Recorder>("produce", ran));
  p.set_final(std::make_unique<Recorder>("audit", ran, InvocationError{"audit_failed", "disk", "error", 500, ""}));
  Invocation inv;
  p.run(inv);
  EXPECT_FALSE(inv.output.has_value());
  ASSERT_TRUE(inv.error);
  EXPECT_EQ(inv.error->kind, "audit_failed");
  EXPECT_TRUE(to_response(inv)["output"].is_null());
}

TEST(Pipeline, AnExceptionInAStageFailsClosed) {
  class Thrower : public Stage {
    std::string_view name() const override { return "thrower"; }
    std::optional<InvocationError> run(Invocation&) override { throw std::runtime_error("bug"); }
  };
  Pipeline p;
  p.add(std::make_unique<Thrower>());
  Invocation inv;
  p.run(inv);
  ASSERT_TRUE(inv.error);
  EXPECT_EQ(inv.error->kind, "internal");
  EXPECT_EQ(inv.error->http_status, 500);
}

TEST(AuditStage, ARealLogThatCannotAppendFailsTheInvocation) {
  auto dir = std::filesystem::temp_directory_path() / ("airlock-pipeline-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto log = audit::AuditLog::open((dir / "audit.db").string());
  ASSERT_TRUE(log.ok()) << log.error().message;
  AuditStage stage(**log);
  Invocation ok;
  ok.id = "first";
  ok.tool_name = "t";
  EXPECT_FALSE(stage.run(ok).has_value());
  ASSERT_TRUE(ok.audit);
  EXPECT_EQ(ok.audit->index, 0u);
  ASSERT_TRUE((*log)->close().ok());  // from now on the log refuses appends
  Invocation refused;
  refused.id = "second";
  auto error = stage.run(refused);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, "audit_failed");
  EXPECT_EQ(error->http_status, 500);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace airlock::pipeline
