#include "tls_test_support.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace airlock::server::test {
namespace {

namespace fs = std::filesystem;

// EC P-256 keys (fast to make); certificates valid for two days.
constexpr const char* kMakePki = R"sh(set -e
cd "$1"
ca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" \
    -out "$1.pem" -days 2 -subj "/CN=$2" -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign
}
leaf() {  # NAME CA SUBJECT EXTENSIONS
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1.key" \
    -out "$1.csr" -subj "$3"
  printf '%b\n' "$4" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -set_serial "0x$(openssl rand -hex 8)" \
    -days 2 -out "$1.pem" -extfile "$1.ext"
}
ca ca "Airlock Test CA"
ca other-ca "Another CA"
leaf server ca /CN=localhost "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth"
leaf client ca /O=agents/CN=research-agent \
  "subjectAltName=URI:spiffe://example.org/agents/research\nextendedKeyUsage=clientAuth"
leaf stranger other-ca /O=agents/CN=research-agent \
  "subjectAltName=URI:spiffe://example.org/agents/research\nextendedKeyUsage=clientAuth"
)sh";

int connect_loopback(std::uint16_t port, int wait_seconds) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket");
  timeval tv{wait_seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw std::runtime_error("connect");
  }
  return fd;
}

std::string ssl_error() {
  unsigned long code = 0, last = 0;
  while ((code = ERR_get_error()) != 0) last = code;
  if (last == 0) return "no OpenSSL error (the connection closed, or timed out)";
  char text[256];
  ERR_error_string_n(last, text, sizeof text);
  return text;
}

using Context = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

Context client_context(const TlsClientOptions& o) {
  Context ctx(SSL_CTX_new(TLS_client_method()), &SSL_CTX_free);
  SSL_CTX* c = ctx.get();
  if (o.security_level >= 0) SSL_CTX_set_security_level(c, o.security_level);
  if (o.min_version) SSL_CTX_set_min_proto_version(c, o.min_version);
  if (o.max_version) SSL_CTX_set_max_proto_version(c, o.max_version);
  if (!o.tls12_ciphers.empty() && SSL_CTX_set_cipher_list(c, o.tls12_ciphers.c_str()) != 1)
    throw std::runtime_error("cipher list: " + ssl_error());
  if (!o.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(c, o.ca_file.c_str(), nullptr) != 1)
      throw std::runtime_error("CA file: " + ssl_error());
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
  }
  if (!o.cert_file.empty() &&
      (SSL_CTX_use_certificate_chain_file(c, o.cert_file.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(c, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1))
    throw std::runtime_error("client certificate: " + ssl_error());
  return ctx;
}

std::string request_text(const std::string& method, const std::string& target,
                         const std::string& body, const std::string& key) {
  std::string text = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!key.empty()) text += "Authorization: Bearer " + key + "\r\n";
  if (method == "POST") text += "Content-Type: application/json\r\n";
  text += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return text;
}

// Reads to the server's close; the status line and the body after the head.
void read_answer(SSL* ssl, TlsReply& reply) {
  std::string in;
  char buf[16384];
  int n = 0;
  while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) in.append(buf, static_cast<std::size_t>(n));
  if (SSL_get_error(ssl, n) != SSL_ERROR_ZERO_RETURN && in.empty()) reply.error = ssl_error();
  if (!in.starts_with("HTTP/1.1 ")) return;
  reply.status = std::atoi(in.c_str() + 9);
  if (auto head_end = in.find("\r\n\r\n"); head_end != std::string::npos)
    reply.body = in.substr(head_end + 4);
}

}  // namespace

TestPki::TestPki() {
  std::string tmpl = (fs::temp_directory_path() / "airlock-pki-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
  dir_ = tmpl;
  std::ofstream(dir_ + "/make.sh") << kMakePki;
  const std::string command = "sh " + dir_ + "/make.sh " + dir_ + " >" + dir_ + "/make.log 2>&1";
  if (std::system(command.c_str()) != 0)
    throw std::runtime_error("making the test PKI failed; see " + dir_ + "/make.log");
}

TestPki::~TestPki() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

TlsReply tls_request(std::uint16_t port, const TlsClientOptions& options, const std::string& method,
                     const std::string& target, const std::string& body, const std::string& key) {
  ERR_clear_error();
  TlsReply reply;
  Context ctx = client_context(options);
  const int fd = connect_loopback(port, 20);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), &SSL_free);
  SSL_set_fd(ssl.get(), fd);
  SSL_set_tlsext_host_name(ssl.get(), "localhost");
  if (SSL_connect(ssl.get()) != 1) {
    reply.error = ssl_error();
  } else {
    // TLS 1.3: a client certificate the server refuses shows at the first read.
    const std::string text = request_text(method, target, body, key);
    if (SSL_write(ssl.get(), text.data(), static_cast<int>(text.size())) <= 0)
      reply.error = ssl_error();
    else
      read_answer(ssl.get(), reply);
  }
  ::close(fd);
  return reply;
}

RawExchange raw_exchange(std::uint16_t port, const std::string& bytes, int wait_seconds) {
  RawExchange out;
  const int fd = connect_loopback(port, wait_seconds);
  if (!bytes.empty()) (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      out.received.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    out.closed = n == 0 || errno == ECONNRESET;  // not EAGAIN: the receive timeout
    break;
  }
  ::close(fd);
  return out;
}

}  // namespace airlock::server::test
