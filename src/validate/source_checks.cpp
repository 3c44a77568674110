#include "validate/source_checks.hpp"

#include <cctype>
#include <cstdio>
#include <cstdint>
#include <string>

namespace airlock::validate {
namespace {

struct Position {
  int line = 1;
  int col = 1;
};

Position position_of(std::string_view source, std::size_t offset) {
  Position p;
  for (std::size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++p.line;
      p.col = 1;
    } else {
      ++p.col;
    }
  }
  return p;
}

// Decodes one UTF-8 sequence at `i`; returns its length, or 0 when invalid.
std::size_t decode_utf8(std::string_view s, std::size_t i, std::uint32_t& cp) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  std::size_t length;
  std::uint32_t min;
  if ((b0 & 0xE0) == 0xC0) length = 2, cp = b0 & 0x1F, min = 0x80;
  else if ((b0 & 0xF0) == 0xE0) length = 3, cp = b0 & 0x0F, min = 0x800;
  else if ((b0 & 0xF8) == 0xF0) length = 4, cp = b0 & 0x07, min = 0x10000;
  else return 0;
  if (i + length > s.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return length;
}

bool is_bidi_control(std::uint32_t cp) {
  return (cp >= 0x202A && cp <= 0x202E) ||  // LRE RLE PDF LRO RLO
         (cp >= 0x2066 && cp <= 0x2069) ||  // LRI RLI FSI PDI
         cp == 0x200E || cp == 0x200F || cp == 0x061C;  // LRM RLM ALM
}

std::string lower(std::string_view text) {
  std::string out;
  for (char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// PEP 263: a comment on line 1 or 2 matching ^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+).
void check_coding_cookie(std::string_view source, std::vector<Finding>& findings) {
  std::size_t start = 0;
  if (source.substr(0, 3) == "\xEF\xBB\xBF") start = 3;
  for (int line = 1; line <= 2 && start < source.size(); ++line) {
    std::size_t end = source.find('\n', start);
    std::string_view text = source.substr(start, end == std::string_view::npos ? end : end - start);
    std::size_t i = text.find_first_not_of(" \t\f");
    if (i != std::string_view::npos && text[i] == '#') {
      std::size_t at = text.find("coding", i);
      while (at != std::string_view::npos) {
        std::size_t k = at + 6;
        if (k < text.size() && (text[k] == ':' || text[k] == '=')) {
          ++k;
          while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
          std::size_t name_end = k;
          while (name_end < text.size() &&
                 (std::isalnum(static_cast<unsigned char>(text[name_end])) ||
                  text[name_end] == '-' || text[name_end] == '_' || text[name_end] == '.'))
            ++name_end;
          std::string name = lower(text.substr(k, name_end - k));
          if (!name.empty()) {
            bool utf8 = name == "utf-8" || name == "utf8" || name == "utf_8" ||
                        name.rfind("utf-8-", 0) == 0 || name.rfind("utf_8_", 0) == 0;
            if (!utf8)
              findings.push_back({"source-coding-cookie",
                                  "coding declaration \"" + name +
                                      "\": only UTF-8 sources are accepted (other codecs make "
                                      "the interpreter run different text than is shown)",
                                  line, static_cast<int>(at) + 1, Severity::error});
            return;  // the first cookie is the one the interpreter uses
          }
        }
        at = text.find("coding", at + 1);
      }
    } else if (i != std::string_view::npos) {
      return;  // a cookie on line 2 counts only after a comment or blank line 1
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

}  // namespace

std::vector<Finding> check_source_bytes(std::string_view source, const Policy& policy) {
  std::vector<Finding> findings;
  if (source.size() > policy.max_source_bytes) {
    findings.push_back({"source-too-large",
                        "the source is " + std::to_string(source.size()) +
                            " bytes, more than the policy's " +
                            std::to_string(policy.max_source_bytes),
                        0, 0, Severity::error});
    return findings;
  }
  bool reported_nul = false, reported_utf8 = false, reported_bidi = false;
  for (std::size_t i = 0; i < source.size();) {
    if (source[i] == '\0') {
      if (!reported_nul) {
        auto p = position_of(source, i);
        findings.push_back({"source-nul-byte", "a NUL byte in the source", p.line, p.col, Severity::error});
        reported_nul = true;
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    std::size_t length = decode_utf8(source, i, cp);
    if (length == 0) {
      if (!reported_utf8) {
        auto p = position_of(source, i);
        findings.push_back({"source-not-utf8", "bytes that are not valid UTF-8", p.line, p.col,
                            Severity::error});
        reported_utf8 = true;
      }
      ++i;
      continue;
    }
    if (is_bidi_control(cp) && !reported_bidi) {
      auto p = position_of(source, i);
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(cp));
      findings.push_back({"source-bidi-control",
                          std::string("bidirectional control character ") + hex +
                              ": it reorders how the code is displayed (Trojan Source)",
                          p.line, p.col, Severity::error});
      reported_bidi = true;
    }
    i += length;
  }
  check_coding_cookie(source, findings);
  return findings;
}

}  // namespace airlock::validate
