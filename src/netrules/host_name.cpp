#include "netrules/host_name.hpp"

#include <idn2.h>

#include <cctype>

namespace airlock::netrules {

Result<std::string> normalize_host_name(std::string_view input) {
  std::string name(input);
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name.empty() || name.size() > 253)
    return Error::make("invalid_host", "host name is empty or longer than 253 bytes");
  for (unsigned char c : name)
    if (c < 0x21 || c == 0x7f || c == '/' || c == '\\' || c == '@' || c == ':' || c == '%')
      return Error::make("invalid_host", "host name contains a character no host name has");
  char* ascii = nullptr;
  int rc = idn2_to_ascii_8z(name.c_str(), &ascii, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
  if (rc != IDN2_OK) {
    // Plain ASCII names with underscores and the like are rejected by IDNA; be as strict.
    return Error::make("invalid_host", std::string("not a valid host name: ") + idn2_strerror(rc));
  }
  std::string out(ascii);
  idn2_free(ascii);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t start = 0;
  while (start <= out.size()) {
    std::size_t end = out.find('.', start);
    if (end == std::string::npos) end = out.size();
    std::string_view label(out.data() + start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return Error::make("invalid_host", "host name has an empty or malformed label");
    for (char c : label)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-')
        return Error::make("invalid_host", "host name has a character outside letters, digits and '-'");
    start = end + 1;
  }
  return out;
}

}  // namespace airlock::netrules
