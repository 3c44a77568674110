// The checks behind the detectors: checksums, numbering rules, entropy, dates.
#include <gtest/gtest.h>

#include "dlp/validators.hpp"

using namespace airlock::dlp::detail;

namespace {

bool accepts(Validator validate, std::string_view value, Assessment* out = nullptr,
             ValidatorSettings settings = {}) {
  Assessment assessment{0.5, false};
  bool ok = validate(value, settings, assessment);
  if (out) *out = assessment;
  return ok;
}

}  // namespace

TEST(DlpLuhn, AcceptsValidNumbersAndRejectsOneDigitOff) {
  EXPECT_TRUE(luhn_valid("79927398713"));
  EXPECT_TRUE(luhn_valid("4539675112532875"));
  EXPECT_FALSE(luhn_valid("4539675112532876"));
  EXPECT_FALSE(luhn_valid("79927398710"));
  EXPECT_FALSE(luhn_valid("4539-6751"));  // digits only
  EXPECT_FALSE(luhn_valid(""));
}

TEST(DlpCreditCard, NeedsNetworkPrefixAndLuhn) {
  EXPECT_TRUE(accepts(validate_credit_card, "4539 6751 1253 2875"));
  EXPECT_TRUE(accepts(validate_credit_card, "371415618365465"));  // Amex
  EXPECT_FALSE(accepts(validate_credit_card, "4539 6751 1253 2876"));  // Luhn fails
  EXPECT_FALSE(accepts(validate_credit_card, "9539675112532871"));     // no network starts with 9
  EXPECT_FALSE(accepts(validate_credit_card, "0000000000000000"));
  EXPECT_FALSE(accepts(validate_credit_card, "45396751125"));  // too short
}

TEST(DlpCreditCard, PublishedTestNumbersAreExamples) {
  Assessment a;
  ASSERT_TRUE(accepts(validate_credit_card, "4111 1111 1111 1111", &a));
  EXPECT_TRUE(a.example);
  ASSERT_TRUE(accepts(validate_credit_card, "4539675112532875", &a));
  EXPECT_FALSE(a.example);
}

TEST(DlpIban, CountryLengthsAndMod97) {
  EXPECT_EQ(iban_length_for_country("GB"), 22);
  EXPECT_EQ(iban_length_for_country("de"), 22);
  EXPECT_EQ(iban_length_for_country("NO"), 15);
  EXPECT_EQ(iban_length_for_country("MT"), 31);
  EXPECT_EQ(iban_length_for_country("US"), 0);
  EXPECT_TRUE(iban_checksum_valid("GB82WEST12345698765432"));
  EXPECT_TRUE(iban_checksum_valid("DE89370400440532013000"));
  EXPECT_FALSE(iban_checksum_valid("GB82WEST12345698765433"));
  EXPECT_TRUE(accepts(validate_iban, "DE89 3704 0044 0532 0130 00"));
  EXPECT_TRUE(accepts(validate_iban, "gb82west12345698765432"));
  EXPECT_FALSE(accepts(validate_iban, "DE89370400440532013"));  // wrong length for DE
  EXPECT_FALSE(accepts(validate_iban, "XX89370400440532013000"));
}

TEST(DlpSsn, NumberingRules) {
  EXPECT_TRUE(ssn_valid("536", "22", "1987"));
  EXPECT_TRUE(ssn_valid("853", "37", "1694"));  // assigned since 2011 randomisation
  EXPECT_FALSE(ssn_valid("000", "22", "1987"));
  EXPECT_FALSE(ssn_valid("666", "22", "1987"));
  EXPECT_FALSE(ssn_valid("912", "22", "1987"));
  EXPECT_FALSE(ssn_valid("536", "00", "1987"));
  EXPECT_FALSE(ssn_valid("536", "22", "0000"));
  EXPECT_FALSE(ssn_valid("078", "05", "1120"));  // the Woolworth wallet card
  EXPECT_FALSE(ssn_valid("123", "45", "6789"));
  EXPECT_FALSE(ssn_valid("111", "11", "1111"));
  EXPECT_TRUE(accepts(validate_us_ssn, "536-22-1987"));
  EXPECT_FALSE(accepts(validate_us_ssn, "536-22-198"));
}

TEST(DlpNanp, AreaCodeAndExchangeRules) {
  EXPECT_TRUE(nanp_valid("415", "734"));
  EXPECT_FALSE(nanp_valid("115", "734"));  // area codes start with 2-9
  EXPECT_FALSE(nanp_valid("911", "734"));  // N11 service codes
  EXPECT_FALSE(nanp_valid("495", "734"));  // N9X is reserved
  EXPECT_FALSE(nanp_valid("415", "134"));  // exchanges start with 2-9
  EXPECT_FALSE(nanp_valid("415", "411"));
  Assessment a;
  ASSERT_TRUE(accepts(validate_phone_nanp, "(303) 555-0142", &a));
  EXPECT_TRUE(a.example);  // 555-01XX is reserved for fiction
  ASSERT_TRUE(accepts(validate_phone_nanp, "+1 415 734 2219 x12", &a));
  EXPECT_FALSE(a.example);
}

TEST(DlpEntropy, BitsPerByte) {
  EXPECT_DOUBLE_EQ(shannon_entropy("aaaaaaaa"), 0.0);
  EXPECT_DOUBLE_EQ(shannon_entropy("abababab"), 1.0);
  EXPECT_DOUBLE_EQ(shannon_entropy("abcdefgh"), 3.0);
  EXPECT_GT(shannon_entropy("2VD+eR1UYzaLiA+zNyD7CHLn+xC/1hsYgBds1ghx"), 4.5);
}

TEST(DlpSecretAssignment, EntropyGateAndReferences) {
  ValidatorSettings gate{3.0, 8};
  EXPECT_TRUE(accepts(validate_secret_assignment, "s3cR3t!v4lue-2024", nullptr, gate));
  EXPECT_FALSE(accepts(validate_secret_assignment, "aaaaaaaa1", nullptr, gate));       // low entropy
  EXPECT_FALSE(accepts(validate_secret_assignment, "user_password", nullptr, gate));   // identifier
  EXPECT_FALSE(accepts(validate_secret_assignment, "${DB_PASSWORD}", nullptr, gate));  // reference
  EXPECT_FALSE(accepts(validate_secret_assignment, "get_token()", nullptr, gate));     // code
  EXPECT_FALSE(accepts(validate_secret_assignment, "x1!", nullptr, gate));             // too short
  Assessment a;
  ASSERT_TRUE(accepts(validate_secret_assignment, "your_api_key_here123", &a, gate));
  EXPECT_TRUE(a.example);
}

TEST(DlpDates, FormsAndPlausibility) {
  for (const char* date : {"1984-07-23", "23/07/1984", "07/23/1984", "23.07.84", "July 23, 1984",
                           "23 Jul 1984", "Jul 23rd, 1984"})
    EXPECT_TRUE(accepts(validate_date, date)) << date;
  for (const char* date : {"1984-13-23", "32/13/1984", "1850-01-01", "Foo 23, 1984"})
    EXPECT_FALSE(accepts(validate_date, date)) << date;
}

TEST(DlpJwt, HeaderMustBeJsonWithAlg) {
  EXPECT_TRUE(base64url_decodes_to_json_object("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"));
  EXPECT_FALSE(base64url_decodes_to_json_object("eyJub3RoaW5nIjoxfQ"));  // {"nothing":1}
  EXPECT_FALSE(base64url_decodes_to_json_object("bm90IGpzb24"));         // "not json"
}

TEST(DlpIp, RangesAndShapes) {
  Assessment a;
  ASSERT_TRUE(accepts(validate_ipv4, "81.2.69.142", &a));
  EXPECT_FALSE(a.example);
  ASSERT_TRUE(accepts(validate_ipv4, "192.0.2.17", &a));  // RFC 5737 documentation range
  EXPECT_TRUE(a.example);
  ASSERT_TRUE(accepts(validate_ipv4, "127.0.0.1", &a));
  EXPECT_LT(a.confidence, 0.5);  // loopback identifies nobody
  EXPECT_FALSE(accepts(validate_ipv4, "256.1.1.1"));
  EXPECT_FALSE(accepts(validate_ipv4, "1.02.3.4"));  // leading zero: a version or a date
  EXPECT_TRUE(accepts(validate_ipv6, "2a00:1450:4001:82b::200e"));
  ASSERT_TRUE(accepts(validate_ipv6, "2001:db8::1", &a));
  EXPECT_TRUE(a.example);
  EXPECT_FALSE(accepts(validate_ipv6, "12:34:56"));  // a time
  EXPECT_FALSE(accepts(validate_ipv6, "d::a"));      // too little of an address (std::max)
}
