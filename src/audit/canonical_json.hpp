// The canonical JSON form audit records are hashed in (docs/audit.md, "Canonical form"):
// objects with keys sorted by their UTF-8 bytes, no insignificant whitespace, integers only
// (no fractions or exponents), strings as valid UTF-8 with the minimal RFC 8785 escapes.
// One value has exactly one canonical text, so a record's hash depends only on its content.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.hpp"

namespace airlock::audit {

// The canonical text of `value`. Errors (code "invalid_record"): a floating-point number,
// a string or key that is not valid UTF-8, binary data.
Result<std::string> canonical_json(const nlohmann::json& value);

// What a canonical form decides; the rest (literals, integers with all their digits, strings
// as below, no whitespace) both forms share: this one and RFC 8785's (jcs.hpp).
struct CanonicalForm {
  const char* error_code;  // of every error
  // Appends a floating-point number's text, or says why it has none.
  Status (*number_float)(const nlohmann::json& value, std::string& out);
  // Sorts an object's member names; null: UTF-8 byte order.
  void (*order_members)(std::vector<const std::string*>& names);
};
Status append_in_form(const nlohmann::json& value, const CanonicalForm& form, std::string& out);

// Appends the canonical JSON string literal for `text` (quotes included) to `out`; false when
// `text` is not valid UTF-8.
bool append_canonical_string(std::string_view text, std::string& out);

// `text` with every invalid UTF-8 sequence replaced by U+FFFD, for text from outside (tool
// output, redacted input) that must go into a record.
std::string to_valid_utf8(std::string_view text);

// One member of an object whose value is already canonical text.
struct CanonicalMember {
  std::string key;
  std::string value;  // canonical JSON text
};

// Joins members into a canonical object: sorts them by key bytes. Keys must be distinct and
// valid UTF-8 (the caller's members come from canonical_json or are fixed ASCII names).
std::string canonical_object(std::vector<CanonicalMember> members);

// The raw text of a top-level member's value in a compact JSON object (`"index":42` gives
// "42"), found in one pass without parsing the whole record: the verifier reads "index" and
// "prev" this way. nullopt when the key is absent or the text is not well-formed up to that
// member. Keys are compared as written (escapes are not decoded), which is exact for the
// plain ASCII keys the log looks up.
std::optional<std::string_view> find_top_level_member(std::string_view object_text,
                                                      std::string_view key);

}  // namespace airlock::audit
