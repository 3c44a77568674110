#include "egress/rules.hpp"

#include <nlohmann/json.hpp>

namespace airlock::egress {

nlohmann::json to_json(const EgressRecord& r) {
  return {{"host", r.host},       {"port", r.port},         {"address", r.address},
          {"allowed", r.allowed}, {"rule", r.rule},         {"bytes_up", r.bytes_up},
          {"bytes_down", r.bytes_down}, {"ms", r.ms}};
}

}  // namespace airlock::egress
