#include "audit/canonical_json.hpp"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/json_text.hpp"
#include "common/utf8.hpp"

namespace airlock::audit {
namespace {

Status append_member(const std::string& name, const nlohmann::json& member, const CanonicalForm& form, std::string& out) {
  if (!append_canonical_string(name, out)) return Error::make(form.error_code, "a member name is not valid UTF-8");
  out += ':';
  return append_in_form(member, form, out);
}

Status append_object(const nlohmann::json& value, const CanonicalForm& form, std::string& out) {
  out += '{';
  bool first = true;
  auto next = [&](const std::string& name, const nlohmann::json& member) {
    if (!first) out += ',';
    first = false;
    return append_member(name, member, form, out);
  };
  if (!form.order_members) {
    // nlohmann::json keeps members in a std::map<std::string, ...>: std::string compares as
    // unsigned bytes, which is the byte order already (no copy on the audit log's path).
    for (const auto& [name, member] : value.items())
      if (auto status = next(name, member); !status) return status;
  } else {
    std::vector<const std::string*> names;
    names.reserve(value.size());
    for (const auto& [name, member] : value.items()) {
      (void)member;
      names.push_back(&name);
    }
    form.order_members(names);
    for (const auto* name : names)
      if (auto status = next(*name, value.at(*name)); !status) return status;
  }
  out += '}';
  return {};
}

// The audit log's form: a number with a fraction or an exponent has no canonical text.
Status refuse_float(const nlohmann::json& value, std::string&) {
  return Error::make("invalid_record", "canonical JSON has integers only, found " + value.dump());
}

const CanonicalForm kAuditForm{"invalid_record", &refuse_float, nullptr};

}  // namespace

bool append_canonical_string(std::string_view text, std::string& out) {
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    // A run of printable ASCII that needs no escape goes in with one append (records are
    // mostly such text; byte by byte this was the largest cost of an append's caller).
    std::size_t run = i;
    while (run < text.size()) {
      auto b = static_cast<std::uint8_t>(text[run]);
      if (b < 0x20 || b >= 0x80 || b == '"' || b == '\\') break;
      ++run;
    }
    if (run > i) {
      out.append(text.data() + i, run - i);
      i = run;
      continue;
    }
    auto c = static_cast<std::uint8_t>(text[i]);
    if (c >= 0x80) {
      std::size_t length = utf8_sequence_length(text, i);
      if (length == 0) return false;
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    append_json_escape(c, out);  // a control character, '"' or '\\'
    ++i;
  }
  out += '"';
  return true;
}

std::string to_valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

Status append_in_form(const nlohmann::json& value, const CanonicalForm& form, std::string& out) {
  using Type = nlohmann::json::value_t;
  switch (value.type()) {
    case Type::null: out += "null"; return {};
    case Type::boolean: out += value.get<bool>() ? "true" : "false"; return {};
    // Integers with all their digits (in JCS, within 2^53 the same text as the double's).
    case Type::number_integer: out += std::to_string(value.get<std::int64_t>()); return {};
    case Type::number_unsigned: out += std::to_string(value.get<std::uint64_t>()); return {};
    case Type::number_float: return form.number_float(value, out);
    case Type::string:
      if (!append_canonical_string(value.get_ref<const std::string&>(), out))
        return Error::make(form.error_code, "a string is not valid UTF-8");
      return {};
    case Type::array: {
      out += '[';
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (i > 0) out += ',';
        if (auto status = append_in_form(value[i], form, out); !status) return status;
      }
      out += ']';
      return {};
    }
    case Type::object: return append_object(value, form, out);
    case Type::binary:
    case Type::discarded: break;
  }
  return Error::make(form.error_code, "canonical JSON has no form for binary values");
}

Result<std::string> canonical_json(const nlohmann::json& value) {
  std::string out;
  if (auto status = append_in_form(value, kAuditForm, out); !status) return status.error();
  return out;
}

std::string canonical_object(std::vector<CanonicalMember> members) {
  std::sort(members.begin(), members.end(),
            [](const CanonicalMember& a, const CanonicalMember& b) { return a.key < b.key; });
  std::string out = "{";
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out += ',';
    append_canonical_string(members[i].key, out);
    out += ':';
    out += members[i].value;
  }
  out += '}';
  return out;
}

namespace {

// A cursor over untrusted compact JSON text: every step checks bounds, and a malformed input
// ends the scan (returns false) instead of reading past the end.
class CompactJsonScanner {
 public:
  explicit CompactJsonScanner(std::string_view text) : text_(text) {}

  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool consume(char c) {
    if (!at(c)) return false;
    ++pos_;
    return true;
  }
  std::size_t position() const { return pos_; }

  // Skips a string literal; `raw` receives its text between the quotes, undecoded.
  bool skip_string(std::string_view& raw) {
    if (!consume('"')) return false;
    std::size_t start = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '"') {
        raw = text_.substr(start, pos_ - start);
        ++pos_;
        return true;
      }
      pos_ += (c == '\\') ? 2 : 1;
    }
    return false;
  }

  // Skips one value of any kind, nested containers included.
  bool skip_value() {
    if (pos_ >= text_.size()) return false;
    char c = text_[pos_];
    if (c == '"') {
      std::string_view ignored;
      return skip_string(ignored);
    }
    if (c == '{' || c == '[') return skip_container();
    std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' && text_[pos_] != ']')
      ++pos_;
    return pos_ > start;
  }

 private:
  bool skip_container() {
    int depth = 0;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '"') {
        std::string_view ignored;
        if (!skip_string(ignored)) return false;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      ++pos_;
      if (depth == 0) return true;
    }
    return false;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::optional<std::string_view> find_top_level_member(std::string_view object_text,
                                                      std::string_view key) {
  CompactJsonScanner scan(object_text);
  if (!scan.consume('{')) return std::nullopt;
  if (scan.at('}')) return std::nullopt;
  while (true) {
    std::string_view member_key;
    if (!scan.skip_string(member_key) || !scan.consume(':')) return std::nullopt;
    std::size_t value_start = scan.position();
    if (!scan.skip_value()) return std::nullopt;
    if (member_key == key) return object_text.substr(value_start, scan.position() - value_start);
    if (scan.consume(',')) continue;
    return std::nullopt;  // '}' (key absent) or malformed
  }
}

}  // namespace airlock::audit
