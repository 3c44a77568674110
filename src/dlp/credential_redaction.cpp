#include "dlp/credential_redaction.hpp"

#include <cctype>

namespace airlock::dlp {
namespace {

bool is_base64_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '-' || c == '_';
}

// What absorb_base64_tails reads after a marker: up to 4 base64 characters, then up to 2 '='.
constexpr std::size_t kTailWindow = 6;

// Where the text that may still change begins: the last marker, when fewer characters than
// its tail window follow it yet (the next chunk decides whether they are a tail).
std::size_t undecided_from(const std::string& text) {
  const std::size_t at = text.rfind(kCredentialMarker);
  if (at == std::string::npos) return text.size();
  return text.size() - (at + kCredentialMarker.size()) < kTailWindow ? at : text.size();
}

}  // namespace

Result<std::shared_ptr<const Scanner>> make_credential_scanner() {
  auto scanner = Scanner::create(Policy::literals_only());
  if (!scanner) return scanner.error();
  return std::make_shared<const Scanner>(std::move(*scanner));
}

void absorb_base64_tails(std::string& text) {
  for (std::size_t at = text.find(kCredentialMarker); at != std::string::npos;
       at = text.find(kCredentialMarker, at + kCredentialMarker.size())) {
    std::size_t end = at + kCredentialMarker.size(), n = 0;
    while (end + n < text.size() && n < 4 && is_base64_char(text[end + n])) ++n;
    if (n == 0 || n == 4) continue;
    std::size_t pad = 0;
    while (end + n + pad < text.size() && pad < 2 && text[end + n + pad] == '=') ++pad;
    text.erase(end, n + pad);
  }
}

bool redact_credential_text(std::string& text, const Scanner& scanner, const ScanOptions& options) {
  if (text.empty()) return false;
  auto found = scanner.scan(text, options);
  if (found.findings.empty()) return false;
  text = scanner.redact(text, found);
  absorb_base64_tails(text);
  return true;
}

Result<CredentialStream> CredentialStream::open(const Scanner& scanner, const LiteralSet& literals) {
  auto scan = scanner.open_stream(&literals);
  if (!scan) return scan.error();
  return CredentialStream(std::move(*scan));
}

StreamOutput CredentialStream::write(std::string_view chunk) { return settle(scan_.write(chunk), false); }

StreamOutput CredentialStream::finish() { return settle(scan_.finish(), true); }

StreamOutput CredentialStream::settle(StreamOutput out, bool at_end) {
  held_ += out.text;
  const std::size_t final_end = at_end ? held_.size() : undecided_from(held_);
  out.text = held_.substr(0, final_end);
  held_.erase(0, final_end);
  absorb_base64_tails(out.text);
  return out;
}

}  // namespace airlock::dlp
