// The JSON Canonicalization Scheme (RFC 8785) for values that are not audit records: the
// arguments an approval is given for (their SHA-256 is what approvers approve). Unlike the
// audit log's canonical form (canonical_json.hpp, integers only, unchanged), it holds every
// JSON value: fractions and exponents are written as ECMAScript writes a double (42.5,
// 1e+21, 1e-7), object members are sorted by their UTF-16 code units.
// One departure: an integer beyond 2^53 keeps all its digits. RFC 8785 rounds it through a
// double, so 9007199254740993 and 9007199254740992 had one text: an approval of the one would
// have covered the other. Within +-2^53 the two forms are the same text.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/result.hpp"

namespace airlock::audit {

// The canonical text of `value`. Errors ("invalid_json"): a string or member name that is not
// valid UTF-8, a number that is not finite, binary data.
Result<std::string> jcs(const nlohmann::json& value);

// A double as ECMAScript's Number.prototype.toString writes it (RFC 8785 3.2.2.3): the
// shortest digits that read back as the same double; -0 is "0".
std::string jcs_number(double value);

}  // namespace airlock::audit
