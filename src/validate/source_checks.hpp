// Checks on the raw bytes of a source, before any parsing: the tricks that make the code a
// reviewer (or a model) reads differ from the code the interpreter runs.
//   source-too-large      larger than the policy's max_source_bytes
//   source-nul-byte       a NUL byte
//   source-not-utf8       bytes that are not UTF-8
//   source-bidi-control   Unicode bidirectional controls (Trojan Source, CVE-2021-42574)
//   source-coding-cookie  a coding declaration naming anything but UTF-8
#pragma once

#include <string_view>
#include <vector>

#include "validate/policy.hpp"
#include "validate/validate.hpp"

namespace airlock::validate {

std::vector<Finding> check_source_bytes(std::string_view source, const Policy& policy);

}  // namespace airlock::validate
