// The identity library as an executable threat model: every attack on token verification is
// run for real (tokens signed with OpenSSL here, JWKS served from loopback) and must fail with
// its own error code.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "identity/base64url.hpp"
#include "identity/http_fetch.hpp"
#include "identity/jwk.hpp"
#include "identity/signature.hpp"
#include "identity/signer.hpp"
#include "identity/verifier.hpp"

namespace airlock::identity {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

// ---- keys and tokens made with OpenSSL directly, independent of the library under test ----

struct TestKey {
  std::shared_ptr<EVP_PKEY> pkey;
  std::string kid;
};

TestKey make_key(const std::string& type, const std::string& kid) {
  EVP_PKEY* key = nullptr;
  if (type == "RSA") key = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048));
  if (type == "EC") key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  if (type == "ED25519") key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  EXPECT_NE(key, nullptr);
  return {std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free), kid};
}

std::string bytes(const unsigned char* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

std::string bn_param(EVP_PKEY* key, const char* name, int pad = 0) {
  BIGNUM* bn = nullptr;
  EXPECT_EQ(EVP_PKEY_get_bn_param(key, name, &bn), 1);
  std::vector<unsigned char> buf(pad > 0 ? static_cast<std::size_t>(pad)
                                         : static_cast<std::size_t>(BN_num_bytes(bn)));
  BN_bn2binpad(bn, buf.data(), static_cast<int>(buf.size()));
  BN_free(bn);
  return base64url_encode(bytes(buf.data(), buf.size()));
}

// The public JWK of a test key, with its kid (and "alg" when given).
json public_jwk(const TestKey& k, const std::string& alg = "") {
  json jwk = {{"kid", k.kid}};
  EVP_PKEY* key = k.pkey.get();
  if (EVP_PKEY_is_a(key, "RSA")) {
    jwk.update({{"kty", "RSA"},
                {"n", bn_param(key, OSSL_PKEY_PARAM_RSA_N)},
                {"e", bn_param(key, OSSL_PKEY_PARAM_RSA_E)}});
  } else if (EVP_PKEY_is_a(key, "EC")) {
    jwk.update({{"kty", "EC"},
                {"crv", "P-256"},
                {"x", bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, 32)},
                {"y", bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, 32)}});
  } else {
    unsigned char raw[32];
    std::size_t size = sizeof raw;
    EXPECT_EQ(EVP_PKEY_get_raw_public_key(key, raw, &size), 1);
    jwk.update({{"kty", "OKP"}, {"crv", "Ed25519"}, {"x", base64url_encode(bytes(raw, size))}});
  }
  if (!alg.empty()) jwk["alg"] = alg;
  return jwk;
}

json jwks_of(const std::vector<const TestKey*>& keys) {
  json doc = {{"keys", json::array()}};
  for (const auto* k : keys) doc["keys"].push_back(public_jwk(*k));
  return doc;
}

// A signature by the key's own type, whatever the header claims: the tests forge headers.
std::string sign(const TestKey& k, const std::string& input) {
  EVP_PKEY* key = k.pkey.get();
  const bool ed = EVP_PKEY_is_a(key, "ED25519");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EXPECT_EQ(EVP_DigestSignInit(ctx.get(), nullptr, ed ? nullptr : EVP_sha256(), nullptr, key), 1);
  std::size_t size = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  EXPECT_EQ(EVP_DigestSign(ctx.get(), nullptr, &size, in, input.size()), 1);
  std::vector<unsigned char> sig(size);
  EXPECT_EQ(EVP_DigestSign(ctx.get(), sig.data(), &size, in, input.size()), 1);
  if (!EVP_PKEY_is_a(key, "EC")) return bytes(sig.data(), size);
  // ECDSA: DER from OpenSSL, r||s in a JWS.
  const unsigned char* p = sig.data();
  ECDSA_SIG* ecdsa = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(size));
  unsigned char raw[64];
  BN_bn2binpad(ECDSA_SIG_get0_r(ecdsa), raw, 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(ecdsa), raw + 32, 32);
  ECDSA_SIG_free(ecdsa);
  return bytes(raw, sizeof raw);
}

std::string signing_input(const json& header, const json& claims) {
  return base64url_encode(header.dump()) + "." + base64url_encode(claims.dump());
}

std::string token(const json& header, const json& claims, const TestKey& k) {
  const std::string input = signing_input(header, claims);
  return input + "." + base64url_encode(sign(k, input));
}

std::string alg_of(const TestKey& k) {
  if (EVP_PKEY_is_a(k.pkey.get(), "RSA")) return "RS256";
  if (EVP_PKEY_is_a(k.pkey.get(), "EC")) return "ES256";
  return "EdDSA";
}

// A well-formed header for the key: its own alg and kid.
json header_for(const TestKey& k) {
  return {{"alg", alg_of(k)}, {"typ", "JWT"}, {"kid", k.kid}};
}

std::string public_pem(const TestKey& k) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, k.pkey.get());
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return pem;
}

std::string hs256_token(const json& header, const json& claims, const std::string& secret) {
  const std::string input = signing_input(header, claims);
  unsigned char mac[32];
  unsigned int size = sizeof mac;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &size);
  return input + "." + base64url_encode(bytes(mac, size));
}

// The token with one byte of its decoded segment `index` (0 header, 1 payload, 2 signature)
// flipped, re-encoded canonically.
std::string flip_byte(const std::string& jwt, int index, std::size_t at = 0) {
  std::vector<std::string> parts(3);
  std::size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const auto end = jwt.find('.', start);
    parts[i] = jwt.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end + 1;
  }
  std::string decoded = base64url_decode(parts[index]).value();
  decoded[at] = static_cast<char>(decoded[at] ^ 0x01);
  parts[index] = base64url_encode(decoded);
  return parts[0] + "." + parts[1] + "." + parts[2];
}

// ---- a JWKS server on loopback that counts its requests ----

class JwksServer {
 public:
  // With `tls`, connections are served over TLS with that context (the test's own certificate).
  explicit JwksServer(SSL_CTX* tls = nullptr) : tls_(tls) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~JwksServer() { stop(); }

  void stop() {
    if (!thread_.joinable()) return;
    stopping_ = true;
    thread_.join();
    ::close(fd_);
  }
  void set_body(std::string body, int status = 200) {
    std::lock_guard lock(mu_);
    body_ = std::move(body);
    status_ = status;
  }
  int hits() const { return hits_; }
  std::string url() const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) +
           "/.well-known/jwks.json";
  }

 private:
  void serve() {
    while (!stopping_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      SSL* ssl = nullptr;
      if (tls_ != nullptr) {
        ssl = SSL_new(tls_);
        SSL_set_fd(ssl, client);
        if (SSL_accept(ssl) == 1) answer(client, ssl);
        SSL_free(ssl);
      } else {
        answer(client, nullptr);
      }
      ::close(client);
    }
  }
  static ssize_t io(int client, SSL* ssl, char* buf, std::size_t size, bool write) {
    if (ssl != nullptr)
      return write ? SSL_write(ssl, buf, static_cast<int>(size))
                   : SSL_read(ssl, buf, static_cast<int>(size));
    return write ? ::send(client, buf, size, MSG_NOSIGNAL) : ::recv(client, buf, size, 0);
  }
  void answer(int client, SSL* ssl) {
    std::string request;
    char buf[1024];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = io(client, ssl, buf, sizeof buf, false);
      if (n <= 0) return;
      request.append(buf, static_cast<std::size_t>(n));
    }
    ++hits_;
    std::string body;
    int status = 200;
    {
      std::lock_guard lock(mu_);
      body = body_;
      status = status_;
    }
    const std::string response =
        "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n" +
        "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    std::size_t done = 0;
    while (done < response.size()) {
      const ssize_t n =
          io(client, ssl, const_cast<char*>(response.data()) + done, response.size() - done, true);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }

  SSL_CTX* tls_ = nullptr;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> hits_{0};
  std::mutex mu_;
  std::string body_ = "{\"keys\":[]}";
  int status_ = 200;
};

// ---- fixture: issuer A (RSA, EC, Ed25519 keys in a JWKS file), issuer B, an injected clock ----

constexpr const char* kIssA = "https://idp-a.example";
constexpr const char* kIssB = "https://idp-b.example";
constexpr std::int64_t kNow = 1'700'000'000;

IssuerConfig issuer(const std::string& name, const std::string& iss,
                    std::vector<std::string> audiences, const std::string& jwks_file = "",
                    const std::string& jwks_url = "") {
  IssuerConfig config;
  config.name = name;
  config.issuer = iss;
  config.audiences = std::move(audiences);
  config.jwks_file = jwks_file;
  config.jwks_url = jwks_url;
  return config;
}

class IdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/identity_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    write(dir_ / "a.json", jwks_of({&rsa_a_, &ec_a_, &ed_a_}).dump());
    write(dir_ / "b.json", jwks_of({&rsa_b_, &rsa_b_colliding_}).dump());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static void write(const std::filesystem::path& file, const std::string& text) {
    std::ofstream(file, std::ios::binary) << text;
  }

  Clock clock() {
    return [this] { return std::chrono::system_clock::time_point(seconds(now_.load())); };
  }
  Verifier make_verifier() {
    Verifier v(VerifierOptions{clock(), seconds(60)});
    EXPECT_TRUE(
        v.add_issuer(issuer("idp-a", kIssA, {"airlock", "other"}, (dir_ / "a.json").string())));
    EXPECT_TRUE(v.add_issuer(issuer("idp-b", kIssB, {"airlock"}, (dir_ / "b.json").string())));
    return v;
  }
  json claims(const char* iss = kIssA) const {
    return {{"iss", iss},        {"sub", "alice"},     {"aud", "airlock"},
            {"exp", now_ + 300}, {"iat", now_.load()}, {"jti", "token-1"}};
  }
  // Asserts `result` failed with `code`, and that its message quotes no part of `jwt`.
  static void expect_error(const Result<VerifiedToken>& result, const std::string& code,
                           const std::string& jwt) {
    ASSERT_FALSE(result.ok()) << "accepted; expected " << code;
    EXPECT_EQ(result.error().code, code) << result.error().message;
    std::size_t start = 0;
    while (start < jwt.size()) {
      auto end = jwt.find('.', start);
      if (end == std::string::npos) end = jwt.size();
      const std::string segment = jwt.substr(start, std::min<std::size_t>(end - start, 40));
      if (segment.size() >= 8) {
        EXPECT_EQ(result.error().message.find(segment), std::string::npos);
      }
      start = end + 1;
    }
  }

  // Made once for the suite: RSA key generation is slow.
  struct Keys {
    TestKey rsa_a = make_key("RSA", "rsa-1");
    TestKey ec_a = make_key("EC", "ec-1");
    TestKey ed_a = make_key("ED25519", "ed-1");
    TestKey rsa_b = make_key("RSA", "rsa-b");
    TestKey rsa_b_colliding = make_key("RSA", "rsa-1");  // B's key, same kid as one of A's
  };
  static const Keys& keys() {
    static const Keys k;
    return k;
  }

  std::filesystem::path dir_;
  std::atomic<std::int64_t> now_{kNow};
  const TestKey& rsa_a_ = keys().rsa_a;
  const TestKey& ec_a_ = keys().ec_a;
  const TestKey& ed_a_ = keys().ed_a;
  const TestKey& rsa_b_ = keys().rsa_b;
  const TestKey& rsa_b_colliding_ = keys().rsa_b_colliding;
};

// ---- accepted tokens ----

TEST_F(IdentityTest, AcceptsRs256Es256AndEdDsa) {
  auto v = make_verifier();
  for (const TestKey* k : {&rsa_a_, &ec_a_, &ed_a_}) {
    auto result = v.verify(token(header_for(*k), claims(), *k));
    ASSERT_TRUE(result.ok()) << alg_of(*k) << ": " << result.error().code << " "
                             << result.error().message;
    EXPECT_EQ(result->issuer_name, "idp-a");
    EXPECT_EQ(result->iss, kIssA);
    EXPECT_EQ(result->sub, "alice");
    EXPECT_EQ(result->aud, std::vector<std::string>{"airlock"});
    EXPECT_EQ(result->exp, kNow + 300);
    EXPECT_EQ(result->jti, "token-1");
    EXPECT_EQ(result->claims["sub"], "alice");
    EXPECT_FALSE(result->act.has_value());
  }
}

TEST_F(IdentityTest, AcceptsAnAudienceArrayAndTimesWithinTheSkew) {
  auto v = make_verifier();
  json c = claims();
  c["aud"] = {"someone-else", "other"};
  c["exp"] = kNow - 59;  // expired, but within the 60 s skew
  c["nbf"] = kNow + 59;
  c["iat"] = kNow + 59;
  auto result = v.verify(token(header_for(ed_a_), c, ed_a_));
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->aud, (std::vector<std::string>{"someone-else", "other"}));
}

// ---- time and audience claims ----

TEST_F(IdentityTest, RefusesAnExpiredToken) {
  auto v = make_verifier();
  json c = claims();
  c["exp"] = kNow - 61;
  const auto jwt = token(header_for(rsa_a_), c, rsa_a_);
  expect_error(v.verify(jwt), "expired", jwt);
}

TEST_F(IdentityTest, RefusesATokenWithoutExp) {
  auto v = make_verifier();
  json c = claims();
  c.erase("exp");
  const auto jwt = token(header_for(rsa_a_), c, rsa_a_);
  expect_error(v.verify(jwt), "malformed", jwt);
  c["exp"] = "tomorrow";
  const auto jwt2 = token(header_for(rsa_a_), c, rsa_a_);
  expect_error(v.verify(jwt2), "malformed", jwt2);
}

TEST_F(IdentityTest, RefusesATokenNotYetValid) {
  auto v = make_verifier();
  json c = claims();
  c["nbf"] = kNow + 120;
  const auto jwt = token(header_for(ec_a_), c, ec_a_);
  expect_error(v.verify(jwt), "not_yet_valid", jwt);
}

TEST_F(IdentityTest, RefusesATokenIssuedInTheFuture) {
  auto v = make_verifier();
  json c = claims();
  c["iat"] = kNow + 120;
  const auto jwt = token(header_for(ed_a_), c, ed_a_);
  expect_error(v.verify(jwt), "issued_in_future", jwt);
}

TEST_F(IdentityTest, RefusesAnUntrustedIssuer) {
  auto v = make_verifier();
  const auto jwt = token(header_for(rsa_a_), claims("https://evil.example"), rsa_a_);
  expect_error(v.verify(jwt), "wrong_issuer", jwt);
  json c = claims();
  c.erase("iss");
  const auto jwt2 = token(header_for(rsa_a_), c, rsa_a_);
  expect_error(v.verify(jwt2), "malformed", jwt2);
}

TEST_F(IdentityTest, RefusesAnotherAudience) {
  auto v = make_verifier();
  json c = claims();
  c["aud"] = "https://some-other-service";
  const auto jwt = token(header_for(rsa_a_), c, rsa_a_);
  expect_error(v.verify(jwt), "wrong_audience", jwt);
  c["aud"] = json::array();
  const auto jwt2 = token(header_for(rsa_a_), c, rsa_a_);
  expect_error(v.verify(jwt2), "wrong_audience", jwt2);
  c.erase("aud");
  const auto jwt3 = token(header_for(rsa_a_), c, rsa_a_);
  expect_error(v.verify(jwt3), "wrong_audience", jwt3);
}

// ---- signatures and keys ----

TEST_F(IdentityTest, RefusesATamperedSignatureOrPayload) {
  auto v = make_verifier();
  for (const TestKey* k : {&rsa_a_, &ec_a_, &ed_a_}) {
    const auto jwt = token(header_for(*k), claims(), *k);
    expect_error(v.verify(flip_byte(jwt, 2, 10)), "bad_signature", jwt);
    expect_error(v.verify(flip_byte(jwt, 1, 12)), "bad_signature", jwt);
  }
}

TEST_F(IdentityTest, RefusesAnotherIssuersKey) {
  auto v = make_verifier();
  // B's key, iss A, B's kid: A has no such key (a refetch of A's JWKS does not bring it).
  const auto jwt = token(header_for(rsa_b_), claims(kIssA), rsa_b_);
  expect_error(v.verify(jwt), "unknown_kid", jwt);
  // B's key whose kid collides with one of A's: A's key is used, and the signature fails.
  const auto jwt2 = token(header_for(rsa_b_colliding_), claims(kIssA), rsa_b_colliding_);
  expect_error(v.verify(jwt2), "bad_signature", jwt2);
  // The same token with iss B is B's own, and valid.
  EXPECT_TRUE(v.verify(token(header_for(rsa_b_colliding_), claims(kIssB), rsa_b_colliding_)).ok());
}

TEST_F(IdentityTest, RefusesAnUnknownKid) {
  auto v = make_verifier();
  json h = header_for(rsa_a_);
  h["kid"] = "no-such-key";
  const auto jwt = token(h, claims(), rsa_a_);
  expect_error(v.verify(jwt), "unknown_kid", jwt);
  h.erase("kid");
  const auto jwt2 = token(h, claims(), rsa_a_);
  expect_error(v.verify(jwt2), "malformed", jwt2);
}

TEST_F(IdentityTest, RefusesAlgNone) {
  auto v = make_verifier();
  for (const char* alg : {"none", "None", "NONE", ""}) {
    const std::string jwt = signing_input({{"alg", alg}, {"kid", "rsa-1"}}, claims()) + ".";
    expect_error(v.verify(jwt), "alg_not_allowed", jwt);
  }
}

TEST_F(IdentityTest, RefusesHs256KeyConfusionWithTheRsaPublicKey) {
  auto v = make_verifier();
  // The classic confusion: the RSA public key (which anyone has) used as an HMAC secret.
  const std::string jwt =
      hs256_token({{"alg", "HS256"}, {"kid", "rsa-1"}}, claims(), public_pem(rsa_a_));
  expect_error(v.verify(jwt), "alg_not_allowed", jwt);
  for (const char* alg : {"HS384", "HS512", "RS384", "PS256", "ES384", "ES256K", "Ed25519"}) {
    json h = header_for(rsa_a_);
    h["alg"] = alg;
    const auto forged = token(h, claims(), rsa_a_);
    expect_error(v.verify(forged), "alg_not_allowed", forged);
  }
}

TEST_F(IdentityTest, RefusesAnAlgorithmThatDoesNotMatchTheKey) {
  auto v = make_verifier();
  json h = header_for(ec_a_);  // the EC key's kid ...
  h["alg"] = "RS256";          // ... with an RSA algorithm
  const auto jwt = token(h, claims(), ec_a_);
  expect_error(v.verify(jwt), "alg_key_mismatch", jwt);
  json h2 = header_for(rsa_a_);
  h2["alg"] = "EdDSA";
  const auto jwt2 = token(h2, claims(), ed_a_);
  expect_error(v.verify(jwt2), "alg_key_mismatch", jwt2);
  json h3 = header_for(ed_a_);
  h3["alg"] = "ES256";
  const auto jwt3 = token(h3, claims(), ec_a_);
  expect_error(v.verify(jwt3), "alg_key_mismatch", jwt3);
}

TEST_F(IdentityTest, RefusesEs256SignaturesThatAreNot64Bytes) {
  auto v = make_verifier();
  const std::string input = signing_input(header_for(ec_a_), claims());
  const std::string raw = sign(ec_a_, input);
  // The same signature, DER encoded (what OpenSSL produces natively) or truncated.
  ECDSA_SIG* ecdsa = ECDSA_SIG_new();
  ECDSA_SIG_set0(ecdsa, BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), 32, nullptr),
                 BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()) + 32, 32, nullptr));
  unsigned char* der = nullptr;
  const int n = i2d_ECDSA_SIG(ecdsa, &der);
  const std::string der_sig(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
  OPENSSL_free(der);
  ECDSA_SIG_free(ecdsa);
  for (const std::string& sig : {der_sig, raw.substr(0, 63), raw + std::string(1, '\0')}) {
    const std::string jwt = input + "." + base64url_encode(sig);
    expect_error(v.verify(jwt), "bad_signature", jwt);
  }
  EXPECT_TRUE(v.verify(input + "." + base64url_encode(raw)).ok());
}

// ---- shape and size ----

TEST_F(IdentityTest, RefusesAnOversizedTokenBeforeParsing) {
  auto v = make_verifier();
  json c = claims();
  c["padding"] = std::string(17 * 1024, 'x');
  const auto jwt = token(header_for(ed_a_), c, ed_a_);  // validly signed, but too large
  expect_error(v.verify(jwt), "token_too_large", jwt);
  // Not even the segments are looked at.
  expect_error(v.verify(std::string(kMaxTokenBytes + 1, '!')), "token_too_large", "");
}

// NumericDate as whole seconds: fractions round down, out-of-range values are clamped (a cast
// of 2^64-1 or -1e300 to int64 is undefined; it wrapped to a negative time before).
TEST(NumericDate, RoundsDownAndClamps) {
  EXPECT_EQ(numeric_date_seconds(1700000000.9), 1700000000);
  EXPECT_EQ(numeric_date_seconds(-0.5), -1);
  EXPECT_EQ(numeric_date_seconds(18446744073709551615.0), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(numeric_date_seconds(-1e300), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(numeric_date_claim(json{{"exp", 18446744073709551615ull}}, "exp"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(numeric_date_claim(json{{"exp", 99.5}}, "exp"), 99);
  EXPECT_EQ(numeric_date_claim(json{{"exp", "99"}}, "exp"), std::nullopt);
  EXPECT_EQ(numeric_date_claim(json::object(), "exp"), std::nullopt);
}

TEST_F(IdentityTest, RefusesMalformedTokens) {
  auto v = make_verifier();
  const auto jwt = token(header_for(ed_a_), claims(), ed_a_);
  const auto first_dot = jwt.find('.');
  const std::vector<std::string> bad = {
      "",
      "abc",
      jwt.substr(0, jwt.rfind('.')),
      jwt + ".extra",
      "!!!" + jwt.substr(first_dot),                         // header not base64url
      base64url_encode("not json") + jwt.substr(first_dot),  // header not JSON
      base64url_encode("[1,2]") + jwt.substr(first_dot),     // header not an object
      jwt + "=",                                             // padding
      jwt.substr(0, first_dot) + "." + base64url_encode("[]") + jwt.substr(jwt.rfind('.')),
      token({{"alg", "EdDSA"}, {"kid", "ed-1"}, {"crit", {"exp"}}}, claims(), ed_a_),
      token({{"alg", "EdDSA"},
             {"kid", "ed-1"},
             {"deep", json::parse(std::string(20, '[') + std::string(20, ']'))}},
            claims(), ed_a_),
  };
  for (const auto& t : bad) expect_error(v.verify(t), "malformed", t);
  // A member named twice: the header's "alg" (the last would win: EdDSA, correctly signed) and
  // the payload's "sub".
  const std::string claims_text = claims().dump();
  const std::string alg_twice = base64url_encode(R"({"alg":"none","alg":"EdDSA","kid":"ed-1"})") + "." +
                                base64url_encode(claims_text);
  expect_error(v.verify(alg_twice + "." + base64url_encode(sign(ed_a_, alg_twice))), "malformed", alg_twice);
  const std::string sub_twice = base64url_encode(header_for(ed_a_).dump()) + "." +
                                base64url_encode(R"({"sub":"mallory",)" + claims_text.substr(1));
  expect_error(v.verify(sub_twice + "." + base64url_encode(sign(ed_a_, sub_twice))), "malformed", sub_twice);
}

// ---- delegation ----

TEST_F(IdentityTest, RefusesADelegatedSubjectTokenUnlessAllowed) {
  auto v = make_verifier();
  json c = claims();
  c["act"] = {{"sub", "agent-7"}};
  const auto jwt = token(header_for(ed_a_), c, ed_a_);
  expect_error(v.verify(jwt), "delegation_not_allowed", jwt);
  auto allowed = v.verify(jwt, VerifyOptions{true});
  ASSERT_TRUE(allowed.ok()) << allowed.error().message;
  ASSERT_TRUE(allowed->act.has_value());
  EXPECT_EQ((*allowed->act)["sub"], "agent-7");
}

// ---- the cache of verified tokens ----

TEST_F(IdentityTest, ACachedTokenHasItsClaimsCheckedOnEveryUse) {
  auto v = make_verifier();
  json c = claims();
  c["act"] = {{"sub", "agent-7"}};
  c["nbf"] = kNow + 120;  // not yet valid: the signature verifies, the time does not
  const auto jwt = token(header_for(ed_a_), c, ed_a_);
  expect_error(v.verify(jwt, VerifyOptions{true}), "not_yet_valid", jwt);
  now_ = kNow + 120;
  ASSERT_TRUE(v.verify(jwt, VerifyOptions{true}).ok());              // from the cache now
  expect_error(v.verify(jwt), "delegation_not_allowed", jwt);       // the options still count
  now_ = kNow + 300 + 61;
  expect_error(v.verify(jwt, VerifyOptions{true}), "expired", jwt);  // and so does time
}

TEST_F(IdentityTest, ACachedTokenIsDroppedWhenItsKeyIsWithdrawn) {
  auto v = make_verifier();
  json c = claims();
  c["exp"] = kNow + 3600;
  const auto jwt = token(header_for(ed_a_), c, ed_a_);
  ASSERT_TRUE(v.verify(jwt).ok());
  ASSERT_TRUE(v.verify(jwt).ok());  // cached
  // The issuer withdraws the key; once the cached keys are older than max_age they are
  // fetched again, and the token is verified against the new set, which lacks its kid.
  write(dir_ / "a.json", jwks_of({&rsa_a_, &ec_a_}).dump());
  now_ = kNow + 601;
  expect_error(v.verify(jwt), "unknown_kid", jwt);
}

TEST_F(IdentityTest, ATamperedTokenIsNotACacheHit) {
  auto v = make_verifier();
  const auto jwt = token(header_for(ed_a_), claims(), ed_a_);
  ASSERT_TRUE(v.verify(jwt).ok());
  std::string tampered = jwt;
  tampered[jwt.find('.') + 3] ^= 1;  // one bit of the payload
  EXPECT_FALSE(v.verify(tampered).ok());
}

// ---- JWKS from a URL: cache, rotation, rate limit, fail closed ----

TEST_F(IdentityTest, JwksUrlRotationIsFetchedOnceThenRateLimited) {
  JwksServer server;
  TestKey old_key = make_key("EC", "2024-key");
  TestKey new_key = make_key("EC", "2025-key");
  server.set_body(jwks_of({&old_key}).dump());
  Verifier v(VerifierOptions{clock(), seconds(60)});
  ASSERT_TRUE(v.add_issuer(issuer("idp-url", kIssA, {"airlock"}, "", server.url())));

  ASSERT_TRUE(v.verify(token(header_for(old_key), claims(), old_key)).ok());
  ASSERT_TRUE(v.verify(token(header_for(old_key), claims(), old_key)).ok());
  EXPECT_EQ(server.hits(), 1);  // cached

  server.set_body(jwks_of({&new_key}).dump());  // the identity provider rotates
  const auto rotated = token(header_for(new_key), claims(), new_key);
  now_ += 5;  // within 30 s of the first fetch: no refetch yet
  expect_error(v.verify(rotated), "unknown_kid", rotated);
  EXPECT_EQ(server.hits(), 1);

  now_ += 26;
  auto accepted = v.verify(token(header_for(new_key), claims(), new_key));
  ASSERT_TRUE(accepted.ok()) << accepted.error().message;
  EXPECT_EQ(server.hits(), 2);  // exactly one refetch

  // Another unknown kid right after: refused without a second fetch.
  json h = header_for(new_key);
  h["kid"] = "2026-key";
  const auto unknown = token(h, claims(), new_key);
  expect_error(v.verify(unknown), "unknown_kid", unknown);
  EXPECT_EQ(server.hits(), 2);
  // The withdrawn key is gone with the refetch.
  const auto withdrawn = token(header_for(old_key), claims(), old_key);
  expect_error(v.verify(withdrawn), "unknown_kid", withdrawn);
  EXPECT_EQ(server.hits(), 2);
  EXPECT_EQ(v.source(kIssA)->fetch_count(), 2U);
}

TEST_F(IdentityTest, JwksUrlUnreachableFailsClosed) {
  auto server = std::make_unique<JwksServer>();
  const std::string url = server->url();
  server.reset();  // nothing listens there any more
  Verifier v(VerifierOptions{clock(), seconds(60)});
  ASSERT_TRUE(v.add_issuer(issuer("idp-url", kIssA, {"airlock"}, "", url)));
  const auto jwt = token(header_for(ed_a_), claims(), ed_a_);
  expect_error(v.verify(jwt), "jwks_unavailable", jwt);
  expect_error(v.verify(jwt), "jwks_unavailable", jwt);
  EXPECT_EQ(v.source(kIssA)->fetch_count(), 1U);  // not retried on every request
}

TEST_F(IdentityTest, JwksUrlErrorsAndStaleKeysFailClosed) {
  JwksServer server;
  server.set_body(jwks_of({&ed_a_}).dump());
  Verifier v(VerifierOptions{clock(), seconds(60)});
  auto config = issuer("idp-url", kIssA, {"airlock"}, "", server.url());
  config.max_age = seconds(600);
  ASSERT_TRUE(v.add_issuer(config));
  ASSERT_TRUE(v.verify(token(header_for(ed_a_), claims(), ed_a_)).ok());
  // Past max_age the keys are fetched again; an error answer leaves no usable keys.
  server.set_body("oops", 500);
  now_ += 601;
  const auto jwt = token(header_for(ed_a_), claims(), ed_a_);
  auto stale = v.verify(jwt);
  expect_error(stale, "jwks_unavailable", jwt);
  EXPECT_NE(stale.error().message.find("HTTP 500"), std::string::npos) << stale.error().message;
  server.set_body("not json");
  now_ += 31;
  expect_error(v.verify(token(header_for(ed_a_), claims(), ed_a_)), "jwks_unavailable", jwt);
  server.set_body(jwks_of({&ed_a_}).dump());
  now_ += 31;
  EXPECT_TRUE(v.verify(token(header_for(ed_a_), claims(), ed_a_)).ok());
  EXPECT_EQ(server.hits(), 4);
}

TEST_F(IdentityTest, HttpGetCapsTheResponseSize) {
  JwksServer server;
  server.set_body(std::string(4096, ' ') + "{\"keys\":[]}");
  FetchOptions options;
  options.max_bytes = 1024;
  auto result = http_get(server.url(), options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "fetch_failed");
  options.max_bytes = 1 << 20;
  EXPECT_TRUE(http_get(server.url(), options).ok());
  EXPECT_FALSE(http_get("ftp://127.0.0.1/jwks", options).ok());
  EXPECT_FALSE(http_get("http://user:secret@127.0.0.1/jwks", options).ok());
}

TEST_F(IdentityTest, ConcurrentVerificationSharesOneFetch) {
  JwksServer server;
  server.set_body(jwks_of({&ed_a_, &ec_a_}).dump());
  Verifier v(VerifierOptions{clock(), seconds(60)});
  ASSERT_TRUE(v.add_issuer(issuer("idp-url", kIssA, {"airlock"}, "", server.url())));
  const auto ed = token(header_for(ed_a_), claims(), ed_a_);
  const auto ec = token(header_for(ec_a_), claims(), ec_a_);
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) accepted += v.verify(t % 2 ? ed : ec).ok() ? 1 : 0;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(accepted, 200);
  EXPECT_EQ(server.hits(), 1);
}

// A self-signed certificate for IP 127.0.0.1 and a server context presenting it.
struct TestTls {
  TestKey key = make_key("EC", "tls");
  X509* cert = X509_new();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());

  TestTls() {
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key.pkey.get());
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("jwks test"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
    for (const char* ext : {"subjectAltName=IP:127.0.0.1", "basicConstraints=critical,CA:TRUE"}) {
      const std::string text(ext);
      const auto eq = text.find('=');
      X509_EXTENSION* e =
          X509V3_EXT_conf(nullptr, &v3, text.substr(0, eq).c_str(), text.substr(eq + 1).c_str());
      X509_add_ext(cert, e, -1);
      X509_EXTENSION_free(e);
    }
    X509_sign(cert, key.pkey.get(), EVP_sha256());
    SSL_CTX_use_certificate(ctx, cert);
    SSL_CTX_use_PrivateKey(ctx, key.pkey.get());
  }
  ~TestTls() {
    SSL_CTX_free(ctx);
    X509_free(cert);
  }
  void write_cert(const std::filesystem::path& file) const {
    FILE* f = std::fopen(file.c_str(), "w");
    PEM_write_X509(f, cert);
    std::fclose(f);
  }
};

TEST_F(IdentityTest, JwksOverHttpsVerifiesThePeer) {
  TestTls tls;
  JwksServer server(tls.ctx);
  server.set_body(jwks_of({&ed_a_}).dump());
  tls.write_cert(dir_ / "ca.pem");
  FetchOptions options;
  // Not signed by a system CA: refused.
  auto untrusted = http_get(server.url(), options);
  ASSERT_FALSE(untrusted.ok());
  EXPECT_NE(untrusted.error().message.find("TLS handshake"), std::string::npos)
      << untrusted.error().message;
  // Trusted through the configured CA file, and the verifier accepts tokens with its keys.
  Verifier v(VerifierOptions{clock(), seconds(60)});
  auto config = issuer("idp-tls", kIssA, {"airlock"}, "", server.url());
  config.ca_file = (dir_ / "ca.pem").string();
  ASSERT_TRUE(v.add_issuer(config));
  auto verified = v.verify(token(header_for(ed_a_), claims(), ed_a_));
  ASSERT_TRUE(verified.ok()) << verified.error().message;
  // The right CA but another name: the certificate is for 127.0.0.1 only.
  options.ca_file = (dir_ / "ca.pem").string();
  std::string other_name = server.url();
  other_name.replace(other_name.find("127.0.0.1"), 9, "localhost");
  auto wrong_name = http_get(other_name, options);
  ASSERT_FALSE(wrong_name.ok());
  EXPECT_NE(wrong_name.error().message.find("TLS handshake"), std::string::npos)
      << wrong_name.error().message;
  EXPECT_TRUE(http_get(server.url(), options).ok());
  // https to a plain http server: it waits for a request head that never comes, and the
  // deadline ends the exchange.
  JwksServer plain;
  std::string tls_to_plain = plain.url();
  tls_to_plain.replace(0, 4, "https");
  options.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  auto stuck = http_get(tls_to_plain, options);
  ASSERT_FALSE(stuck.ok());
  EXPECT_NE(stuck.error().message.find("timeout"), std::string::npos) << stuck.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(plain.hits(), 0);
}

// ---- Airlock's own tokens ----

TEST_F(IdentityTest, AirlockIssuerRoundTripAndExpiredReplay) {
  auto signer = TokenSigner::load_or_create(dir_ / "identity-key.pem");
  ASSERT_TRUE(signer.ok()) << signer.error().message;
  Verifier v(VerifierOptions{clock(), seconds(60)});
  IssuerConfig config = issuer("airlock", "airlock://local", {"airlock"});
  config.jwks_document = signer->jwks().dump();
  ASSERT_TRUE(v.add_issuer(config));
  json c = {
      {"iss", "airlock://local"}, {"sub", "alice"}, {"aud", "airlock"},           {"iat", kNow},
      {"exp", kNow + 300},        {"jti", "x1"},    {"act", {{"sub", "agent-7"}}}};
  auto jwt = signer->issue(c);
  ASSERT_TRUE(jwt.ok());
  auto header = json::parse(base64url_decode(jwt->substr(0, jwt->find('.'))).value());
  EXPECT_EQ(header, (json{{"alg", "EdDSA"}, {"typ", "JWT"}, {"kid", signer->kid()}}));
  auto verified = v.verify(*jwt, VerifyOptions{true});
  ASSERT_TRUE(verified.ok()) << verified.error().code << " " << verified.error().message;
  EXPECT_EQ(verified->issuer_name, "airlock");
  EXPECT_EQ(verified->sub, "alice");
  EXPECT_EQ((*verified->act)["sub"], "agent-7");
  // Replayed after expiry (and the skew).
  now_ = kNow + 300 + 61;
  expect_error(v.verify(*jwt, VerifyOptions{true}), "expired", *jwt);
  // The published JWKS is public only.
  EXPECT_FALSE(signer->jwks()["keys"][0].contains("d"));
  EXPECT_FALSE(signer->issue(json::array()).ok());
}

TEST_F(IdentityTest, SignerKeyFileIsCreated0600AndReloadedWithTheSameKid) {
  const auto file = dir_ / "identity-key.pem";
  auto first = TokenSigner::load_or_create(file);
  ASSERT_TRUE(first.ok()) << first.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  auto second = TokenSigner::load_or_create(file);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(first->kid(), second->kid());
  EXPECT_EQ(first->kid(), jwk_thumbprint(first->jwks()["keys"][0]).value());
  EXPECT_EQ(first->kid().size(), 43U);  // base64url of 32 bytes
  // Tokens of one are verified with the other's JWKS.
  Verifier v(VerifierOptions{clock(), seconds(60)});
  IssuerConfig config = issuer("airlock", "airlock://local", {"airlock"});
  config.jwks_document = second->jwks().dump();
  ASSERT_TRUE(v.add_issuer(config));
  EXPECT_TRUE(
      v.verify(first->issue({{"iss", "airlock://local"}, {"aud", "airlock"}, {"exp", kNow + 10}})
                   .value())
          .ok());
  // A key file others can read is refused; so is one that is not a key.
  ASSERT_EQ(::chmod(file.c_str(), 0640), 0);
  auto insecure = TokenSigner::load_or_create(file);
  ASSERT_FALSE(insecure.ok());
  EXPECT_EQ(insecure.error().code, "insecure_key_file");
  write(dir_ / "garbage.pem", "not a key");
  ASSERT_EQ(::chmod((dir_ / "garbage.pem").c_str(), 0600), 0);
  auto garbage = TokenSigner::load_or_create(dir_ / "garbage.pem");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code, "key_file_error");
}

// ---- configuration ----

TEST_F(IdentityTest, RefusesIncompleteIssuerConfigs) {
  Verifier v(VerifierOptions{clock(), seconds(60)});
  EXPECT_EQ(v.add_issuer(issuer("x", kIssA, {})).error().code, "invalid_config");
  EXPECT_EQ(v.add_issuer(issuer("x", kIssA, {"airlock"})).error().code, "invalid_config");
  EXPECT_EQ(v.add_issuer(issuer("x", kIssA, {"airlock"}, "/f", "http://u")).error().code,
            "invalid_config");
  EXPECT_TRUE(v.add_issuer(issuer("x", kIssA, {"airlock"}, "/f")).ok());
  EXPECT_EQ(v.add_issuer(issuer("y", kIssA, {"airlock"}, "/g")).error().code, "invalid_config");
  // A missing JWKS file: the issuer is unavailable, not an empty key set.
  const auto jwt = token(header_for(ed_a_), claims(), ed_a_);
  expect_error(v.verify(jwt), "jwks_unavailable", jwt);
}

// ---- building blocks: base64url, JWKs, known-answer vectors ----

TEST(IdentityBase64Url, RoundTripsAndIsStrict) {
  for (const std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "\xff\xfe\xfd"}) {
    const auto encoded = base64url_encode(s);
    EXPECT_EQ(encoded.find('='), std::string::npos);
    EXPECT_EQ(base64url_decode(encoded).value(), s);
  }
  EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
  EXPECT_EQ(base64url_decode("-_8").value(), "\xfb\xff");
  for (const char* bad :
       {"Zg==", "Zm9v=", "+/8", "ab/c", "Z", "Zm9vY", "Zm 9v", "Zm9v\n", "Zh", "Zm9"}) {
    auto result = base64url_decode(bad);
    EXPECT_FALSE(result.ok()) << bad;
    if (!result.ok()) {
      EXPECT_EQ(result.error().code, "malformed");
    }
  }
  EXPECT_EQ(base64url_decode("Zg").value(), "f");  // "Zh" above: the same byte, non-canonical
  EXPECT_EQ(base64url_decode("Zm8").value(), "fo");
}

TEST(IdentityJwk, KeySetSkipsKeysItCannotUseAndDuplicatedKids) {
  TestKey rsa = make_key("RSA", "r");
  TestKey ec = make_key("EC", "e");
  TestKey ed = make_key("ED25519", "d");
  TestKey dup1 = make_key("ED25519", "dup");
  TestKey dup2 = make_key("ED25519", "dup");
  json doc = jwks_of({&rsa, &ec, &ed, &dup1, &dup2});
  json wrong_alg = public_jwk(make_key("EC", "ec-claims-rs256"), "RS256");
  json enc = public_jwk(make_key("RSA", "enc"));
  enc["use"] = "enc";
  json no_kid = public_jwk(make_key("ED25519", ""));
  json small_rsa = public_jwk(TestKey{
      std::shared_ptr<EVP_PKEY>(
          EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(1024)), EVP_PKEY_free),
      "small"});
  json off_curve = public_jwk(ec);
  off_curve["kid"] = "off-curve";
  off_curve["y"] = base64url_encode(std::string(32, '\x01'));
  for (const auto& k : {wrong_alg, enc, no_kid, small_rsa, off_curve}) doc["keys"].push_back(k);
  doc["keys"].push_back({{"kty", "oct"}, {"kid", "hmac"}, {"k", "c2VjcmV0"}});
  auto set = KeySet::parse(doc.dump());
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->size(), 3U);
  EXPECT_EQ(set->find("r")->alg, Alg::RS256);
  EXPECT_EQ(set->find("e")->alg, Alg::ES256);
  EXPECT_EQ(set->find("d")->alg, Alg::EdDSA);
  for (const char* kid : {"dup", "ec-claims-rs256", "enc", "small", "off-curve", "hmac"})
    EXPECT_EQ(set->find(kid), nullptr) << kid;
  EXPECT_EQ(parse_jwk(small_rsa).error().code, "unsupported_key");
  EXPECT_EQ(parse_jwk(off_curve).error().code, "invalid_key");
  EXPECT_FALSE(KeySet::parse("{\"keys\": 1}").ok());
  EXPECT_FALSE(KeySet::parse("[]").ok());
}

// A JWKS that names a member twice is refused whole, as a token is: the key below is d's,
// with a second "x" that a reader keeping the first member would take instead (#33).
TEST(IdentityJwk, AJwksNamingAMemberTwiceIsRefused) {
  TestKey ed = make_key("ED25519", "d");
  const std::string key = public_jwk(ed).dump();
  const std::string repeated = key.substr(0, key.size() - 1) + R"(,"x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"})";
  auto set = KeySet::parse(R"({"keys":[)" + repeated + "]}");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().code, "invalid_jwks");
  EXPECT_NE(set.error().message.find("twice"), std::string::npos) << set.error().message;
  EXPECT_FALSE(KeySet::parse(R"({"keys":[],"keys":[)" + key + "]}").ok());
  EXPECT_TRUE(KeySet::parse(R"({"keys":[)" + key + "]}").ok());
}

// RFC 8037 appendix A: the Ed25519 key, its thumbprint and the signature of "Example of Ed25519
// signing" (header {"alg":"EdDSA"}).
TEST(IdentityJwk, Rfc8037KnownAnswers) {
  const json jwk = {
      {"kty", "OKP"}, {"crv", "Ed25519"}, {"x", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}};
  EXPECT_EQ(jwk_thumbprint(jwk).value(), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
  auto key = parse_jwk(jwk);
  ASSERT_TRUE(key.ok()) << key.error().message;
  const std::string input = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc";
  const std::string sig =
      base64url_decode(
          "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg")
          .value();
  EXPECT_TRUE(verify_signature(Alg::EdDSA, key->key.get(), input, sig));
  EXPECT_FALSE(verify_signature(Alg::EdDSA, key->key.get(), input + "x", sig));
  EXPECT_FALSE(verify_signature(Alg::RS256, key->key.get(), input, sig));  // the key's type decides
}

}  // namespace
}  // namespace airlock::identity
