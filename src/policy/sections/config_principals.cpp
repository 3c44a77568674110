// The principals section: who may call which tools: by the SHA-256 of their key, by a JWT
// of a configured issuer, or by their client certificate (mTLS).
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

// principals[].certificate: {subject: RFC 2253} or {uriSAN: URI}, exactly one, not empty.
CertificateMatch read_certificate(Reader& r, const YAML::Node& n, const std::string& what) {
  r.only_keys(n, what, {"subject", "uriSAN"});
  if (!n["subject"] == !n["uriSAN"])
    fail(n, what + ": expected exactly one of subject (RFC 2253, \"CN=name,O=org\") or uriSAN "
                   "(\"spiffe://trust-domain/path\")");
  CertificateMatch m;
  const char* key = n["subject"] ? "subject" : "uriSAN";
  std::string value = r.string(n[key], what + "." + key);
  if (value.empty()) fail(n[key], what + "." + key + ": must not be empty");
  (n["subject"] ? m.subject : m.uri_san) = std::move(value);
  return m;
}

// The ways a principal can prove who it is; it needs one at least.
bool has_credential(const YAML::Node& n) {
  return n["apiKeySha256"] || n["jwt"] || n["certificate"];
}

Principal read_principal(Reader& r, const YAML::Node& n, const std::string& what,
                         const IdentityConfig& identity) {
  r.only_keys(n, what, {"name", "apiKeySha256", "jwt", "certificate", "tools", "sessionTemplates"});
  Principal p;
  if (!n["name"]) r.error(n, what + ": missing name");
  if (!has_credential(n))
    r.error(n, what + ": missing apiKeySha256 (the SHA-256 of the API key, hex) or jwt "
                      "({issuer, subject}) or certificate (a client certificate's subject or "
                      "uriSAN): a principal needs a way to authenticate");
  r.field(n, "name", [&](const YAML::Node& v) { p.name = r.string(v, what + ".name"); });
  r.field(n, "apiKeySha256", [&](const YAML::Node& v) {
    p.api_key_sha256 = lower_hex_key(r, v, what + ".apiKeySha256");
  });
  r.field(n, "jwt", [&](const YAML::Node& v) { p.jwt = read_jwt(r, v, what + ".jwt", identity); });
  r.field(n, "certificate", [&](const YAML::Node& v) {
    p.certificate = read_certificate(r, v, what + ".certificate");
  });
  r.field(n, "tools", [&](const YAML::Node& v) { p.tools = r.strings(v, what + ".tools"); });
  r.field(n, "sessionTemplates",
          [&](const YAML::Node& v) { p.session_templates = r.strings(v, what + ".sessionTemplates"); });
  return p;
}

}  // namespace

void read_principals(Reader& r, const YAML::Node& n, const IdentityConfig& identity,
                     std::vector<Principal>& out) {
  std::set<std::string> names, keys, certificates;
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
    if (p.certificate && !certificates.insert(p.certificate->subject.empty()
                                                  ? "uri:" + p.certificate->uri_san
                                                  : "subject:" + p.certificate->subject)
                              .second)
      fail(item, "principals: two principals match the same certificate");
    out.push_back(std::move(p));
  });
}

void check_certificates_need_client_ca(Reader& r, const YAML::Node& principals,
                                       const ServerConfig& server) {
  if ((server.tls && !server.tls->client_ca_file.empty()) || !principals.IsSequence()) return;
  for (const auto& item : principals)
    if (item.IsMap() && item["certificate"])
      r.error(item["certificate"],
              "certificate: needs server.tls.clientCAFile (the CA that issues the client "
              "certificates); without it no client certificate is asked for");
}

}  // namespace airlock::policy::detail
