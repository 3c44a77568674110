#include "dlp/redaction.hpp"


#include "common/digest.hpp"
#include "dlp/detectors.hpp"

namespace airlock::dlp::detail {
namespace {

constexpr std::size_t kMaskKeep = 4;
constexpr std::size_t kMaskMinimum = 8;

bool starts_character(unsigned char c) { return (c & 0xC0) != 0x80; }  // not a UTF-8 continuation

std::size_t count_characters(std::string_view text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += starts_character(c);
  return n;
}

void append_mask(std::string_view value, std::string& out) {
  std::size_t characters = count_characters(value);
  std::size_t keep = characters >= kMaskMinimum ? kMaskKeep : 0;
  // Byte offset where the kept tail starts.
  std::size_t tail = value.size();
  for (std::size_t seen = 0; seen < keep && tail > 0;) {
    --tail;
    if (starts_character(static_cast<unsigned char>(value[tail]))) ++seen;
  }
  out.append(characters - keep, '*');
  out.append(value.substr(tail));
}

}  // namespace

std::string_view label_of(std::string_view detector_id) {
  if (const DetectorSpec* spec = find_detector(detector_id)) return spec->label;
  return "CREDENTIAL";  // the literal detectors
}


void append_replacement(const Finding& finding, std::string_view value, std::string_view hash_key,
                        std::string& out) {
  switch (finding.action) {
    case Action::allow: out.append(value); return;
    case Action::mask: append_mask(value, out); return;
    case Action::hash:
      out.append("[HASH:").append(label_of(finding.detector)).append(":");
      out.append(hmac_sha256_hex(hash_key, value).substr(0, 16)).append("]");
      return;
    case Action::redact:
    case Action::block:
      out.append("[REDACTED:").append(label_of(finding.detector)).append("]");
      return;
  }
}

void append_with_actions(std::string_view bytes, std::size_t base, std::span<const Finding> findings,
                         std::string_view hash_key, std::string& out) {
  std::size_t at = 0;
  for (const Finding& f : findings) {
    std::size_t start = f.start - base, end = f.end - base;
    out.append(bytes.substr(at, start - at));
    append_replacement(f, bytes.substr(start, end - start), hash_key, out);
    at = end;
  }
  out.append(bytes.substr(at));
}

}  // namespace airlock::dlp::detail
