// bench/dlp: single-core throughput of the DLP scanner on 128 MiB of generated mixed data (log
// lines, JSON API responses, source code, prose, sparse PII and secrets), side by side in one
// run with the same detectors done other ways:
//   - one Vectorscan database of every detector's regex (no confirmation): why the anchorless
//     shapes go through the run lexer instead;
//   - one RE2 alternation of the same regexes;
//   - the naive way: a loop over std::regex, one regex at a time (on a 1 MiB slice).
// The references only match (no validation, no redaction): they do less work than the scanner.
// Rates are per CPU second of the benchmark thread (the machine is shared).
//
// The call path (issue #20), wall time: check_input, scan_input and scan_output on a 1 MiB body
// through the daemon's own stage objects beside the library alone on the same bytes; and
// `airlock scan` as a whole process on a 3-byte file and on 100 MB of logs (also pinned to one
// CPU) beside `grep -c .`, `wc -l` and `cat` on the same file (run only these with --benchmark_filter='Path|Process').
#include <benchmark/benchmark.h>
#include <hs/hs.h>
#include <re2/re2.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <filesystem>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "dlp/detectors.hpp"
#include "dlp/scanner.hpp"
#include "dlp/vectorscan/vectorscan.hpp"
#include "pipeline/stages/check_input.hpp"
#include "pipeline/stages/content.hpp"
#include "policy/config.hpp"

namespace {

using airlock::dlp::detail::DetectorSpec;
using airlock::dlp::detail::Engine;

// ---------------------------------------------------------------- the data

class MixedDataGenerator {
 public:
  explicit MixedDataGenerator(std::uint64_t seed) : rng_(seed) {}

  // Log lines only, one in 200 sensitive.
  std::string generate_logs(std::size_t bytes) {
    std::string out;
    out.reserve(bytes + 4096);
    while (out.size() < bytes) pick(200) == 0 ? sensitive_line(out) : log_line(out);
    out.resize(bytes);
    return out;
  }

  std::string generate(std::size_t bytes) {
    std::string out;
    out.reserve(bytes + 4096);
    while (out.size() < bytes) {
      // By lines: about 35% logs, 30% JSON, 20% code, 15% prose; one line in 200 carries PII
      // or a secret.
      unsigned kind = pick(100);
      if (pick(200) == 0) {
        sensitive_line(out);
      } else if (kind < 35) {
        log_line(out);
      } else if (kind < 65) {
        json_line(out);
      } else if (kind < 85) {
        code_line(out);
      } else {
        prose_line(out);
      }
    }
    return out;
  }

 private:
  unsigned pick(unsigned n) { return static_cast<unsigned>(rng_() % n); }
  template <typename T, std::size_t N>
  const T& one_of(const T (&items)[N]) { return items[pick(N)]; }
  std::string number(unsigned digits) {
    std::string s;
    for (unsigned i = 0; i < digits; ++i) s.push_back(static_cast<char>('0' + pick(10)));
    return s;
  }
  std::string hex(unsigned digits) {
    std::string s;
    for (unsigned i = 0; i < digits; ++i) s.push_back("0123456789abcdef"[pick(16)]);
    return s;
  }
  std::string uuid() { return hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12); }
  std::string words(unsigned n) {
    static const char* kWords[] = {"the", "of", "and", "to", "in", "is", "for", "that", "with",
                                   "on", "as", "was", "by", "it", "this", "be", "are", "from",
                                   "request", "service", "user", "data", "value", "cache",
                                   "server", "report", "update", "system", "network", "order",
                                   "account", "config", "process", "result", "during", "after"};
    std::string s;
    for (unsigned i = 0; i < n; ++i) s += std::string(i ? " " : "") + one_of(kWords);
    return s;
  }
  std::string timestamp() {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "2024-%02u-%02uT%02u:%02u:%02u.%03uZ", 1 + pick(12),
                  1 + pick(28), pick(24), pick(60), pick(60), pick(1000));
    return buffer;
  }

  void log_line(std::string& out) {
    static const char* kLevels[] = {"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"};
    static const char* kComponents[] = {"http", "db", "scheduler", "auth", "cache", "worker"};
    out += timestamp() + " " + one_of(kLevels) + " [" + one_of(kComponents) + "] " + words(3 + pick(6));
    out += " path=/api/v1/orders/" + number(6) + " status=" + (pick(10) ? "200" : "404");
    out += " duration_ms=" + number(1 + pick(3));
    if (pick(2)) out += " request_id=" + uuid();
    if (pick(10) == 0) out += " remote=" + std::to_string(1 + pick(223)) + "." + std::to_string(pick(256)) +
                              "." + std::to_string(pick(256)) + "." + std::to_string(1 + pick(254));
    out += "\n";
  }

  void json_line(std::string& out) {
    out += "{\"id\": " + number(9) + ", \"name\": \"" + words(2) + "\", \"status\": \"active\", "
           "\"created_at\": \"" + timestamp() + "\", \"score\": 0." + number(4) +
           ", \"etag\": \"" + hex(40) + "\", \"tags\": [\"" + words(1) + "\", \"" + words(1) +
           "\"], \"items\": [{\"sku\": \"SKU-" + number(5) + "\", \"qty\": " + number(1) +
           ", \"price\": " + number(2) + "." + number(2) + "}]}\n";
  }

  void code_line(std::string& out) {
    static const char* kCode[] = {
        "    for (std::size_t i = 0; i < items.size(); ++i) total += items[i].price * items[i].qty;\n",
        "def handle(request):\n    return Response(status=200, body=json.dumps(result), headers=headers)\n",
        "    if err != nil {\n        return fmt.Errorf(\"open %s: %w\", path, err)\n    }\n",
        "const config = { retries: 3, timeoutMs: 2500, endpoint: `${base}/v2/items` };\n",
        "    static constexpr std::uint32_t kMagic = 0xDEADBEEF;  // version 1.4.2\n",
        "import numpy as np\nfrom collections import defaultdict\n",
        "    std::string name = config.get(\"name\", \"default\"); // see RFC 7231 section 6.5.1\n",
        "SELECT id, name, created_at FROM users WHERE org_id = $1 ORDER BY id LIMIT 100;\n",
        "    assert_eq!(parse(\"10.5\"), Ok(10.5));\n",
    };
    out += one_of(kCode);
  }

  void prose_line(std::string& out) {
    std::string sentence = words(8 + pick(20));
    sentence[0] = static_cast<char>(sentence[0] - 'a' + 'A');
    out += sentence + ". " + words(5 + pick(10)) + ".\n";
  }

  std::string luhn_card(std::string prefix, unsigned length) {
    std::string s = prefix + number(length - static_cast<unsigned>(prefix.size()) - 1);
    for (char check = '0'; check <= '9'; ++check) {
      int sum = 0;
      std::string candidate = s + check;
      bool twice = false;
      for (auto it = candidate.rbegin(); it != candidate.rend(); ++it) {
        int d = *it - '0';
        if (twice && (d *= 2) > 9) d -= 9;
        sum += d;
        twice = !twice;
      }
      if (sum % 10 == 0) return candidate;
    }
    return s + "0";
  }

  void sensitive_line(std::string& out) {
    switch (pick(10)) {
      case 0: out += "contact " + words(1) + "." + words(1) + "@example.org for " + words(3) + "\n"; break;
      case 1: out += "call (415) 734-" + number(4) + " or +44 20 7946 " + number(4) + "\n"; break;
      case 2: out += "card " + luhn_card("4539", 16) + " exp 12/27\n"; break;
      case 3: out += "ssn 536-22-" + number(4) + " on file\n"; break;
      case 4: out += "AWS_ACCESS_KEY_ID=AKIAUP6PPB2TDBM72FQO\n"; break;
      case 5: out += "token ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\n"; break;
      case 6: out += "DATABASE_URL=postgres://app:Tr0ub4dor-3x@db.internal:5432/app\n"; break;
      case 7: out += "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQy"
                     "In0.Xq3vJ0cW8m2bJd9sPq7Lz1Yt4kN6rF5hA0uE3wG2iVo\n"; break;
      case 8: out += "iban GB82 WEST 1234 5698 7654 32 for the transfer\n"; break;
      default: out += "password = s3cR3t!v4lue-" + number(4) + "\n"; break;
    }
  }

  std::mt19937_64 rng_;
};

constexpr std::size_t kDataBytes = 128u << 20;
constexpr std::size_t kNaiveSliceBytes = 1u << 20;

const std::string& mixed_data() {
  static const std::string data = MixedDataGenerator(42).generate(kDataBytes);
  return data;
}

// ---------------------------------------------------------------- the same detectors as regexes

// The anchorless detectors are shape matchers in the scanner; these regexes stand for them in
// the references (they match what the shapes start from, without the validation).
const char* reference_pattern(std::string_view id) {
  if (id == "phone_international")
    return "(?:\\+|00)[1-9][0-9]{0,3}(?:[ .-]?(?:\\(0\\)|\\([0-9]{1,4}\\)|[0-9]{1,6})){1,6}";
  if (id == "phone_nanp")
    return "(?:\\+?1[ .-]?)?(?:\\([2-9][0-9]{2}\\) ?|[2-9][0-9]{2}[ .-])[2-9][0-9]{2}[ .-][0-9]{4}";
  if (id == "phone_national") return "(?:\\([0-9]{1,4}\\) ?)?[0-9]{1,5}(?:[ .-][0-9]{1,5}){1,5}";
  if (id == "credit_card")
    return "[0-9]{12,19}|[0-9]{4}(?:[ -][0-9]{4}){2}[ -][0-9]{1,7}|[0-9]{4}[ -][0-9]{6}[ -][0-9]{4,5}";
  if (id == "iban") return "[A-Za-z]{2}[0-9]{2}(?: ?[A-Za-z0-9]{4}){2,7}(?: ?[A-Za-z0-9]{1,3})?";
  if (id == "us_ssn") return "[0-9]{3}-[0-9]{2}-[0-9]{4}|[0-9]{3} [0-9]{2} [0-9]{4}|[0-9]{9}";
  if (id == "ipv4") return "[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}";
  if (id == "ipv6") return "[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}";
  if (id == "mac_address")
    return "[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}|[0-9A-Fa-f]{2}(?:-[0-9A-Fa-f]{2}){5}";
  if (id == "high_entropy_base64") return "[A-Za-z0-9+/_-]{32,1000}";
  if (id == "high_entropy_hex") return "[0-9A-Fa-f]{32,1000}";
  return nullptr;
}

std::vector<std::string> all_detector_regexes(bool with_high_entropy) {
  std::vector<std::string> out;
  for (const DetectorSpec& spec : airlock::dlp::detail::detector_table()) {
    if (!spec.enabled && !with_high_entropy) continue;
    out.emplace_back(spec.engine == Engine::vectorscan ? std::string(spec.pattern)
                                                       : std::string(reference_pattern(spec.id)));
  }
  return out;
}

// std::regex (ECMAScript) has no inline flags: "(?i:...)" becomes a case-insensitive regex.
std::regex to_std_regex(std::string pattern) {
  bool caseless = false;
  for (std::size_t at; (at = pattern.find("(?i:")) != std::string::npos;) {
    pattern.replace(at, 4, "(?:");
    caseless = true;
  }
  auto flags = std::regex::ECMAScript | std::regex::optimize;
  return std::regex(pattern, caseless ? flags | std::regex::icase : flags);
}

airlock::dlp::Policy policy_with_all_detectors() {
  airlock::dlp::Policy policy;
  for (const DetectorSpec& spec : airlock::dlp::detail::detector_table())
    policy.detectors[std::string(spec.id)].enabled = true;
  return policy;
}

void report(benchmark::State& state, std::size_t bytes, std::size_t found) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
  state.counters["matches"] = static_cast<double>(found);
}

// ---------------------------------------------------------------- benchmarks

void BM_AirlockScan(benchmark::State& state, airlock::dlp::Policy policy) {
  const std::string& data = mixed_data();
  auto scanner = airlock::dlp::Scanner::create(policy);
  if (!scanner) {
    state.SkipWithError(scanner.error().message.c_str());
    return;
  }
  std::size_t found = 0;
  for (auto _ : state) {
    auto result = scanner->scan(data, {nullptr, airlock::dlp::JsonMode::off});
    found = result.findings.size();
    benchmark::DoNotOptimize(result);
  }
  report(state, data.size(), found);
}

void BM_AirlockScanAndRedact(benchmark::State& state) {
  const std::string& data = mixed_data();
  auto scanner = *airlock::dlp::Scanner::create(airlock::dlp::Policy::defaults());
  std::size_t found = 0;
  for (auto _ : state) {
    auto result = scanner.scan(data, {nullptr, airlock::dlp::JsonMode::off});
    std::string redacted = scanner.redact(data, result);
    found = result.findings.size();
    benchmark::DoNotOptimize(redacted);
  }
  report(state, data.size(), found);
}

void BM_AirlockStream64KiB(benchmark::State& state) {
  const std::string& data = mixed_data();
  auto scanner = *airlock::dlp::Scanner::create(airlock::dlp::Policy::defaults());
  constexpr std::size_t kChunk = 64 * 1024;
  std::size_t found = 0;
  for (auto _ : state) {
    auto stream = scanner.open_stream().value();
    found = 0;
    for (std::size_t at = 0; at < data.size(); at += kChunk) {
      auto out = stream.write(std::string_view(data).substr(at, kChunk));
      found += out.findings.size();
      benchmark::DoNotOptimize(out);
    }
    found += stream.finish().findings.size();
  }
  report(state, data.size(), found);
}

int count_match(unsigned, unsigned long long, unsigned long long, unsigned, void* count) {
  ++*static_cast<std::size_t*>(count);
  return 0;
}

void BM_VectorscanAllRegexes(benchmark::State& state) {
  const std::string& data = mixed_data();
  std::vector<airlock::dlp::detail::PatternSpec> patterns;
  for (const auto& p : all_detector_regexes(false))
    patterns.push_back({p, static_cast<unsigned>(patterns.size()), 0});
  // Compiled and scanned like the scanner's own database (the AVX-512 workaround included).
  auto db = airlock::dlp::detail::compile_database(patterns, HS_MODE_BLOCK);
  if (!db) {
    state.SkipWithError(db.error().message.c_str());
    return;
  }
  airlock::dlp::detail::ScratchPool pool;
  (void)pool.grow_for(db->get());
  auto scratch = pool.acquire();
  std::size_t found = 0;
  for (auto _ : state) {
    found = 0;
    airlock::dlp::detail::scan(db->get(), data.data(), static_cast<unsigned>(data.size()),
                               scratch.get(), count_match, &found);
  }
  report(state, data.size(), found);
}

void BM_Re2Alternation(benchmark::State& state) {
  const std::string& data = mixed_data();
  std::string alternation;
  for (const auto& p : all_detector_regexes(false)) {
    if (!alternation.empty()) alternation += '|';
    alternation.append("(?:").append(p).append(")");
  }
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_max_mem(std::int64_t{1} << 30);
  RE2 re(alternation, options);
  if (!re.ok()) {
    state.SkipWithError(re.error().c_str());
    return;
  }
  std::size_t found = 0;
  for (auto _ : state) {
    found = 0;
    re2::StringPiece input(data);
    re2::StringPiece match;
    std::size_t at = 0;
    while (at < data.size() && re.Match(input, at, data.size(), RE2::UNANCHORED, &match, 1)) {
      ++found;
      std::size_t end = static_cast<std::size_t>(match.data() - data.data()) + match.size();
      at = end > at ? end : at + 1;
    }
  }
  report(state, data.size(), found);
}

void BM_StdRegexLoop(benchmark::State& state) {
  const std::string data = mixed_data().substr(0, kNaiveSliceBytes);
  std::vector<std::regex> regexes;
  for (const auto& p : all_detector_regexes(false)) regexes.push_back(to_std_regex(p));
  std::size_t found = 0;
  for (auto _ : state) {
    found = 0;
    for (const auto& re : regexes)
      for (auto it = std::sregex_iterator(data.begin(), data.end(), re); it != std::sregex_iterator(); ++it)
        ++found;
  }
  report(state, data.size(), found);
}

void BM_AirlockScanNaiveSlice(benchmark::State& state) {
  // The scanner on the slice the naive loop gets, for a like-for-like ratio.
  const std::string data = mixed_data().substr(0, kNaiveSliceBytes);
  auto scanner = *airlock::dlp::Scanner::create(airlock::dlp::Policy::defaults());
  std::size_t found = 0;
  for (auto _ : state) {
    auto result = scanner.scan(data, {nullptr, airlock::dlp::JsonMode::off});
    found = result.findings.size();
    benchmark::DoNotOptimize(result);
  }
  report(state, data.size(), found);
}

// ---------------------------------------------------------------- the call path (issue #20)
// One 1 MiB body, {"arguments": {"source": ..., "text": <1 MiB of the mixed data>}}, through the
// daemon's own stage objects (check_input, scan_input, scan_output), beside the library
// scanning the same bytes (the reference: what the stages add is everything else).

const char* kPathConfig = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
tools:
  - name: ingest
    runtime: {type: command, command: [/bin/cat]}
    inputSchema:
      type: object
      required: [text]
      additionalProperties: false
      properties:
        source: {type: string, pattern: '^[a-z0-9.-]+$'}
        text: {type: string, maxLength: 4194304}
)";

constexpr std::size_t kBodyBytes = 1u << 20;

// Mixed data without the lines the default policy blocks on (a blocked call ends at the first
// finding); what is left is redacted, which the stages then do.
const std::string& body_text() {
  static const std::string text = [] {
    std::string all = mixed_data().substr(0, 4 * kBodyBytes), kept;
    auto scanner = *airlock::dlp::Scanner::create(airlock::dlp::Policy::defaults());
    for (std::size_t at = 0; at < all.size() && kept.size() < kBodyBytes;) {
      std::size_t end = all.find('\n', at);
      end = end == std::string::npos ? all.size() : end + 1;
      std::string_view line = std::string_view(all).substr(at, end - at);
      if (!scanner.scan(line).blocked && !scanner.scan(nlohmann::json(line).dump()).blocked) kept += line;
      at = end;
    }
    return kept.substr(0, kBodyBytes);
  }();
  return text;
}

struct CallPath {
  airlock::policy::Config config;
  std::unique_ptr<airlock::pipeline::CheckInputStage> check_input;
  std::shared_ptr<const airlock::dlp::Scanner> scanner;
  std::string body;  // the request body
  nlohmann::json arguments;

  static CallPath& get() {
    static CallPath path = [] {
      CallPath p;
      p.config = *airlock::policy::parse_config(kPathConfig, "bench.yaml", "/nonexistent-base");
      p.check_input = *airlock::pipeline::CheckInputStage::create(p.config);
      p.scanner = *airlock::pipeline::make_scanner(p.config);
      p.arguments = {{"source", "app-logs"}, {"text", body_text()}};
      // AIRLOCK_BENCH_BODY=FILE: another request body ({"arguments": {"source", "text"}}), e.g.
      // the one a daemon measurement sent, to see the stages and the library on it.
      if (const char* file = std::getenv("AIRLOCK_BENCH_BODY")) {
        std::ifstream in(file);
        p.arguments = nlohmann::json::parse(in).at("arguments");
      }
      p.body = nlohmann::json{{"arguments", p.arguments}}.dump();
      return p;
    }();
    return path;
  }
  airlock::pipeline::Invocation invocation() const {
    airlock::pipeline::Invocation inv;
    inv.tool_name = "ingest";
    inv.raw_body = body;
    return inv;
  }
};

void BM_PathCheckInput1MiB(benchmark::State& state) {
  CallPath& path = CallPath::get();
  airlock::pipeline::StageContext ctx(path.config);
  std::string error;
  for (auto _ : state) {
    state.PauseTiming();
    auto inv = path.invocation();
    state.ResumeTiming();
    auto result = path.check_input->run(inv, ctx);
    if (!result.proceeds()) error = result.error()->message;
    state.PauseTiming();
    { auto gone = std::move(inv); }
    state.ResumeTiming();
  }
  if (!error.empty()) state.SkipWithError(error.c_str());
  report(state, path.body.size(), 0);
}

void BM_PathScanStage1MiB(benchmark::State& state, airlock::pipeline::ScanStage::Direction direction) {
  CallPath& path = CallPath::get();
  airlock::pipeline::ScanStage stage(path.scanner, direction);
  airlock::pipeline::StageContext ctx(path.config);
  const bool input = direction == airlock::pipeline::ScanStage::Direction::input;
  std::size_t redactions = 0;
  std::string error;
  for (auto _ : state) {
    state.PauseTiming();
    airlock::pipeline::Invocation inv;
    inv.tool_name = "ingest";
    if (input) inv.arguments = path.arguments;
    else inv.output = path.arguments;
    state.ResumeTiming();
    auto result = stage.run(inv, ctx);
    if (!result.proceeds()) error = result.error()->message;
    redactions = inv.redactions.size();
    state.PauseTiming();
    { auto gone = std::move(inv); }
    state.ResumeTiming();
  }
  if (!error.empty()) state.SkipWithError(error.c_str());
  report(state, path.body.size(), redactions);
}

// The reference: the library on the body's bytes, JSON-aware as the stages scan.
void BM_PathLibraryScan1MiB(benchmark::State& state) {
  CallPath& path = CallPath::get();
  std::size_t found = 0;
  for (auto _ : state) {
    auto result = path.scanner->scan(path.body);
    found = result.findings.size();
    benchmark::DoNotOptimize(result);
  }
  report(state, path.body.size(), found);
}

// The reference for check_input: nlohmann parsing the same body, with no bound and no schema.
void BM_PathNlohmannParse1MiB(benchmark::State& state) {
  CallPath& path = CallPath::get();
  for (auto _ : state) {
    auto value = nlohmann::json::parse(path.body);
    benchmark::DoNotOptimize(value);
  }
  report(state, path.body.size(), 0);
}

// ---------------------------------------------------------------- `airlock scan`, whole process
// Wall time of one process from fork to exit: `airlock scan FILE` on a 3-byte file and on
// 100 MB of generated logs, beside `grep -c .` and `cat > /dev/null` on the same file.

// Removed at exit with what was written into it (never destroyed: the exit handler reads it).
const std::string& scratch_dir() {
  static const std::string* dir = [] {
    char tmpl[] = "/tmp/bench-dlp-XXXXXX";
    auto* made = new std::string(mkdtemp(tmpl));
    std::atexit([] { std::filesystem::remove_all(scratch_dir()); });
    return made;
  }();
  return *dir;
}

std::string write_file(const std::string& name, const std::string& content) {
  std::string path = scratch_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(content.data(), 1, content.size(), f);
  std::fclose(f);
  return path;
}

const std::string& small_file() {
  static const std::string path = write_file("small.txt", "hi\n");
  return path;
}

constexpr std::size_t kLogBytes = 100'000'000;

// 100 MB of log lines (the generator's logs, one line in 200 sensitive).
const std::string& log_file() {
  static const std::string path = [] {
    MixedDataGenerator generator(7);
    std::string logs = generator.generate_logs(kLogBytes);
    return write_file("logs.txt", logs);
  }();
  return path;
}

// Runs argv with stdin and stdout on /dev/null; the exit status. posix_spawn (vfork-like in glibc):
// a fork() of this process, which holds a few hundred MB of test data, copied its page tables
// first and added milliseconds to every process measured.
int run_process(const std::vector<std::string>& argv) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return 127;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The airlock program measured: AIRLOCK_BENCH_BINARY (another build, for a before/after in one
// harness), else this build's.
const char* airlock_binary() {
  const char* other = std::getenv("AIRLOCK_BENCH_BINARY");
  return other ? other : AIRLOCK_BINARY;
}

void BM_Process(benchmark::State& state, std::vector<std::string> argv, bool big) {
  const std::string& file = big ? log_file() : small_file();
  for (auto& a : argv)
    if (a == AIRLOCK_BINARY) a = airlock_binary();
  argv.push_back(file);
  int status = 0;
  for (auto _ : state) status = run_process(argv);
  // airlock scan: 0 nothing found, 1 findings, 3 blocked; 2 is an error (grep: 1 no match).
  if (status == 2 || status > 3) state.SkipWithError(("exit status " + std::to_string(status)).c_str());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(big ? kLogBytes : 3));
}

// GNU grep stops at the first match when its output is /dev/null (it took 1 ms on 100 MB), so
// its count goes to a file, as a reference that reads every byte.
void BM_ProcessGrepCount(benchmark::State& state, bool big) {
  const std::string& file = big ? log_file() : small_file();
  const std::string out = scratch_dir() + "/grep.out";
  for (auto _ : state) run_process({"sh", "-c", "exec grep -c . \"$0\" > \"$1\"", file, out});
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(big ? kLogBytes : 3));
}

void BM_ProcessCat(benchmark::State& state, bool big) {
  const std::string& file = big ? log_file() : small_file();
  for (auto _ : state) run_process({"sh", "-c", "exec cat \"$0\" > /dev/null", file});
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(big ? kLogBytes : 3));
}

BENCHMARK(BM_PathCheckInput1MiB)->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_PathScanStage1MiB, scan_input, airlock::pipeline::ScanStage::Direction::input)
    ->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_PathScanStage1MiB, scan_output, airlock::pipeline::ScanStage::Direction::output)
    ->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();
BENCHMARK(BM_PathLibraryScan1MiB)->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();
BENCHMARK(BM_PathNlohmannParse1MiB)->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_Process, airlock_scan_small, {AIRLOCK_BINARY, "scan"}, false)
    ->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_ProcessGrepCount, grep_c_small, false)
    ->Unit(benchmark::kMillisecond)->MinTime(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_ProcessCat, cat_small, false)->Unit(benchmark::kMillisecond)->MinTime(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_Process, airlock_scan_100MB_logs, {AIRLOCK_BINARY, "scan"}, true)
    ->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();
// The same on one CPU (the scan in one piece): what the second core gives.
BENCHMARK_CAPTURE(BM_Process, airlock_scan_100MB_logs_one_cpu, {"taskset", "-c", "0", AIRLOCK_BINARY, "scan"}, true)
    ->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();
BENCHMARK_CAPTURE(BM_ProcessGrepCount, grep_c_100MB_logs, true)
    ->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();
BENCHMARK_CAPTURE(BM_Process, wc_l_100MB_logs, {"wc", "-l"}, true)
    ->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();
BENCHMARK_CAPTURE(BM_ProcessCat, cat_100MB_logs, true)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();
BENCHMARK_CAPTURE(BM_AirlockScan, default_detectors, airlock::dlp::Policy::defaults())
    ->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK_CAPTURE(BM_AirlockScan, all_detectors, policy_with_all_detectors())
    ->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_AirlockScanAndRedact)->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_AirlockStream64KiB)->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_AirlockScanNaiveSlice)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_VectorscanAllRegexes)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_Re2Alternation)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_StdRegexLoop)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace

// AIRLOCK_BENCH_DLP_LOGS=FILE writes the 100 MB of logs the process benchmarks scan to FILE and
// exits (to profile `airlock scan` on the same bytes).
int main(int argc, char** argv) {
  if (const char* path = std::getenv("AIRLOCK_BENCH_DLP_LOGS")) {
    MixedDataGenerator generator(7);
    const std::string logs = generator.generate_logs(kLogBytes);
    std::FILE* f = std::fopen(path, "wb");
    const bool written = f && std::fwrite(logs.data(), 1, logs.size(), f) == logs.size();
    return f && std::fclose(f) == 0 && written ? 0 : 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
