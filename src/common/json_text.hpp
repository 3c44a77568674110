// A JSON value as compact text, the bytes nlohmann's dump(-1, ' ', false, replace) writes, at
// memory speed: nlohmann's serializer decodes every byte of every string (about 150 MB/s), and
// the DLP stages turn a 1 MiB argument into text on every call.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace airlock {

// Strings that are valid UTF-8 are escaped here (8 bytes at a time where nothing needs an
// escape); everything else (numbers with a fraction, invalid UTF-8, binary values) is written
// by nlohmann, so the text is the same byte for byte.
std::string dump_compact(const nlohmann::json& value);

// How many bytes more than `bytes` (a string's, valid UTF-8) dump_compact writes for them: the
// escapes' extra bytes, 16 bytes at a time.
std::size_t json_escape_extra(std::string_view bytes);

// Appends a value that is not a string, an array or an object as dump_compact writes it.
void append_compact_scalar(const nlohmann::json& value, std::string& out);

// Appends the JSON escape of `c`, one of the characters a JSON string must escape (a control
// character, '"' or '\\'): the short forms where JSON has one, else \u00XX in lower case.
void append_json_escape(unsigned char c, std::string& out);

}  // namespace airlock
