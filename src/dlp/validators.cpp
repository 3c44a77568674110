#include "dlp/validators.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

namespace airlock::dlp::detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_alpha(char c) { return is_upper(c) || is_lower(c); }
char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

// The digits of a short value, without allocating (values here are at most a few dozen bytes).
class Digits {
 public:
  explicit Digits(std::string_view text) {
    for (char c : text)
      if (is_digit(c) && size_ < sizeof buffer_) buffer_[size_++] = c;
  }
  operator std::string_view() const { return {buffer_, size_}; }  // NOLINT: a view of the digits
  std::size_t size() const { return size_; }
  char operator[](std::size_t i) const { return buffer_[i]; }
  std::string_view substr(std::size_t pos, std::size_t n) const { return std::string_view(*this).substr(pos, n); }
  void drop_first() {
    std::copy(buffer_ + 1, buffer_ + size_, buffer_);
    --size_;
  }

 private:
  char buffer_[64];
  std::size_t size_ = 0;
};

Digits digits_of(std::string_view text) { return Digits(text); }

int number_of(std::string_view digits) {
  int value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  return value;
}

bool all_same(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) { return c == text[0]; });
}

bool contains_ci(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    std::size_t j = 0;
    while (j < needle.size() && to_lower(haystack[i + j]) == needle[j]) ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

// Values that documentation, tutorials and templates use in place of a real secret.
bool looks_like_placeholder(std::string_view value) {
  static constexpr std::array<std::string_view, 9> kMarkers{
      "example", "xxxxxxxx", "changeme", "your_", "your-", "placeholder", "dummy", "redacted", "<"};
  for (auto marker : kMarkers)
    if (contains_ci(value, marker)) return true;
  return all_same(value);
}

// Published in vendors' documentation and in countless tutorials.
constexpr std::array<std::string_view, 6> kDocumentationValues{
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",  // GitHub docs, token scanning
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
    "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",  // jwt.io
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",  // Stripe docs
    "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
};

bool is_documentation_value(std::string_view value) {
  return std::find(kDocumentationValues.begin(), kDocumentationValues.end(), value) !=
         kDocumentationValues.end();
}

// Card numbers the card networks publish for testing payment integrations.
constexpr std::array<std::string_view, 12> kTestCardNumbers{
    "4111111111111111", "4242424242424242", "4012888888881881", "4000056655665556",
    "5555555555554444", "5105105105105100", "2223003122003222", "378282246310005",
    "371449635398431",  "6011111111111117", "3530111333300000", "30569309025904"};

bool in_range(std::string_view digits, int prefix_length, int low, int high) {
  if (static_cast<int>(digits.size()) < prefix_length) return false;
  int prefix = number_of(digits.substr(0, static_cast<std::size_t>(prefix_length)));
  return prefix >= low && prefix <= high;
}

// Issuer identification number ranges of the major networks (ISO/IEC 7812 assignments).
bool has_card_network_prefix(std::string_view d) {
  return d[0] == '4'                                     // Visa
         || in_range(d, 2, 51, 55) || in_range(d, 4, 2221, 2720)  // Mastercard
         || in_range(d, 2, 34, 34) || in_range(d, 2, 37, 37)      // American Express
         || in_range(d, 4, 6011, 6011) || in_range(d, 3, 644, 649) ||
         in_range(d, 2, 65, 65)                                     // Discover
         || in_range(d, 3, 300, 305) || in_range(d, 2, 36, 36) ||
         in_range(d, 2, 38, 39)                                     // Diners Club
         || in_range(d, 2, 35, 35) || in_range(d, 4, 1800, 1800) ||
         in_range(d, 4, 2131, 2131)                                 // JCB
         || in_range(d, 2, 62, 62)                                  // UnionPay
         || in_range(d, 4, 2200, 2204)                              // Mir
         || in_range(d, 2, 50, 50) || in_range(d, 2, 56, 58) ||
         in_range(d, 2, 60, 69);                                    // Maestro and others
}

constexpr std::array<std::string_view, 12> kMonths{"jan", "feb", "mar", "apr", "may", "jun",
                                                   "jul", "aug", "sep", "oct", "nov", "dec"};

int month_from_name(std::string_view word) {
  if (word.size() < 3) return 0;
  std::string lower;
  for (char c : word.substr(0, 3)) lower.push_back(to_lower(c));
  for (std::size_t i = 0; i < kMonths.size(); ++i)
    if (lower == kMonths[i]) return static_cast<int>(i) + 1;
  return 0;
}

bool plausible_date(int year, int month, int day) {
  return year >= 1900 && year <= 2100 && month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

int base64_value(char c) {
  if (is_upper(c)) return c - 'A';
  if (is_lower(c)) return c - 'a' + 26;
  if (is_digit(c)) return c - '0' + 52;
  if (c == '-' || c == '+') return 62;
  if (c == '_' || c == '/') return 63;
  return -1;
}

}  // namespace

bool luhn_valid(std::string_view digits) {
  if (digits.empty()) return false;
  int sum = 0;
  bool double_it = false;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (!is_digit(*it)) return false;
    int d = *it - '0';
    if (double_it) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double_it = !double_it;
  }
  return sum % 10 == 0;
}

namespace {

// ISO 13616 IBAN registry: country code and total length.
struct IbanCountry {
  std::string_view country;
  int length;
};
constexpr std::array<IbanCountry, 88> kIbanCountries{{
    {"AD", 24}, {"AE", 23}, {"AL", 28}, {"AT", 20}, {"AZ", 28}, {"BA", 20}, {"BE", 16},
    {"BG", 22}, {"BH", 22}, {"BI", 27}, {"BR", 29}, {"BY", 28}, {"CH", 21}, {"CR", 22},
    {"CY", 28}, {"CZ", 24}, {"DE", 22}, {"DJ", 27}, {"DK", 18}, {"DO", 28}, {"EE", 20},
    {"EG", 29}, {"ES", 24}, {"FI", 18}, {"FK", 18}, {"FO", 18}, {"FR", 27}, {"GB", 22},
    {"GE", 22}, {"GI", 23}, {"GL", 18}, {"GR", 27}, {"GT", 28}, {"HR", 21}, {"HU", 28},
    {"IE", 22}, {"IL", 23}, {"IQ", 23}, {"IS", 26}, {"IT", 27}, {"JO", 30}, {"KW", 30},
    {"KZ", 20}, {"LB", 28}, {"LC", 32}, {"LI", 21}, {"LT", 20}, {"LU", 20}, {"LV", 21},
    {"LY", 25}, {"MC", 27}, {"MD", 24}, {"ME", 22}, {"MK", 19}, {"MN", 20}, {"MR", 27},
    {"MT", 31}, {"MU", 30}, {"NI", 28}, {"NL", 18}, {"NO", 15}, {"OM", 23}, {"PK", 24},
    {"PL", 28}, {"PS", 29}, {"PT", 25}, {"QA", 29}, {"RO", 24}, {"RS", 22}, {"RU", 33},
    {"SA", 24}, {"SC", 31}, {"SD", 18}, {"SE", 24}, {"SI", 19}, {"SK", 24}, {"SM", 27},
    {"SO", 23}, {"ST", 25}, {"SV", 28}, {"TL", 23}, {"TN", 24}, {"TR", 26}, {"UA", 29},
    {"VA", 22}, {"VG", 24}, {"XK", 20}, {"YE", 30},
}};

// The registry as a 26 x 26 table (looked up for every "two letters, two digits" in the data).
constexpr std::array<std::uint8_t, 26 * 26> make_iban_length_table() {
  std::array<std::uint8_t, 26 * 26> table{};
  for (const auto& c : kIbanCountries)
    table[static_cast<std::size_t>((c.country[0] - 'A') * 26 + (c.country[1] - 'A'))] =
        static_cast<std::uint8_t>(c.length);
  return table;
}
constexpr auto kIbanLength = make_iban_length_table();

}  // namespace

int iban_length_for_country(std::string_view cc) {
  if (cc.size() != 2 || !is_alpha(cc[0]) || !is_alpha(cc[1])) return 0;
  int first = (cc[0] | 0x20) - 'a', second = (cc[1] | 0x20) - 'a';
  return kIbanLength[static_cast<std::size_t>(first * 26 + second)];
}

bool iban_checksum_valid(std::string_view iban) {
  if (iban.size() < 5) return false;
  // Move the first four characters to the end, letters become 10..35, the number mod 97 is 1.
  int remainder = 0;
  auto feed = [&remainder](char c) {
    if (is_digit(c)) {
      remainder = (remainder * 10 + (c - '0')) % 97;
    } else if (is_alpha(c)) {
      int value = to_lower(c) - 'a' + 10;
      remainder = (remainder * 100 + value) % 97;
    } else {
      return false;
    }
    return true;
  };
  for (std::size_t i = 4; i < iban.size(); ++i)
    if (!feed(iban[i])) return false;
  for (std::size_t i = 0; i < 4; ++i)
    if (!feed(iban[i])) return false;
  return remainder == 1;
}

bool ssn_valid(std::string_view area, std::string_view group, std::string_view serial) {
  if (area.size() != 3 || group.size() != 2 || serial.size() != 4) return false;
  int a = number_of(area), g = number_of(group), s = number_of(serial);
  if (a == 0 || a == 666 || a >= 900 || g == 0 || s == 0) return false;
  // Numbers made public (the Woolworth wallet card, SSA advertising, the usual sample).
  std::string all = std::string(area) + std::string(group) + std::string(serial);
  static constexpr std::array<std::string_view, 4> kKnownFake{"078051120", "219099999",
                                                              "123456789", "987654320"};
  for (auto fake : kKnownFake)
    if (all == fake) return false;
  return !all_same(all);
}

bool nanp_valid(std::string_view area_code, std::string_view exchange) {
  if (area_code.size() != 3 || exchange.size() != 3) return false;
  // NPA: [2-9][0-8][0-9], not N11 (service codes); NXX: [2-9][0-9][0-9], not N11.
  if (area_code[0] < '2' || area_code[1] == '9') return false;
  if (area_code[1] == '1' && area_code[2] == '1') return false;
  if (exchange[0] < '2') return false;
  if (exchange[1] == '1' && exchange[2] == '1') return false;
  return true;
}

double shannon_entropy(std::string_view text) {
  if (text.empty()) return 0;
  std::array<unsigned, 256> counts{};
  for (unsigned char c : text) ++counts[c];
  double entropy = 0;
  const double n = static_cast<double>(text.size());
  for (unsigned count : counts) {
    if (count == 0) continue;
    double p = count / n;
    entropy -= p * std::log2(p);
  }
  return entropy;
}

bool base64url_decodes_to_json_object(std::string_view text) {
  std::string decoded;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    int v = base64_value(c);
    if (v < 0) return false;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      decoded.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  auto first = decoded.find_first_not_of(" \t\r\n");
  return first != std::string::npos && decoded[first] == '{' &&
         (decoded.find("\"alg\"") != std::string::npos || decoded.find("\"typ\"") != std::string::npos);
}

bool validate_email(std::string_view value, const ValidatorSettings&, Assessment&) {
  auto at = value.find('@');
  if (at == std::string_view::npos || at == 0) return false;
  auto local = value.substr(0, at), domain = value.substr(at + 1);
  if (local.front() == '.' || local.back() == '.' || local.find("..") != std::string_view::npos)
    return false;
  // Each domain label starts and ends with a letter or digit.
  std::size_t label_start = 0;
  for (std::size_t i = 0; i <= domain.size(); ++i) {
    if (i == domain.size() || domain[i] == '.') {
      auto label = domain.substr(label_start, i - label_start);
      if (label.empty() || label.front() == '-' || label.back() == '-') return false;
      label_start = i + 1;
    }
  }
  return true;
}

bool validate_credit_card(std::string_view value, const ValidatorSettings&, Assessment& out) {
  const Digits kept = digits_of(value);
  const std::string_view digits = kept;
  if (digits.size() < 12 || digits.size() > 19) return false;
  if (!has_card_network_prefix(digits) || !luhn_valid(digits) || all_same(digits))
    return false;
  out.example = std::find(kTestCardNumbers.begin(), kTestCardNumbers.end(), digits) !=
                kTestCardNumbers.end();
  return true;
}

bool validate_iban(std::string_view value, const ValidatorSettings&, Assessment&) {
  std::string compact;
  for (char c : value)
    if (c != ' ') compact.push_back(c);
  int expected = iban_length_for_country(compact.substr(0, 2));
  return expected != 0 && static_cast<int>(compact.size()) == expected &&
         iban_checksum_valid(compact);
}

bool validate_us_ssn(std::string_view value, const ValidatorSettings&, Assessment&) {
  Digits digits = digits_of(value);
  if (digits.size() != 9) return false;
  std::string_view d = digits;
  return ssn_valid(d.substr(0, 3), d.substr(3, 2), d.substr(5, 4));
}

bool validate_ipv4(std::string_view value, const ValidatorSettings&, Assessment& out) {
  std::array<int, 4> octets{};
  std::size_t index = 0, digits_in_octet = 0;
  for (char c : value) {
    if (c == '.') {
      if (digits_in_octet == 0 || ++index >= 4) return false;
      digits_in_octet = 0;
      continue;
    }
    if (!is_digit(c)) return false;
    // A leading zero ("01") is a version number or a date, not an address.
    if (digits_in_octet == 1 && octets[index] == 0) return false;
    octets[index] = octets[index] * 10 + (c - '0');
    if (++digits_in_octet > 3 || octets[index] > 255) return false;
  }
  if (index != 3 || digits_in_octet == 0) return false;
  // RFC 5737 documentation ranges.
  bool documentation = (octets[0] == 192 && octets[1] == 0 && octets[2] == 2) ||
                       (octets[0] == 198 && octets[1] == 51 && octets[2] == 100) ||
                       (octets[0] == 203 && octets[1] == 0 && octets[2] == 113);
  out.example = documentation;
  // Unspecified, loopback and masks identify nobody.
  if (octets[0] == 0 || octets[0] == 127 || octets[0] == 255) out.confidence = 0.3;
  return true;
}

bool validate_ipv6(std::string_view value, const ValidatorSettings&, Assessment& out) {
  // Eight groups, or fewer with "::" (times like 12:34:56 have neither).
  if (value.size() > 45 || (value.find("::") == std::string_view::npos &&
                            std::count(value.begin(), value.end(), ':') < 7))
    return false;
  std::string text(value);
  unsigned char address[16];
  if (inet_pton(AF_INET6, text.c_str(), address) != 1) return false;
  // "a::b" and "::1" are too short to tell from code ("std::max"); ask for four hex digits in
  // at least two groups.
  int hex_digits = 0, groups = 0;
  bool in_group = false;
  for (char c : value) {
    bool hex = is_digit(c) || (to_lower(c) >= 'a' && to_lower(c) <= 'f');
    hex_digits += hex;
    if (hex && !in_group) ++groups;
    in_group = hex;
  }
  if (hex_digits < 4 || groups < 2) return false;
  out.example = address[0] == 0x20 && address[1] == 0x01 && address[2] == 0x0d && address[3] == 0xb8;
  return true;
}

bool validate_mac_address(std::string_view value, const ValidatorSettings&, Assessment&) {
  std::string hex;
  for (char c : value)
    if (c != ':' && c != '-' && c != '.') hex.push_back(to_lower(c));
  if (hex.size() != 12) return false;
  return !all_same(hex);  // 00:00:... and ff:ff:... are not devices
}

bool validate_phone_nanp(std::string_view value, const ValidatorSettings&, Assessment& out) {
  // Drop an extension ("x123") and the country code 1.
  Digits digits = digits_of(value.substr(0, value.find_first_of("xX")));
  if (digits.size() == 11 && digits[0] == '1') digits.drop_first();
  if (digits.size() != 10) return false;
  std::string_view d = digits;
  if (!nanp_valid(d.substr(0, 3), d.substr(3, 3))) return false;
  // 555-0100..0199 are reserved for fiction.
  out.example = d.substr(3, 3) == "555" && d.substr(6, 2) == "01";
  return true;
}

bool validate_phone_digits(std::string_view value, const ValidatorSettings&, Assessment&) {
  const Digits digits = digits_of(value);
  return digits.size() >= 7 && !all_same(std::string_view(digits));
}

bool validate_date(std::string_view value, const ValidatorSettings&, Assessment&) {
  // Numbers and words in order of appearance: 1990-05-17, 17/05/1990, May 17, 1990, 17 May 1990.
  std::array<int, 3> numbers{};
  std::array<int, 3> widths{};
  int count = 0, month_by_name = 0;
  for (std::size_t i = 0; i < value.size();) {
    if (is_digit(value[i])) {
      std::size_t j = i;
      while (j < value.size() && is_digit(value[j])) ++j;
      if (count == 3) return false;
      widths[count] = static_cast<int>(j - i);
      numbers[count++] = number_of(value.substr(i, j - i));
      i = j;
    } else if (is_alpha(value[i])) {
      std::size_t j = i;
      while (j < value.size() && is_alpha(value[j])) ++j;
      std::string_view word = value.substr(i, j - i);
      bool ordinal_suffix = word.size() == 2 && (contains_ci(word, "st") || contains_ci(word, "nd") ||
                                                 contains_ci(word, "rd") || contains_ci(word, "th"));
      if (!ordinal_suffix) {
        month_by_name = month_from_name(word);
        if (month_by_name == 0) return false;
      }
      i = j;
    } else {
      ++i;
    }
  }
  if (month_by_name != 0) return count == 2 && plausible_date(numbers[1], month_by_name, numbers[0]);
  if (count != 3) return false;
  if (widths[0] == 4) return plausible_date(numbers[0], numbers[1], numbers[2]);
  int year = numbers[2];
  if (widths[2] == 2) year += year > 30 ? 1900 : 2000;
  // Day and month may come in either order.
  return plausible_date(year, numbers[1], numbers[0]) || plausible_date(year, numbers[0], numbers[1]);
}

bool validate_aws_access_key_id(std::string_view value, const ValidatorSettings&, Assessment& out) {
  out.example = value.find("EXAMPLE") != std::string_view::npos || is_documentation_value(value);
  return true;
}

bool validate_aws_secret_access_key(std::string_view value, const ValidatorSettings&,
                                    Assessment& out) {
  if (shannon_entropy(value) < 3.5) return false;
  out.example = value.find("EXAMPLE") != std::string_view::npos || is_documentation_value(value);
  return true;
}

bool validate_jwt(std::string_view value, const ValidatorSettings&, Assessment& out) {
  auto dot = value.find('.');
  if (dot == std::string_view::npos || !base64url_decodes_to_json_object(value.substr(0, dot)))
    return false;
  out.example = is_documentation_value(value);
  return true;
}

bool validate_url_password(std::string_view value, const ValidatorSettings&, Assessment& out) {
  // "${DB_PASSWORD}", "%s", "****" are references or already masked, not secrets.
  if (value.empty() || value[0] == '$' || value[0] == '%' || value[0] == '{' || value[0] == '*')
    return false;
  static constexpr std::array<std::string_view, 6> kPlaceholders{"password", "pass", "passwd",
                                                                  "pwd", "secret", "changeme"};
  std::string lower;
  for (char c : value) lower.push_back(to_lower(c));
  out.example = looks_like_placeholder(value) ||
                std::find(kPlaceholders.begin(), kPlaceholders.end(), lower) != kPlaceholders.end();
  return true;
}

bool validate_secret_assignment(std::string_view value, const ValidatorSettings& settings,
                                Assessment& out) {
  if (value.size() < std::max<std::size_t>(settings.min_length, 1)) return false;
  // References and code, not values: ${VAR}, {{ var }}, %(name)s, os.environ["X"], get_token().
  char first = value[0];
  if (first == '$' || first == '{' || first == '%' || first == '<' || first == '[' || first == '*')
    return false;
  if (value.find_first_of("()") != std::string_view::npos) return false;
  int lower = 0, upper = 0, digit = 0, symbol = 0;
  for (char c : value) {
    if (is_lower(c)) lower = 1;
    else if (is_upper(c)) upper = 1;
    else if (is_digit(c)) digit = 1;
    else if (c != '_' && c != '.' && c != '-') symbol = 1;
  }
  // An identifier ("user_password", "config.token") is a variable name in code.
  if (lower + upper + digit + symbol < 2) return false;
  if (shannon_entropy(value) < settings.min_entropy) return false;
  out.example = looks_like_placeholder(value);
  return true;
}

bool validate_high_entropy_base64(std::string_view value, const ValidatorSettings& settings,
                                  Assessment&) {
  std::string_view body = value.substr(0, value.find('='));
  if (body.size() < settings.min_length) return false;
  bool lower = false, upper = false, digit = false;
  for (char c : body) {
    lower |= is_lower(c);
    upper |= is_upper(c);
    digit |= is_digit(c);
  }
  return lower && upper && digit && shannon_entropy(body) >= settings.min_entropy;
}

bool validate_high_entropy_hex(std::string_view value, const ValidatorSettings& settings,
                               Assessment&) {
  if (value.size() < settings.min_length) return false;
  bool letter = false, digit = false;
  for (char c : value) {
    letter |= is_alpha(c);
    digit |= is_digit(c);
  }
  return letter && digit && shannon_entropy(value) >= settings.min_entropy;
}

bool validate_vendor_token(std::string_view value, const ValidatorSettings&, Assessment& out) {
  // The part after the vendor prefix: placeholders like ghp_xxxx... have almost no entropy.
  auto separator = value.find_first_of("_-.");
  std::string_view body = separator == std::string_view::npos ? value : value.substr(separator + 1);
  out.example = is_documentation_value(value) || looks_like_placeholder(body) ||
                shannon_entropy(body) < 3.0;
  return true;
}

}  // namespace airlock::dlp::detail
