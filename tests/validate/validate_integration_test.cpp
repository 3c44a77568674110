// The validator end to end: the real sandboxed parse worker (warm reuse, restart after a
// timeout and after a crash, concurrent callers), the benign corpus, the published escapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "escapes.hpp"
#include "read_file.hpp"
#include "validate/parse_worker.hpp"
#include "validate/validate.hpp"

namespace airlock::validate {
namespace {

using test::read_file;

std::string describe(const Report& report) {
  std::string out;
  for (const auto& f : report.findings)
    out += "  " + std::to_string(f.line) + ":" + std::to_string(f.col) + " [" + f.rule + "] " +
           f.message + "\n";
  return out;
}

const std::filesystem::path kBenign = AIRLOCK_VALIDATE_BENIGN_DIR;

TEST(Validator, OneWarmWorkerServesManyChecks) {
  Validator validator;
  Policy policy;
  for (int i = 0; i < 25; ++i) {
    auto report = validator.check("import json\nprint(json.dumps({'n': " + std::to_string(i) + "}))\n", policy);
    ASSERT_EQ(report.verdict, Verdict::accept) << describe(report);
  }
  auto rejected = validator.check("eval('1')\n", policy);
  EXPECT_EQ(rejected.verdict, Verdict::reject);
  auto stats = validator.stats();
  EXPECT_EQ(stats.worker_starts, 1u);
  EXPECT_EQ(stats.parse_requests, 26u);
  EXPECT_EQ(stats.exports_computed, 1u);  // once per policy
}

TEST(Validator, BenignCorpusPassesWithZeroFindings) {
  auto policy = load_policy_file((kBenign / "policy.yaml").string());
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  Validator validator;
  int programs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kBenign)) {
    if (entry.path().extension() != ".py") continue;
    ++programs;
    auto report = validator.check(read_file(entry.path()), *policy);
    EXPECT_EQ(report.verdict, Verdict::accept) << entry.path() << "\n" << describe(report);
    EXPECT_TRUE(report.findings.empty()) << entry.path() << "\n" << describe(report);
  }
  EXPECT_GE(programs, 50);
}

TEST(Validator, BenignCorpusNeedsItsPolicy) {
  // Control: the same programs under the default policy are not all accepted, so the corpus
  // test above does exercise the import and host rules.
  Validator validator;
  int rejected = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kBenign))
    if (entry.path().extension() == ".py" &&
        validator.check(read_file(entry.path()), Policy()).verdict == Verdict::reject)
      ++rejected;
  EXPECT_GE(rejected, 10);
}

class PublishedEscape : public ::testing::TestWithParam<test::Escape> {};

TEST_P(PublishedEscape, IsRejected) {
  Policy policy;
  auto report = check(GetParam().source, policy);
  EXPECT_EQ(report.verdict, Verdict::reject) << GetParam().reference << "\n" << GetParam().source;
  EXPECT_FALSE(report.findings.empty());
  // Rejected by the rules, not because the validator could not run.
  for (const auto& f : report.findings) {
    EXPECT_NE(f.rule, "parse-failed") << describe(report);
    EXPECT_NE(f.rule, "parse-timeout") << describe(report);
  }
}

std::string escape_name(const ::testing::TestParamInfo<test::Escape>& escape) {
  return escape.param.name;
}

INSTANTIATE_TEST_SUITE_P(Escapes, PublishedEscape, ::testing::ValuesIn(test::kPublishedEscapes),
                         escape_name);

ParseWorkerConfig worker_config() {
  ParseWorkerConfig config;
  config.script = default_parser_script();
  return config;
}

std::string big_source(int lines) {
  std::string source;
  for (int i = 0; i < lines; ++i)
    source += "value_" + std::to_string(i) + " = [x * 2 for x in range(" + std::to_string(i) +
              ") if x % 3 == 0]\n";
  return source;
}

TEST(ParseWorker, TimeoutKillsTheWorkerAndTheNextRequestRestartsIt) {
  ParseWorker worker(worker_config());
  ASSERT_TRUE(worker.start().ok());
  auto slow = worker.parse(big_source(20000), std::chrono::milliseconds(5));
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.error().code, "parse_timeout");
  auto next = worker.parse("x = 1\n");
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_TRUE(next->reply["ok"].get<bool>());
  EXPECT_EQ(worker.starts(), 2u);
}

TEST(ParseWorker, CrashIsReportedAndTheWorkerRestarts) {
  ParseWorkerConfig config = worker_config();
  config.memory_bytes = 64ULL << 20;
  ParseWorker worker(config);
  // A tree far larger than 64M of memory: the worker dies (memory limit) mid-request.
  std::string huge = "x = [" ;
  for (int i = 0; i < 3'000'000; ++i) huge += "1,";
  huge += "]\n";
  auto crashed = worker.parse(huge, std::chrono::milliseconds(60'000));
  ASSERT_FALSE(crashed.ok());
  EXPECT_EQ(crashed.error().code, "parse_failed") << crashed.error().message;
  auto next = worker.parse("y = 2\n");
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(worker.starts(), 2u);
}

TEST(ParseWorker, RunsInASandboxWithTheScriptReadOnly) {
  auto spec = parser_sandbox_spec(worker_config(), {"serve"});
  ASSERT_EQ(spec.binds.size(), 1u);
  EXPECT_FALSE(spec.binds[0].writable);
  EXPECT_EQ(spec.binds[0].dest, kParserScriptInSandbox);
  EXPECT_TRUE(spec.network.loopback_listeners.empty());
  EXPECT_TRUE(spec.network.tcp_connect_ports.empty());
  EXPECT_LE(spec.limits.memory_bytes, 256ULL << 20);
  EXPECT_EQ(spec.argv[0], "/usr/bin/python3");

  // The C tree walk, when there is one, is bound read-only beside the script under its own
  // name (its ABI tag is what keeps other interpreters from importing it).
  ParseWorkerConfig config = worker_config();
  config.native_walker = default_native_walker();
  ASSERT_FALSE(config.native_walker.empty());
  auto native = parser_sandbox_spec(config, {"serve"});
  ASSERT_EQ(native.binds.size(), 2u);
  EXPECT_FALSE(native.binds[1].writable);
  EXPECT_EQ(native.binds[1].dest, std::string(kParserDirInSandbox) + "/" +
                                      std::filesystem::path(config.native_walker).filename().string());
}

TEST(Validator, ConcurrentCallersGetTheirOwnAnswers) {
  Validator validator;
  Policy policy;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        bool bad = (i + t) % 2 == 0;
        std::string source = bad ? "exec('x" + std::to_string(t) + "')\n"
                                 : "import math\nprint(math.sqrt(" + std::to_string(i) + "))\n";
        auto report = validator.check(source, policy);
        if ((report.verdict == Verdict::reject) != bad) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(validator.stats().worker_starts, 1u);
}

TEST(Validator, ParseTimeoutIsARejection) {
  ValidatorOptions options;
  options.parse_timeout = std::chrono::milliseconds(5);
  Validator validator(options);
  auto report = validator.check(big_source(20000), Policy());
  EXPECT_EQ(report.verdict, Verdict::reject);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].rule, "parse-timeout") << describe(report);
}

TEST(Validator, ColumnsCountCharactersNotBytes) {
  auto report = check("s = 'héé'; eval('1')\n", Policy());
  ASSERT_EQ(report.findings.size(), 1u) << describe(report);
  EXPECT_EQ(report.findings[0].col, 12);
}

}  // namespace
}  // namespace airlock::validate
