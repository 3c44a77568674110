// The principals section: who may call which tools, by the SHA-256 of their key or by a JWT
// of a configured issuer.
#include <cctype>

#include "policy/config_reader.hpp"

namespace airlock::policy::detail {
namespace {

std::string lower_hex_key(Reader& r, const YAML::Node& v, const std::string& what) {
  std::string key = r.string(v, what);
  for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key.size() != 64 || key.find_first_not_of("0123456789abcdef") != std::string::npos)
    fail(v, what + ": expected 64 hex digits (the SHA-256 of the key, not the key)");
  return key;
}

PrincipalJwt read_jwt(Reader& r, const YAML::Node& n, const std::string& what,
                      const IdentityConfig& identity) {
  r.only_keys(n, what, {"issuer", "subject"});
  PrincipalJwt jwt;
  for (const char* key : {"issuer", "subject"})
    if (!n[key]) r.error(n, what + ": missing " + key);
  r.field(n, "issuer", [&](const YAML::Node& v) {
    jwt.issuer = r.string(v, what + ".issuer");
    check_issuer_name(v, what + ".issuer", jwt.issuer, identity);
  });
  r.field(n, "subject", [&](const YAML::Node& v) {
    jwt.subject = r.string(v, what + ".subject");
    if (jwt.subject.empty()) fail(v, what + ".subject: empty");
  });
  return jwt;
}

Principal read_principal(Reader& r, const YAML::Node& n, const std::string& what,
                         const IdentityConfig& identity) {
  r.only_keys(n, what, {"name", "apiKeySha256", "jwt", "tools"});
  Principal p;
  if (!n["name"]) r.error(n, what + ": missing name");
  if (!n["apiKeySha256"] && !n["jwt"])
    r.error(n, what + ": missing apiKeySha256 (the SHA-256 of the API key, hex) or jwt "
                      "({issuer, subject}): a principal needs a way to authenticate");
  r.field(n, "name", [&](const YAML::Node& v) { p.name = r.string(v, what + ".name"); });
  r.field(n, "apiKeySha256", [&](const YAML::Node& v) {
    p.api_key_sha256 = lower_hex_key(r, v, what + ".apiKeySha256");
  });
  r.field(n, "jwt", [&](const YAML::Node& v) { p.jwt = read_jwt(r, v, what + ".jwt", identity); });
  r.field(n, "tools", [&](const YAML::Node& v) { p.tools = r.strings(v, what + ".tools"); });
  return p;
}

}  // namespace

void read_principals(Reader& r, const YAML::Node& n, const IdentityConfig& identity,
                     std::vector<Principal>& out) {
  std::set<std::string> names, keys;
  std::set<std::pair<std::string, std::string>> jwt_subjects;
  std::size_t i = 0;
  r.items(n, "principals", [&](const YAML::Node& item) {
    auto p = read_principal(r, item, "principals[" + std::to_string(i++) + "]", identity);
    if (!p.name.empty() && !names.insert(p.name).second)
      fail(item, "principals: '" + p.name + "' is defined twice");
    if (!p.api_key_sha256.empty() && !keys.insert(p.api_key_sha256).second)
      fail(item, "principals: two principals share an API key");
    if (p.jwt && !p.jwt->subject.empty() &&
        !jwt_subjects.insert({p.jwt->issuer, p.jwt->subject}).second)
      fail(item, "principals: two principals have the jwt subject '" + p.jwt->subject +
                     "' of issuer '" + p.jwt->issuer + "'");
    out.push_back(std::move(p));
  });
}

}  // namespace airlock::policy::detail
