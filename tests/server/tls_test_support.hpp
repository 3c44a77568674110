// For the TLS tests: a throwaway PKI made with the `openssl` command, and a small TLS client
// on a blocking socket with a receive timeout (a server that hangs fails the test instead of
// holding it).
#pragma once

#include <cstdint>
#include <string>

namespace airlock::server::test {

// In a temp directory: ca.pem/.key (the test CA), server.pem/.key (CN=localhost, SAN
// IP:127.0.0.1 and DNS:localhost), client.pem/.key (CN=research-agent,O=agents, URI SAN
// spiffe://example.org/agents/research, from the CA), other-ca.pem and stranger.pem/.key (the
// same subject and SAN, from another CA).
class TestPki {
 public:
  TestPki();
  ~TestPki();
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

inline constexpr const char* kClientSubject = "CN=research-agent,O=agents";
inline constexpr const char* kClientUri = "spiffe://example.org/agents/research";

struct TlsClientOptions {
  std::string ca_file;                // verify the server with it; "": no verification
  std::string cert_file, key_file;    // a client certificate
  int min_version = 0, max_version = 0;  // TLS1_VERSION...; 0: OpenSSL's default
  std::string tls12_ciphers;          // "": OpenSSL's default
  int security_level = -1;            // -1: OpenSSL's default
};

struct TlsReply {
  std::string error;  // "": the exchange completed; else OpenSSL's reason
  int status = 0;     // 0: no HTTP answer
  std::string body;
};

// One HTTP/1.1 request (Connection: close) over TLS to 127.0.0.1:port.
TlsReply tls_request(std::uint16_t port, const TlsClientOptions& options, const std::string& method,
                     const std::string& target, const std::string& body = "",
                     const std::string& key = "");

// A TCP connection to 127.0.0.1:port that sends `bytes` and reads until the server closes
// it. Returns what came back; `closed` false if nothing closed it within `wait_seconds`.
struct RawExchange {
  std::string received;
  bool closed = false;
};
RawExchange raw_exchange(std::uint16_t port, const std::string& bytes, int wait_seconds);

}  // namespace airlock::server::test
