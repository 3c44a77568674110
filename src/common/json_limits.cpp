#include "common/json_limits.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <limits>
#include <optional>
#include <vector>

#include "common/utf8.hpp"

// RapidJSON's reader finds the tokens (its SSE2 code skips the plain runs of a string 16 bytes
// at a time) and a SAX handler builds the nlohmann value: nlohmann's own lexer goes byte by
// byte and keeps a copy of every token for its error messages, about 100 MB/s on a body that
// is one long string. The value built, and what is refused, are nlohmann's: the differential
// test in tests/unit/common_test.cpp parses each case both ways.
// Not under AddressSanitizer, which reports those reads (GCC defines __SANITIZE_ADDRESS__,
// Clang answers __has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define AIRLOCK_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AIRLOCK_ADDRESS_SANITIZER 1
#endif
#endif
#if defined(__SSE2__) && !defined(AIRLOCK_ADDRESS_SANITIZER)
#define RAPIDJSON_SSE2  // reads aligned 16-byte blocks that may pass the end (never a page)
#endif
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

namespace airlock {
namespace {

template <typename Integer>
bool whole_integer(std::string_view token, Integer& value) {
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  return ec == std::errc() && end == token.data() + token.size();
}

// A JSON number's text as nlohmann's parser makes it: an integer that fits 64 bits is unsigned
// (or signed when negative); anything else is a double, refused past its range (nlohmann's
// "number overflow"); one too small for a double is 0 or a subnormal, as strtod makes it.
std::optional<nlohmann::json> number_value(std::string_view token) {
  if (token.find_first_of(".eE") == std::string_view::npos) {
    std::int64_t negative = 0;
    std::uint64_t positive = 0;
    if (token[0] == '-' ? whole_integer(token, negative) : whole_integer(token, positive))
      return token[0] == '-' ? nlohmann::json(negative) : nlohmann::json(positive);
  }
  double value = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec == std::errc::result_out_of_range) value = std::strtod(std::string(token).c_str(), nullptr);
  else if (ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
  if (!std::isfinite(value)) return std::nullopt;
  return nlohmann::json(value);
}

// Builds the nlohmann value from RapidJSON's events, as nlohmann's parser would: non-negative
// integers unsigned, negative ones signed, the rest (and integers past 64 bits) double; a
// repeated key keeps its last value (unless the builder refuses repeated keys). One difference: a NUL byte outside a string ends
// nlohmann's input ("{} \0 x" is accepted); here any NUL byte makes the text invalid.
class ValueBuilder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, ValueBuilder> {
 public:
  ValueBuilder(std::size_t max_depth, bool unique_keys)
      : max_depth_(max_depth), unique_keys_(unique_keys) {}

  bool Null() { return put(nullptr); }
  bool Bool(bool b) { return put(b); }
  // Numbers come as their text (RapidJSON checked the syntax): its own conversion of long
  // integers with full precision is wrong (184467440737095516156 became -2.0e264).
  bool RawNumber(const char* s, rapidjson::SizeType length, bool) {
    auto value = number_value(std::string_view(s, length));
    return value && put(std::move(*value));
  }
  // RapidJSON does not check the UTF-8 it copies, and encodes a lone "\udc00" escape as a
  // surrogate: the strict check refuses both, as nlohmann does.
  bool String(const char* s, rapidjson::SizeType length, bool) {
    if (!is_valid_utf8(std::string_view(s, length))) return false;  // not valid JSON
    return put(std::string(s, length));
  }
  bool Key(const char* s, rapidjson::SizeType length, bool) {
    if (!is_valid_utf8(std::string_view(s, length))) return false;  // not valid JSON
    key_.assign(s, length);
    if (unique_keys_ && open_.back()->contains(key_)) return duplicate_key_ = true, false;
    return true;
  }
  bool StartObject() { return open(nlohmann::json::object()); }
  bool StartArray() { return open(nlohmann::json::array()); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }

  bool too_deep() const { return too_deep_; }
  bool duplicate_key() const { return duplicate_key_; }
  nlohmann::json take() { return std::move(root_); }

 private:
  // The new value's place: the root, the end of the open array, or the open object's key.
  nlohmann::json* put(nlohmann::json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    nlohmann::json& parent = *open_.back();
    if (parent.is_array()) {
      auto& items = parent.get_ref<nlohmann::json::array_t&>();
      items.push_back(std::move(value));
      return &items.back();
    }
    nlohmann::json& slot = parent.get_ref<nlohmann::json::object_t&>()[key_];
    slot = std::move(value);
    return &slot;
  }
  // nlohmann counts the containers already open when one opens: the root is at depth 0.
  bool open(nlohmann::json empty) {
    if (open_.size() >= max_depth_) return too_deep_ = true, false;
    open_.push_back(put(std::move(empty)));
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  std::size_t max_depth_;
  nlohmann::json root_;
  std::vector<nlohmann::json*> open_;  // stable: a container's parent grows only after it closes
  std::string key_;
  bool unique_keys_;
  bool too_deep_ = false;
  bool duplicate_key_ = false;
};

// nlohmann skips a UTF-8 byte order mark at the start.
std::string_view without_bom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  return text.substr(0, kBom.size()) == kBom ? text.substr(kBom.size()) : text;
}

// `text` is followed by a NUL byte (the SSE2 string scan is for NUL-terminated input).
Result<nlohmann::json> parse_terminated(std::string_view text, std::size_t max_depth,
                                        bool unique_keys = false) {
  auto invalid = [] { return Error::make("invalid_json", "not valid JSON"); };
  text = without_bom(text);
  // A NUL byte is never valid JSON (nor inside a string: a control character), and RapidJSON
  // stops at the first one: one inside would end its input early.
  if (std::memchr(text.data(), '\0', text.size()) != nullptr) return invalid();
  // RapidJSON's string lengths are 32-bit.
  if (text.size() > std::numeric_limits<rapidjson::SizeType>::max()) return invalid();
  rapidjson::StringStream stream(text.data());
  ValueBuilder builder(max_depth, unique_keys);
  rapidjson::Reader reader;
  constexpr unsigned kFlags =
      rapidjson::kParseIterativeFlag | rapidjson::kParseNumbersAsStringsFlag;
  rapidjson::ParseResult parsed = reader.Parse<kFlags>(stream, builder);
  if (builder.too_deep())
    return Error::make("too_deep", "the JSON nests arrays and objects deeper than the limit of " +
                                           std::to_string(max_depth) + " levels");
  if (builder.duplicate_key())
    return Error::make("duplicate_key", "an object names the same member twice");
  if (parsed.IsError()) return invalid();
  return builder.take();
}

}  // namespace

Result<nlohmann::json> parse_json_bounded(const std::string& text, std::size_t max_depth) {
  return parse_terminated(text, max_depth);
}

Result<nlohmann::json> parse_json_bounded(std::string_view text, std::size_t max_depth) {
  return parse_terminated(std::string(text), max_depth);
}

Result<nlohmann::json> parse_json_unique_keys(const std::string& text, std::size_t max_depth) {
  return parse_terminated(text, max_depth, /*unique_keys=*/true);
}

}  // namespace airlock
