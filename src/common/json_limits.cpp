#include "common/json_limits.hpp"

namespace airlock {

Result<nlohmann::json> parse_json_bounded(std::string_view text, std::size_t max_depth) {
  // nlohmann's callback sees the depth of every event; returning false on an opening bracket
  // past the limit is not enough (it would only discard that element), so the flag stops it.
  bool too_deep = false;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (too_deep) return false;
    bool opens = event == nlohmann::json::parse_event_t::object_start ||
                 event == nlohmann::json::parse_event_t::array_start;
    if (opens && static_cast<std::size_t>(depth) >= max_depth) too_deep = true;
    return !too_deep;
  };
  nlohmann::json value = nlohmann::json::parse(text, callback, /*allow_exceptions=*/false);
  if (too_deep)
    return Error::make("too_deep", "the JSON nests arrays and objects deeper than the limit of " +
                                           std::to_string(max_depth) + " levels");
  if (value.is_discarded()) return Error::make("invalid_json", "not valid JSON");
  return value;
}

}  // namespace airlock
