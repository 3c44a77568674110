// Credential values taken out of text, whatever the DLP policy says of anything else: a tool
// call's (pipeline/stages/credentials.cpp, on the finished result) and a session's (its execs'
// output and its file downloads, as they stream). The values are a LiteralSet: each is found
// as itself and in its base64, hex and URL-encoded forms, and replaced with
// [REDACTED:CREDENTIAL] (docs/credentials.md, "Where a credential never is").
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "dlp/scanner.hpp"

namespace airlock::dlp {

inline constexpr std::string_view kCredentialMarker = "[REDACTED:CREDENTIAL]";

// A scanner that finds nothing but the registered values, and always redacts them
// (Policy::literals_only).
Result<std::shared_ptr<const Scanner>> make_credential_scanner();

// DLP finds a value's base64 form by its whole 4-character groups; the last 1 to 3
// characters (and padding) of a standalone encoding still carry bits of the value's last
// bytes. A marker followed by such a short tail, and then by no more base64, absorbs it:
// at worst three characters of the text after a raw value are redacted with it.
void absorb_base64_tails(std::string& text);

// Redacts `text` in place (`options` names the values); true when something was found.
bool redact_credential_text(std::string& text, const Scanner& scanner, const ScanOptions& options);

// The same for a stream of bytes (an exec's stdout, a downloaded file): a value split across
// two chunks is still found, and a base64 tail that comes in the next chunk is still absorbed.
class CredentialStream {
 public:
  // `scanner` from make_credential_scanner(); `literals` the values.
  static Result<CredentialStream> open(const Scanner& scanner, const LiteralSet& literals);
  StreamOutput write(std::string_view chunk);
  StreamOutput finish();
  std::size_t buffered_bytes() const { return scan_.buffered_bytes() + held_.size(); }  // held back

 private:
  explicit CredentialStream(StreamScanner scan) : scan_(std::move(scan)) {}
  StreamOutput settle(StreamOutput out, bool at_end);
  StreamScanner scan_;
  std::string held_;  // redacted text after a marker whose tail is not known yet
};

}  // namespace airlock::dlp
