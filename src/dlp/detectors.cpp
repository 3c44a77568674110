// The detector table. Each row: what it finds, how (engine and pattern or shape), how sure a
// validated match is, which words nearby make it surer, and what the policy does by default.
// Patterns use the syntax Vectorscan and RE2 share: explicit character classes, bounded repeats,
// (?i:...) for case-insensitive parts, and a capturing group only around the value to report.
#include "dlp/detectors.hpp"

#include <array>

namespace airlock::dlp::detail {
namespace {

constexpr std::string_view kPhoneContext =
    "phone|tel|telephone|mobile|cell|call|fax|desk|office|contact|sms|whatsapp|dial|reach|ring|"
    "landline|message|answer";
// "416 60 039 office", "555-0142 (mobile)".
constexpr std::size_t kPhoneContextAfter = 16;
constexpr std::string_view kIpContext = "ip|address|addr|client|host|remote|server|from|peer";

// One date, in the forms people write a birth date in.
#define AIRLOCK_DLP_MONTH "(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]{0,6}\\.?"
#define AIRLOCK_DLP_DATE                                                             \
  "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}|[0-9]{1,2}[/.-][0-9]{1,2}[/.-](?:[0-9]{4}|[0-9]{2})|" \
  AIRLOCK_DLP_MONTH "[ \\t][0-9]{1,2}(?:st|nd|rd|th)?,?[ \\t][0-9]{4}|"              \
  "[0-9]{1,2}(?:st|nd|rd|th)?[ \\t]" AIRLOCK_DLP_MONTH ",?[ \\t][0-9]{4}"

// "password = value", "token: value", "\"api_key\": \"value\"" and friends.
#define AIRLOCK_DLP_ASSIGNMENT "[\"']?[ \\t]{0,4}(?::=|=>|=|:)[ \\t]{0,4}[\"']?"

constexpr std::size_t kMaxPemBlock = 16 * 1024;
constexpr std::size_t kMaxJwt = 8 * 1024;

constexpr std::array kDetectors = std::to_array<DetectorSpec>({
    // ---------------------------------------------------------------- PII
    {.id = "email", .category = Category::pii, .label = "EMAIL", .confidence = 0.85,
     .context = "email|e-mail|mail|contact", .context_boost = 0.1,
     .pattern = "[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\\.){1,8}[A-Za-z]{2,24}",
     .left = Boundary::email_local, .right = Boundary::domain, .validate = validate_email,
     .preceding = not_url_userinfo, .example = "Contact: jane.doe@example.org"},
    {.id = "phone_international", .category = Category::pii, .label = "PHONE",
     .confidence = 0.65, .context = kPhoneContext, .context_boost = 0.25,
     .context_after = kPhoneContextAfter, .engine = Engine::numeric, .validate = validate_phone_digits,
     .shape = match_phone_international, .example = "+44 20 7946 0958"},
    // NANP: +1 (NPA) NXX-XXXX with area-code and exchange rules; ten bare digits need context.
    {.id = "phone_nanp", .category = Category::pii, .label = "PHONE", .confidence = 0.6,
     .context = kPhoneContext, .context_boost = 0.3, .context_after = kPhoneContextAfter,
     .engine = Engine::numeric,
     .validate = validate_phone_nanp, .shape = match_phone_nanp,
     .example = "call (415) 734-2219"},
    // Other national formats ("0490 75 40 81", "(08) 8747 6301"): only with a context word.
    {.id = "phone_national", .category = Category::pii, .label = "PHONE", .confidence = 0.3,
     .context = kPhoneContext, .context_boost = 0.35, .context_after = kPhoneContextAfter,
     .engine = Engine::numeric,
     .validate = validate_phone_digits, .shape = match_phone_national,
     .example = "Phone: 0490 75 40 81"},
    {.id = "credit_card", .category = Category::pii, .label = "CREDIT_CARD",
     .action = Action::mask, .confidence = 0.7,
     .context = "card|cc|credit|debit|visa|mastercard|amex|discover|payment|pan|billing",
     .context_boost = 0.25, .engine = Engine::numeric, .validate = validate_credit_card,
     .shape = match_credit_card, .example = "card 4539 6751 1253 2875"},
    {.id = "iban", .category = Category::pii, .label = "IBAN", .confidence = 0.85,
     .context = "iban|account|bank|transfer|wire|sepa", .context_boost = 0.1,
     .engine = Engine::iban, .validate = validate_iban, .shape = match_iban,
     .example = "IBAN DE89 3704 0044 0532 0130 00"},
    {.id = "us_ssn", .category = Category::pii, .label = "US_SSN", .action = Action::mask,
     .confidence = 0.65, .context = "ssn|social security|social sec|ss#|taxpayer|tin",
     .context_boost = 0.3, .engine = Engine::numeric, .validate = validate_us_ssn,
     .shape = match_us_ssn, .example = "SSN 536-22-1987"},
    {.id = "ipv4", .category = Category::pii, .label = "IP_ADDRESS", .confidence = 0.6,
     .context = kIpContext, .context_boost = 0.2, .engine = Engine::numeric,
     .validate = validate_ipv4, .shape = match_ipv4, .example = "client 81.2.69.142 connected"},
    {.id = "ipv6", .category = Category::pii, .label = "IP_ADDRESS", .confidence = 0.6,
     .context = kIpContext, .context_boost = 0.2, .engine = Engine::hex,
     .validate = validate_ipv6, .shape = match_ipv6, .example = "from 2a00:1450:4001:82b::200e"},
    {.id = "mac_address", .category = Category::pii, .label = "MAC_ADDRESS", .confidence = 0.6,
     .context = "mac|hwaddr|ether|bssid|device", .context_boost = 0.2, .engine = Engine::hex,
     .validate = validate_mac_address, .shape = match_mac_address,
     .example = "ether 3c:22:fb:7a:91:0e"},
    // The next three exist only next to their context words, so the words are in the pattern.
    {.id = "us_passport", .category = Category::pii, .label = "US_PASSPORT", .confidence = 0.75,
     .pattern = "(?i:passport)(?i:[ \\t]?(?:no|number|num|nr)\\.?)?[ \\t]{0,3}[:=#]{0,2}[ \\t]{0,3}"
                "[\"']?([A-Za-z]?[0-9]{8,9})",
     .left = Boundary::alnum, .right = Boundary::alnum, .example = "Passport No: 518242591"},
    {.id = "us_drivers_license", .category = Category::pii, .label = "US_DRIVERS_LICENSE",
     .confidence = 0.7,
     .pattern = "(?:(?i:driver'?s?[ \\t]?licen[cs]e|driving[ \\t]licen[cs]e)|DL)"
                "(?i:[ \\t]?(?:no|number|num|nr|#)\\.?)?[ \\t]{0,3}[:=#]{0,2}[ \\t]{0,3}[\"']?"
                "([A-Za-z]{0,2}[0-9]{5,13})",
     .left = Boundary::alnum, .right = Boundary::alnum, .example = "Driver's License: D1234567"},
    {.id = "date_of_birth", .category = Category::pii, .label = "DATE_OF_BIRTH",
     .confidence = 0.75,
     .pattern = "(?i:date[ \\t]of[ \\t]birth|birth[ \\t]?date|d\\.?o\\.?b\\.?|born(?:[ \\t]on)?)"
                "[ \\t]{0,3}[:=]?[ \\t]{0,3}[\"']?(" AIRLOCK_DLP_DATE ")",
     .left = Boundary::alnum, .right = Boundary::alnum, .validate = validate_date,
     .example = "Date of birth: 1984-07-23"},

    // ---------------------------------------------------------------- secrets
    {.id = "aws_access_key_id", .category = Category::secret, .label = "AWS_ACCESS_KEY_ID",
     .confidence = 0.9, .pattern = "(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}",
     .left = Boundary::alnum, .right = Boundary::alnum, .validate = validate_aws_access_key_id,
     .example = "AKIAUP6PPB2TDBM72FQO"},
    {.id = "aws_secret_access_key", .category = Category::secret,
     .label = "AWS_SECRET_ACCESS_KEY", .confidence = 0.85,
     .pattern = "(?i:aws[_-]?secret[_-]?access[_-]?key|aws[_-]?secret[_-]?key|"
                "secret[_-]?access[_-]?key)" AIRLOCK_DLP_ASSIGNMENT "([A-Za-z0-9/+]{40})",
     .right = Boundary::base64, .validate = validate_aws_secret_access_key,
     .example = "aws_secret_access_key = 2VD+eR1UYzaLiA+zNyD7CHLn+xC/1hsYgBds1ghx"},
    {.id = "github_pat", .category = Category::secret, .label = "GITHUB_TOKEN",
     .confidence = 0.95, .pattern = "ghp_[A-Za-z0-9]{36}", .left = Boundary::word,
     .right = Boundary::word, .validate = validate_vendor_token,
     .example = "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"},
    {.id = "github_oauth_token", .category = Category::secret, .label = "GITHUB_TOKEN",
     .confidence = 0.95, .pattern = "gho_[A-Za-z0-9]{36}", .left = Boundary::word,
     .right = Boundary::word, .validate = validate_vendor_token,
     .example = "gho_KLzdocJ2isAjIhKtJ0RlgLKOmxgJTeKdNnFR"},
    {.id = "github_app_token", .category = Category::secret, .label = "GITHUB_TOKEN",
     .confidence = 0.95, .pattern = "gh[us]_[A-Za-z0-9]{36}", .left = Boundary::word,
     .right = Boundary::word, .validate = validate_vendor_token,
     .example = "ghu_IBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7"},
    {.id = "github_refresh_token", .category = Category::secret, .label = "GITHUB_TOKEN",
     .confidence = 0.95, .pattern = "ghr_[A-Za-z0-9]{36}", .left = Boundary::word,
     .right = Boundary::word, .validate = validate_vendor_token,
     .example = "ghr_FAc9QeWJKY40uvSwMFLZDe1f8rESQedUStPK"},
    {.id = "github_fine_grained_pat", .category = Category::secret, .label = "GITHUB_TOKEN",
     .confidence = 0.95, .pattern = "github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
     .left = Boundary::word, .right = Boundary::word, .validate = validate_vendor_token,
     .example = "github_pat_R0CsTy4Qwb8DwkNhFdnXsi_Vpzz63FfkCzJr4i0B3JrTAwR4y9ojfljoQoaF1LlqsajAIx"
                "NKu8iS2G8NPR"},
    {.id = "gitlab_pat", .category = Category::secret, .label = "GITLAB_TOKEN",
     .confidence = 0.95, .pattern = "glpat-[A-Za-z0-9_-]{20,64}", .left = Boundary::word,
     .right = Boundary::token, .validate = validate_vendor_token,
     .example = "glpat-g6YYZYn9ZhyiA4uoRgna"},
    {.id = "slack_token", .category = Category::secret, .label = "SLACK_TOKEN",
     .confidence = 0.9, .pattern = "xox[abposr]-(?:[0-9]{6,16}-){1,3}[0-9A-Za-z]{8,64}",
     .left = Boundary::word, .right = Boundary::token, .validate = validate_vendor_token,
     .example = "xoxb-928159013962-4595711777741-jgVvVqE1SkHbn88HxjSI6bWH"},
    {.id = "slack_webhook_url", .category = Category::secret, .label = "SLACK_WEBHOOK",
     .confidence = 0.95,
     .pattern = "https://hooks\\.slack\\.com/services/T[A-Z0-9]{6,12}/B[A-Z0-9]{6,12}/"
                "[A-Za-z0-9]{20,32}",
     .right = Boundary::alnum, .validate = validate_vendor_token,
     .example = "https://hooks.slack.com/services/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"},
    {.id = "stripe_secret_key", .category = Category::secret, .label = "STRIPE_KEY",
     .confidence = 0.95, .pattern = "sk_live_[0-9A-Za-z]{24,99}", .left = Boundary::alnum,
     .right = Boundary::alnum, .validate = validate_vendor_token,
     .example = "sk_live_goEmvnEN5N1aE6PwZPf1Qh6y"},
    {.id = "stripe_restricted_key", .category = Category::secret, .label = "STRIPE_KEY",
     .confidence = 0.95, .pattern = "rk_live_[0-9A-Za-z]{24,99}", .left = Boundary::alnum,
     .right = Boundary::alnum, .validate = validate_vendor_token,
     .example = "rk_live_YTWmE4lBYOvfZ8UzDzV8fUkk"},
    {.id = "google_api_key", .category = Category::secret, .label = "GOOGLE_API_KEY",
     .confidence = 0.9, .pattern = "AIza[0-9A-Za-z_-]{35}", .left = Boundary::word,
     .right = Boundary::token, .validate = validate_vendor_token,
     .example = "AIzaqdt7s8Stqcbnr3yBdGBLEPH1qhT61qtc4xa"},
    // "T3BlbkFJ" is base64 for "OpenAI"; every key format so far carries it.
    {.id = "openai_api_key", .category = Category::secret, .label = "OPENAI_API_KEY",
     .confidence = 0.95,
     .pattern = "sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{10,200}T3BlbkFJ[A-Za-z0-9_-]{10,200}",
     .left = Boundary::token, .right = Boundary::token, .validate = validate_vendor_token,
     .example = "sk-proj-tws8phP9nhFyJfm5di4PzJ59FHz5r1pY4OjE2jBMT3BlbkFJptUsGr7CmY_uCu3ZR1zTOlUcR64"
                "cXQLioDnkHIfx"},
    {.id = "anthropic_api_key", .category = Category::secret, .label = "ANTHROPIC_API_KEY",
     .confidence = 0.95, .pattern = "sk-ant-(?:api|admin|sid)[0-9]{2}-[A-Za-z0-9_-]{80,120}",
     .left = Boundary::token, .right = Boundary::token, .validate = validate_vendor_token,
     .example = "sk-ant-api03-Iq2HZt-PlJhx2jIclHkCiHp6bR1IqfEouHgxzNNAL5wIScGebcy8F5n3-YNBDRzrZSgqb"
                "jG3uhkWKFLf6xuI5aHUQPFeNAA"},
    {.id = "npm_token", .category = Category::secret, .label = "NPM_TOKEN", .confidence = 0.95,
     .pattern = "npm_[A-Za-z0-9]{36}", .left = Boundary::word, .right = Boundary::word,
     .validate = validate_vendor_token, .example = "npm_nwlavyfErGPmpGXafq0fjzLczbttOofL9H2W"},
    {.id = "sendgrid_api_key", .category = Category::secret, .label = "SENDGRID_API_KEY",
     .confidence = 0.95, .pattern = "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}",
     .left = Boundary::token, .right = Boundary::token, .validate = validate_vendor_token,
     .example = "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"},
    {.id = "huggingface_token", .category = Category::secret, .label = "HUGGINGFACE_TOKEN",
     .confidence = 0.9, .pattern = "hf_[A-Za-z]{34}", .left = Boundary::word,
     .right = Boundary::word, .validate = validate_vendor_token,
     .example = "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"},
    {.id = "pypi_token", .category = Category::secret, .label = "PYPI_TOKEN", .confidence = 0.95,
     .pattern = "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,200}", .left = Boundary::word,
     .right = Boundary::token, .validate = validate_vendor_token,
     .example = "pypi-AgEIcHlwaS5vcmcYdua_5ZMs1SWOpQaPRYpzbLGViYXjU2JgJngKtFI3OyV2dZAkg05rK_gqv81"},
    {.id = "shopify_token", .category = Category::secret, .label = "SHOPIFY_TOKEN",
     .confidence = 0.95, .pattern = "shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", .left = Boundary::word,
     .right = Boundary::word, .validate = validate_vendor_token,
     .example = "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"},
    {.id = "digitalocean_token", .category = Category::secret, .label = "DIGITALOCEAN_TOKEN",
     .confidence = 0.95, .pattern = "do[opr]_v1_[a-f0-9]{64}", .left = Boundary::word,
     .right = Boundary::word, .validate = validate_vendor_token,
     .example = "dop_v1_60dcd6c8a1f8b46287cced9041dff02cee737443e210471948d33296c87009e8"},
    // Private keys: the finding runs from BEGIN to the matching END line (or to the end of the
    // base64 body when the END line is missing).
    {.id = "private_key", .category = Category::secret, .label = "PRIVATE_KEY",
     .action = Action::block, .confidence = 1.0,
     .pattern = "-----BEGIN (?:RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY-----",
     .extend = extend_pem_block, .max_extension = kMaxPemBlock,
     .example = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
                "-----END RSA PRIVATE KEY-----"},
    {.id = "openssh_private_key", .category = Category::secret, .label = "PRIVATE_KEY",
     .action = Action::block, .confidence = 1.0,
     .pattern = "-----BEGIN OPENSSH PRIVATE KEY-----", .extend = extend_pem_block,
     .max_extension = kMaxPemBlock,
     .example = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE\n"
                "-----END OPENSSH PRIVATE KEY-----"},
    {.id = "pgp_private_key_block", .category = Category::secret, .label = "PRIVATE_KEY",
     .action = Action::block, .confidence = 1.0,
     .pattern = "-----BEGIN PGP PRIVATE KEY BLOCK-----", .extend = extend_pem_block,
     .max_extension = kMaxPemBlock,
     .example = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF1hZ3sBCADJx0bN\n=a1b2\n"
                "-----END PGP PRIVATE KEY BLOCK-----"},
    // Header and the start of the payload anchor it; the extender takes payload and signature.
    {.id = "jwt", .category = Category::secret, .label = "JWT", .confidence = 0.85,
     .pattern = "eyJ[A-Za-z0-9_-]{5,1000}\\.eyJ[A-Za-z0-9_-]{5}", .left = Boundary::token,
     .validate = validate_jwt, .extend = extend_jwt, .max_extension = kMaxJwt,
     .example = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxNzAwMDAwMDAwfQ"
                ".Xq3vJ0cW8m2bJd9sPq7Lz1Yt4kN6rF5hA0uE3wG2iVo"},
    // The finding is the password only: the rest of the URL stays readable.
    {.id = "url_with_password", .category = Category::secret, .label = "PASSWORD",
     .confidence = 0.9,
     .pattern = "[A-Za-z][A-Za-z0-9+.-]{1,20}://[^ \\t\\r\\n:@/?#\"'<>]{1,64}:"
                "([^ \\t\\r\\n:@/?#\"'<>]{1,128})@",
     .left = Boundary::alnum, .validate = validate_url_password,
     .example = "postgres://app:Tr0ub4dor-3x@db.internal:5432/app"},
    // Entropy-gated: a long enough, random enough value after a secret-looking name.
    {.id = "generic_secret_assignment", .category = Category::secret, .label = "SECRET",
     .confidence = 0.65,
     .pattern = "(?i:password|passwd|pwd|passphrase|secret|secret[_-]?key|token|access[_-]?token|"
                "auth[_-]?token|refresh[_-]?token|api[_-]?key|apikey|access[_-]?key|"
                "client[_-]?secret|private[_-]?key)" AIRLOCK_DLP_ASSIGNMENT
                "([^ \\t\\r\\n\"'`,;]{8,128})",
     .right = Boundary::value, .validate = validate_secret_assignment, .min_entropy = 3.0,
     .min_length = 8, .example = "DB_PASSWORD=s3cR3t!v4lue-2024"},
    // Off by default: outputs full of hashes, ids and base64 blobs would drown in findings.
    {.id = "high_entropy_base64", .category = Category::secret, .label = "SECRET",
     .confidence = 0.6, .engine = Engine::base64, .validate = validate_high_entropy_base64,
     .shape = match_base64_run, .enabled = false, .min_entropy = 4.5, .min_length = 32,
     .example = "token Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MHF3ZXJ0eXVpb3Bhc2RmZ2hqa2w7"},
    {.id = "high_entropy_hex", .category = Category::secret, .label = "SECRET", .confidence = 0.6,
     .engine = Engine::base64, .validate = validate_high_entropy_hex, .shape = match_hex_run,
     .enabled = false, .min_entropy = 3.5, .min_length = 32,
     .example = "key 8f3a9c2e71b04d5f6a8e9b0c1d2e3f4a5b6c7d8e9f00112233445566778899aa"},
});

#undef AIRLOCK_DLP_MONTH
#undef AIRLOCK_DLP_DATE
#undef AIRLOCK_DLP_ASSIGNMENT

bool is_alnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

bool is_pem_body_byte(unsigned char c) {
  return is_alnum(c) || c == '+' || c == '/' || c == '=' || c == '\r' || c == '\n' || c == ' ' ||
         c == '\t' || c == ':' || c == ',' || c == '.' || c == '-';
}

bool is_base64url_byte(unsigned char c) { return is_alnum(c) || c == '-' || c == '_'; }

}  // namespace

std::span<const DetectorSpec> detector_table() { return kDetectors; }

const DetectorSpec* find_detector(std::string_view id) {
  for (const auto& spec : kDetectors)
    if (spec.id == id) return &spec;
  return nullptr;
}

bool touches(Boundary boundary, unsigned char c) {
  switch (boundary) {
    case Boundary::none: return false;
    case Boundary::alnum: return is_alnum(c);
    case Boundary::word: return is_alnum(c) || c == '_';
    case Boundary::token: return is_alnum(c) || c == '_' || c == '-';
    case Boundary::base64: return is_alnum(c) || c == '+' || c == '/' || c == '=';
    case Boundary::email_local:
      return is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
    case Boundary::domain: return is_alnum(c) || c == '-' || c == '_';
    case Boundary::value:
      return !(c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '"' || c == '\'' ||
               c == '`' || c == ',' || c == ';');
  }
  return false;
}

bool not_url_userinfo(std::string_view preceding) {
  // In "postgres://app:secret@db" the "secret@db" part is a password and a host, not an email.
  if (preceding.empty() || preceding.back() != ':') return true;
  for (std::size_t i = preceding.size() - 1; i > 0; --i) {
    char c = preceding[i - 1];
    if (c == '/') return !(i >= 3 && preceding.substr(i - 3, 3) == "://");
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '@') return true;
  }
  return true;
}

Extension extend_pem_block(std::string_view data, std::size_t start, std::size_t& end,
                           bool at_end) {
  (void)start;
  // A key body has no "-----": the next one is this block's END line, or the start of something
  // else (then the END line is missing). Looking no further keeps a flood of headers linear.
  const std::size_t limit = std::min(data.size(), end + kMaxPemBlock);
  std::string_view ahead = data.substr(end, limit - end);
  const bool more_may_come = !at_end && limit == data.size();
  auto dashes = ahead.find("-----");
  if (dashes == std::string_view::npos && more_may_come) return Extension::need_more_data;
  if (dashes != std::string_view::npos && ahead.substr(dashes, 9) == "-----END ") {
    auto close = ahead.find("-----", dashes + 9);
    if (close != std::string_view::npos && close - dashes < 64) {
      end += close + 5;
      return Extension::done;
    }
    if (more_may_come && ahead.size() - dashes < 64) return Extension::need_more_data;
  } else if (dashes != std::string_view::npos && more_may_come && ahead.size() - dashes < 9) {
    return Extension::need_more_data;  // "-----" at the end: END may follow
  }
  // No END line: the key body is the base64 that follows; take all of it.
  std::size_t i = 0;
  std::size_t body_end = dashes == std::string_view::npos ? ahead.size() : dashes;
  while (i < body_end && is_pem_body_byte(static_cast<unsigned char>(ahead[i]))) ++i;
  end += i;
  return Extension::done;
}

Extension extend_jwt(std::string_view data, std::size_t start, std::size_t& end, bool at_end) {
  (void)start;
  const std::size_t limit = std::min(data.size(), end + kMaxJwt);
  std::size_t i = end;
  while (i < limit && is_base64url_byte(static_cast<unsigned char>(data[i]))) ++i;  // payload
  if (i < limit && data[i] == '.') {
    ++i;
    while (i < limit && is_base64url_byte(static_cast<unsigned char>(data[i]))) ++i;  // signature
  }
  if (i == data.size() && !at_end && i - end < kMaxJwt) return Extension::need_more_data;
  end = i;
  return Extension::done;
}

}  // namespace airlock::dlp::detail
