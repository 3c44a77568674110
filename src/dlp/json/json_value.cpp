#include "dlp/json/json_value.hpp"

#include <algorithm>
#include <cmath>

#include "common/json_text.hpp"
#include "common/utf8.hpp"
#include "dlp/candidates.hpp"
#include "dlp/findings.hpp"
#include "dlp/redaction.hpp"
#include "dlp/scanner_internal.hpp"

namespace airlock::dlp {

using json = nlohmann::json;

// The decoded text: what decode_strings_in_place makes of dump_compact(value), written from the
// value (dump_compact escapes only '"', '\\' and control characters, one escape per byte, and
// the decoding gives each back: every string's bytes as they are).
class ValueScan::Layout {
 public:
  std::string text;
  std::vector<Slot> slots;

  // False: dump_compact writes this value otherwise (see scan()).
  bool write(json& value) {
    switch (value.type()) {
      case json::value_t::string: {
        auto& s = value.get_ref<std::string&>();
        return string(s, &s);
      }
      case json::value_t::array: return array(value.get_ref<json::array_t&>());
      case json::value_t::object: return object(value.get_ref<json::object_t&>());
      // Written as null, and parsed back from the redacted text as null.
      case json::value_t::number_float: if (!std::isfinite(value.get<double>())) return false; break;
      case json::value_t::binary:
      case json::value_t::discarded: return false;
      default: break;
    }
    append_compact_scalar(value, text);
    return true;
  }

  // Room for the text, so that a long string is copied once (growing by doubling copied it
  // again when the closing quote came).
  static std::size_t estimated_size(const json& value) {
    std::size_t size = 2;
    if (value.is_string()) return size + value.get_ref<const std::string&>().size();
    if (value.is_array())
      for (const json& item : value) size += 1 + estimated_size(item);
    else if (value.is_object())
      for (const auto& [key, item] : value.get_ref<const json::object_t&>()) size += key.size() + 4 + estimated_size(item);
    else size += 24;  // the longest number dump_compact writes
    return size;
  }

 private:
  bool string(const std::string& s, std::string* owner) {
    if (!is_valid_utf8(s)) return false;  // dump_compact writes U+FFFD for what is not UTF-8
    text.push_back('"');
    slots.push_back({text.size(), s.size(), owner});
    text.append(s);
    text.push_back('"');
    return true;
  }
  bool array(json::array_t& items) {
    text.push_back('[');
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) text.push_back(',');
      if (!write(items[i])) return false;
    }
    text.push_back(']');
    return true;
  }
  bool object(json::object_t& members) {
    text.push_back('{');
    bool first = true;
    for (auto& [key, item] : members) {
      if (!first) text.push_back(',');
      first = false;
      if (!string(key, nullptr)) return false;
      text.push_back(':');
      if (!write(item)) return false;
    }
    text.push_back('}');
    return true;
  }
};

namespace {

// `bytes` as dump_compact escapes a string's bytes (valid UTF-8 is written as it is).
bool is_escaped(char c) { return static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\'; }

std::string escaped(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    if (is_escaped(c)) append_json_escape(static_cast<unsigned char>(c), out);
    else out.push_back(c);
  }
  return out;
}

// A replacement that reads as itself in a JSON string: nothing dump_compact would escape and
// nothing the parse of the redacted text would decode, and UTF-8.
bool reads_as_itself(std::string_view replacement) {
  for (char c : replacement)
    if (is_escaped(c)) return false;
  return is_valid_utf8(replacement);
}

bool continuation_at(const std::string& s, std::size_t i) {
  return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
}

}  // namespace

std::optional<ValueScan> ValueScan::scan(const Scanner& scanner, json& value, const ScanOptions& options) {
  // Anything else is scanned as its text by the caller: a string's is one JSON string, which
  // Scanner::scan reads as JSON; a number's, a boolean's or null's has no string to decode.
  if (!value.is_array() && !value.is_object()) return std::nullopt;
  Layout layout;
  layout.text.reserve(Layout::estimated_size(value));
  if (!layout.write(value)) return std::nullopt;

  const Scanner::Compiled& compiled = *scanner.compiled_;
  const LiteralSet::Compiled* literals = options.literals ? &options.literals->compiled() : nullptr;
  std::vector<detail::Candidate> candidates =
      detail::find_candidates(*compiled.detectors, layout.text, literals, std::max(options.threads, 1u));

  // Each candidate's ends, moved to where dump_compact's text has them: past the escapes before.
  ValueScan out;
  std::vector<std::size_t> ends;
  ends.reserve(2 * candidates.size());
  for (const auto& c : candidates) ends.insert(ends.end(), {c.start, c.end});
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  out.offsets_.reserve(ends.size());
  std::size_t extra = 0, counted = 0, slot = 0;  // extra: of the escapes in text[0, counted)
  for (std::size_t at : ends) {
    while (counted < at) {
      while (slot < layout.slots.size() && layout.slots[slot].start + layout.slots[slot].size <= counted) ++slot;
      if (slot == layout.slots.size() || layout.slots[slot].start >= at) break;  // no string before `at`
      const std::size_t from = std::max(counted, layout.slots[slot].start);
      const std::size_t to = std::min(at, layout.slots[slot].start + layout.slots[slot].size);
      extra += json_escape_extra(std::string_view(layout.text).substr(from, to - from));
      counted = to;
    }
    counted = at;
    out.offsets_.emplace_back(at, at + extra);
  }
  auto escaped_offset = [&](std::size_t at) {
    return std::lower_bound(out.offsets_.begin(), out.offsets_.end(), std::make_pair(at, std::size_t{0}))->second;
  };
  for (auto& c : candidates) {
    c.start = escaped_offset(c.start);
    c.end = escaped_offset(c.end);
  }
  out.result_ = detail::settle_result(*compiled.detectors, compiled.policy, std::move(candidates));
  out.slots_ = std::move(layout.slots);
  return out;
}

std::size_t ValueScan::decoded_offset(std::size_t escaped) const {
  return std::lower_bound(offsets_.begin(), offsets_.end(), escaped,
                          [](const auto& entry, std::size_t at) { return entry.second < at; })
      ->first;
}

// The finding's replacement inside the one string value it lies in, computed over its bytes as
// dump_compact's text has them (the mask's last characters, the hash), as the text's redaction does.
bool ValueScan::patch_for(const Finding& finding, const Scanner& scanner, Patch& out) const {
  const std::size_t start = decoded_offset(finding.start), end = decoded_offset(finding.end);
  auto after = std::upper_bound(slots_.begin(), slots_.end(), start,
                                [](std::size_t at, const Slot& s) { return at < s.start; });
  if (after == slots_.begin()) return false;  // before the first string
  const Slot& slot = *(after - 1);
  if (!slot.value || end > slot.start + slot.size) return false;  // in a key, or not in one string
  const std::string& s = *slot.value;
  out.slot = static_cast<std::size_t>(after - 1 - slots_.begin());
  out.start = start - slot.start;
  out.end = end - slot.start;
  if (continuation_at(s, out.start) || continuation_at(s, out.end)) return false;  // cuts a character
  out.replacement.clear();
  detail::append_replacement(finding, escaped(std::string_view(s).substr(out.start, out.end - out.start)),
                             scanner.compiled_->policy.hash_key, out.replacement);
  return reads_as_itself(out.replacement);
}

bool ValueScan::redact_in_place(const Scanner& scanner) {
  std::vector<Patch> patches;  // in text order, as the findings are
  for (const Finding& f : result_.findings) {
    if (f.action == Action::allow) continue;  // the text keeps it as it is
    Patch patch;
    if (!patch_for(f, scanner, patch)) return false;
    patches.push_back(std::move(patch));
  }
  for (std::size_t i = 0; i < patches.size();) {
    std::string& s = *slots_[patches[i].slot].value;
    std::string patched;
    patched.reserve(s.size());
    std::size_t at = 0;
    for (; i < patches.size() && &s == slots_[patches[i].slot].value; ++i) {
      patched.append(s, at, patches[i].start - at).append(patches[i].replacement);
      at = patches[i].end;
    }
    patched.append(s, at);
    s = std::move(patched);
  }
  return true;
}

}  // namespace airlock::dlp
