// Checks that turn a pattern match into a finding: checksums, numbering rules, entropy gates and
// the values vendors publish in their documentation. Pure functions over the matched bytes.
#pragma once

#include <cstddef>
#include <string_view>

namespace airlock::dlp::detail {

// What a validator concluded about one matched value.
struct Assessment {
  double confidence = 0;  // starts at the detector's base confidence; validators may adjust it
  bool example = false;   // a documentation value: reported, never blocked
};

// Settings a validator may read (entropy gates are configurable per policy).
struct ValidatorSettings {
  double min_entropy = 0;
  std::size_t min_length = 0;
};

// A validator returns false to reject the match.
using Validator = bool (*)(std::string_view value, const ValidatorSettings& settings,
                           Assessment& assessment);

// --- building blocks (exposed for tests) ---
bool luhn_valid(std::string_view digits);
bool iban_checksum_valid(std::string_view iban_without_spaces);  // ISO 13616 mod-97 == 1
int iban_length_for_country(std::string_view country_code);      // 0 if not an IBAN country
bool ssn_valid(std::string_view area, std::string_view group, std::string_view serial);
bool nanp_valid(std::string_view area_code, std::string_view exchange);
double shannon_entropy(std::string_view text);  // bits per byte
bool base64url_decodes_to_json_object(std::string_view text);  // JWT header check

// --- validators referenced by the detector table ---
bool validate_email(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_credit_card(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_iban(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_us_ssn(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_ipv4(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_ipv6(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_mac_address(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_phone_nanp(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_phone_digits(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_date(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_aws_access_key_id(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_aws_secret_access_key(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_jwt(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_url_password(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_secret_assignment(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_high_entropy_base64(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_high_entropy_hex(std::string_view, const ValidatorSettings&, Assessment&);
bool validate_vendor_token(std::string_view, const ValidatorSettings&, Assessment&);

}  // namespace airlock::dlp::detail
