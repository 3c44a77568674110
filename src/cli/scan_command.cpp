// airlock scan [--json] [--redact] [--policy FILE] [--literal VALUE]... [FILE|-]
//
// Finds PII and secrets in a file (or stdin) and prints what it found: detector, category, byte
// span, confidence, action; never the value itself. --redact prints the input with the policy's
// actions applied instead. Exit status:
//   0  nothing found (or only findings the policy allows)
//   1  findings to redact, mask or hash
//   2  error (usage, unreadable input, invalid policy)
//   3  blocked: a finding's action is block; no redacted text is printed
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "common/unique_fd.hpp"
#include "dlp/scanner.hpp"

namespace airlock::cli {
namespace {

constexpr int kNothingFound = 0;
constexpr int kFindings = 1;
constexpr int kScanFailed = 2;
constexpr int kBlocked = 3;

struct ScanOptions {
  bool json = false;
  bool redact = false;
  std::string policy_path;
  std::vector<std::string> literals;
  std::vector<std::string> literal_envs;
  std::string input = "-";
};

int fail(const std::string& message) {
  std::cerr << "airlock scan: " << message << "\n";
  return kScanFailed;
}

// Reads with read(2) into a buffer sized from fstat: an istreambuf_iterator copies a byte at a
// time (about 150 MB/s, which was most of the time `airlock scan` took on a large file).
bool read_fd(int fd, std::string& out) {
  struct stat st {};
  std::size_t chunk = 1 << 16;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    chunk = static_cast<std::size_t>(st.st_size) + 1;  // +1: the read that sees the end
  std::size_t size = 0;
  for (;;) {
    if (out.size() == size) out.resize(size + chunk);  // full: grow (std::string doubles)
    ssize_t n = ::read(fd, out.data() + size, out.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
  }
  out.resize(size);
  return true;
}

// A mapped file that shrinks while it is scanned raises SIGBUS on the pages that are gone: say
// so and exit with the error status, never with a partial result. Several scanning threads may
// fault at once: the first says so and exits, the others wait for that exit (said once).
void on_sigbus(int) {
  static std::atomic_flag said = ATOMIC_FLAG_INIT;
  if (said.test_and_set())
    for (;;) ::pause();
  constexpr char kMessage[] = "airlock scan: the input file shrank while it was being read\n";
  [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  ::_exit(kScanFailed);
}

// The bytes to scan. A regular file is mapped: no copy and no buffer to fault in (100 MB: 2 ms
// of CPU, against 47 ms for read(2) into a fresh buffer); anything else is read.
class Input {
 public:
  Input() = default;
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  ~Input() {
    if (mapped_) ::munmap(mapped_, size_);
  }

  bool open(const std::string& path) {
    if (path == "-") return read_fd(STDIN_FILENO, read_);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return false;
    return map(fd.get()) || read_fd(fd.get(), read_);
  }
  std::string_view bytes() const {
    return mapped_ ? std::string_view(static_cast<const char*>(mapped_), size_) : std::string_view(read_);
  }

 private:
  bool map(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return false;
    struct sigaction action {};
    action.sa_handler = on_sigbus;
    if (::sigaction(SIGBUS, &action, nullptr) != 0) return false;
    const auto size = static_cast<std::size_t>(st.st_size);
    void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (mapped == MAP_FAILED) return false;  // not mappable (some special files): read it
    mapped_ = mapped;
    size_ = size;
    return true;
  }

  std::string read_;
  void* mapped_ = nullptr;
  std::size_t size_ = 0;
};

// ordered_json keeps the documented field order.
nlohmann::ordered_json finding_json(const dlp::Finding& f) {
  return {{"detector", f.detector},
          {"category", dlp::to_string(f.category)},
          {"start", f.start},
          {"end", f.end},
          {"confidence", f.confidence},
          {"action", dlp::to_string(f.action)},
          {"example", f.example}};
}

// "email (pii) bytes 5-25 confidence 0.85 action redact\n", appended to `out`: the lines of a
// large input's findings (100,000 for 100 MB of logs) are written in one buffer, not through
// iostream a field at a time.
void append_finding_text(const dlp::Finding& f, std::string& out) {
  char number[32];
  auto append = [&](auto value, auto... format) {
    auto [end, ec] = std::to_chars(number, number + sizeof number, value, format...);
    out.append(number, ec == std::errc() ? end : number);
  };
  out.append(f.detector).append(" (").append(dlp::to_string(f.category)).append(") bytes ");
  append(f.start);
  out += '-';
  append(f.end);
  out.append(" confidence ");
  append(f.confidence, std::chars_format::fixed, 2);  // as printf's %.2f
  out.append(" action ").append(dlp::to_string(f.action));
  if (f.example) out.append(" [documentation example]");
  out += '\n';
}

void print_findings_text(const dlp::ScanResult& result, std::ostream& out) {
  std::string text;
  text.reserve(result.findings.size() * 64);
  for (const auto& f : result.findings) append_finding_text(f, text);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

// The CPUs this process may run on: a large input is scanned in that many pieces at once.
unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
}

int exit_status(const dlp::ScanResult& result) {
  if (result.blocked) return kBlocked;
  for (const auto& f : result.findings)
    if (f.action != dlp::Action::allow) return kFindings;
  return kNothingFound;
}

int scan_command(const ScanOptions& o) {
  dlp::Policy policy = dlp::Policy::defaults();
  if (!o.policy_path.empty()) {
    auto loaded = dlp::load_policy_file(o.policy_path);
    if (!loaded) return fail(loaded.error().message);
    policy = std::move(*loaded);
  }
  // The compiled detectors are kept in the user's cache: compiling them is most of what a
  // short scan costs.
  auto scanner = dlp::Scanner::create(policy, dlp::BuildOptions::with_user_cache());
  if (!scanner) return fail(scanner.error().message);

  std::vector<std::string> values = o.literals;
  for (const auto& name : o.literal_envs) {
    const char* value = std::getenv(name.c_str());
    if (!value) return fail("--literal-env " + name + ": not set");
    values.emplace_back(value);
  }
  std::optional<dlp::LiteralSet> literals;
  if (!values.empty()) {
    auto compiled = dlp::LiteralSet::compile(values);
    if (!compiled) return fail("--literal: " + compiled.error().message);
    literals = std::move(*compiled);
  }

  Input file;
  if (!file.open(o.input)) return fail(o.input + ": cannot read");
  const std::string_view input = file.bytes();
  const dlp::ScanResult result =
      scanner->scan(input, {literals ? &*literals : nullptr, dlp::JsonMode::automatic, usable_cpus()});

  if (o.json) {
    nlohmann::ordered_json out{{"findings", nlohmann::ordered_json::array()},
                               {"blocked", result.blocked}};
    for (const auto& f : result.findings) out["findings"].push_back(finding_json(f));
    if (o.redact && !result.blocked) out["redacted"] = scanner->redact(input, result);
    // Invalid UTF-8 in the redacted text becomes U+FFFD; offsets refer to the input bytes.
    std::cout << out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  } else if (o.redact) {
    print_findings_text(result, std::cerr);
    if (result.blocked)
      std::cerr << "airlock scan: blocked: the input holds findings the policy blocks\n";
    else
      std::cout << scanner->redact(input, result);
  } else {
    print_findings_text(result, std::cout);
  }
  std::cout.flush();
  return exit_status(result);
}

}  // namespace

void add_scan_command(CLI::App& app, ExitStatus& status) {
  auto opts = std::make_shared<ScanOptions>();
  auto* cmd = app.add_subcommand(kScanCommand.name, kScanCommand.summary);
  cmd->add_flag("--json", opts->json,
                "Print {\"findings\": [...], \"blocked\": ..., \"redacted\": ...} with byte offsets");
  cmd->add_flag("--redact", opts->redact,
                "Print the input with the policy's actions applied (findings go to stderr)");
  cmd->add_option("--policy", opts->policy_path, "DLP policy file, YAML or JSON (docs/dlp.md)");
  // One value per flag: "--literal A --literal B FILE" (a bare vector option would take FILE).
  cmd->add_option("--literal", opts->literals,
                  "A secret value to find in its usual encodings (repeatable; visible in ps: "
                  "prefer --literal-env)")
      ->allow_extra_args(false);
  cmd->add_option("--literal-env", opts->literal_envs,
                  "Name of an environment variable holding a secret value (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("input", opts->input, "File to scan, or - for stdin (default)");
  cmd->footer("Exit status: 0 nothing found, 1 findings, 2 error, 3 blocked.");
  cmd->callback([opts, &status] { status.code = scan_command(*opts); });
}

}  // namespace airlock::cli
