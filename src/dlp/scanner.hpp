// dlp::Scanner: finds PII and secrets in bytes and applies the policy's action to each finding.
//
// Built once from a Policy (the Vectorscan databases are compiled in create() and shared by every
// scan; each concurrent scan borrows its own scratch space). Scans are const and thread-safe.
//
//   auto scanner = dlp::Scanner::create(dlp::Policy::defaults());
//   auto result = scanner->scan(text);                 // findings: detector, span, confidence
//   std::string safe = scanner->redact(text, result);  // [REDACTED:EMAIL], ****1111, [HASH:...]
//
// Streaming: open_stream() returns a StreamScanner that takes chunks and returns the output that
// is final so far; findings and redactions are the same as a one-shot scan of the whole stream.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "dlp/policy.hpp"

namespace airlock::dlp {

struct Finding {
  std::string_view detector;  // detector id, e.g. "credit_card" or "literal_base64"
  Category category = Category::pii;
  std::size_t start = 0;      // byte offsets into the scanned input, [start, end)
  std::size_t end = 0;
  double confidence = 0;      // 0..1 after validators and context words
  Action action = Action::redact;
  bool example = false;       // a value vendors publish in their documentation (not a live secret)

  friend bool operator==(const Finding&, const Finding&) = default;
};

struct ScanResult {
  std::vector<Finding> findings;  // sorted by start, non-overlapping
  bool blocked = false;           // some finding has action block: refuse the payload
};

enum class JsonMode {
  automatic,  // scan string keys and values after unescaping when the input parses as JSON
  off,        // bytes only
};

class LiteralSet;

struct ScanOptions {
  const LiteralSet* literals = nullptr;  // registered secret values, see LiteralSet
  JsonMode json = JsonMode::automatic;
  // Up to this many threads scan pieces of a large input at once (each at least 1 MiB, split
  // after a line break); the findings are the same as with one.
  unsigned threads = 1;
};

// Secret values registered by the caller (the credentials injected into one sandbox). Each is
// found as itself and in its usual encodings: base64 (standard and URL-safe, also at any offset
// inside a longer base64 text), hex (lower and upper case) and URL-encoded.
class LiteralSet {
 public:
  // Values shorter than 4 bytes are rejected: they would match everywhere.
  static Result<LiteralSet> compile(const std::vector<std::string>& values);

  struct Compiled;  // the scanner's own (dlp/literals.hpp)
  const Compiled& compiled() const { return *compiled_; }

 private:
  explicit LiteralSet(std::shared_ptr<const Compiled> compiled) : compiled_(std::move(compiled)) {}
  std::shared_ptr<const Compiled> compiled_;
};

struct StreamOutput {
  std::string text;               // output that is now final, with the actions applied
  std::vector<Finding> findings;  // findings settled by this call (offsets are stream offsets)
  bool blocked = false;           // a block finding was settled; no text is returned after it
};

class StreamScanner;
class ValueScan;

// How a scanner is built (not what it finds: that is the Policy).
struct BuildOptions {
  // A directory of compiled databases kept between processes (dlp/vectorscan/database_cache.hpp); ""
  // compiles every time.
  std::string database_cache;

  // The user's cache: AIRLOCK_DLP_CACHE_DIR ("off": none), else $XDG_CACHE_HOME/airlock/dlp,
  // else ~/.cache/airlock/dlp.
  static BuildOptions with_user_cache();
};

class Scanner {
 public:
  static Result<Scanner> create(const Policy& policy, const BuildOptions& build = {});

  ScanResult scan(std::string_view data, const ScanOptions& options = {}) const;

  // The input with every finding replaced according to its action. Findings with action block
  // are replaced as if redacted: a caller that honours `blocked` never shows this text.
  std::string redact(std::string_view data, const ScanResult& result) const;

  // Streams scan bytes only (no JSON unescaping: a JSON document needs the whole input). The
  // stream database is compiled on the first call.
  Result<StreamScanner> open_stream(const LiteralSet* literals = nullptr) const;

  const Policy& policy() const;

  struct Compiled;

 private:
  friend class ValueScan;  // dlp/json/json_value.hpp: scans a parsed JSON value where it is
  explicit Scanner(std::shared_ptr<const Compiled> compiled) : compiled_(std::move(compiled)) {}
  std::shared_ptr<const Compiled> compiled_;
};

class StreamScanner {
 public:
  StreamScanner(StreamScanner&&) noexcept;
  StreamScanner& operator=(StreamScanner&&) noexcept;
  ~StreamScanner();

  StreamOutput write(std::string_view chunk);
  StreamOutput finish();  // end of stream: settles and returns everything still held back

  // Bytes buffered: what is held back (a match may still end later) and the look-behind kept
  // for context words. Bounded by the longest possible match, not by the stream's length.
  std::size_t buffered_bytes() const;

  struct State;

 private:
  friend class Scanner;
  explicit StreamScanner(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace airlock::dlp
