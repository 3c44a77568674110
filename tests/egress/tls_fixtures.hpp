// TLS servers for tests of header injection (tests/egress/inject_test.cpp, and the daemon's
// tests/server/credentials_test.cpp): a throwaway PKI made with the openssl command, and an
// HTTPS server on loopback that records the requests it receives.
#pragma once

#include <openssl/ssl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "egress_fixtures.hpp"

namespace airlock::egress::fixtures {

// Throwaway PKI: a trusted test CA, a rogue CA nobody trusts, and server certificates.
class TestPki {
 public:
  TestPki() : dir_(std::filesystem::temp_directory_path() / ("airlock-inject-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    make_ca("ca", "Airlock test CA");
    make_ca("rogue", "Rogue CA");
  }
  ~TestPki() { std::filesystem::remove_all(dir_); }

  // A certificate for `name` signed by `ca` ("ca" or "rogue"); returns its file stem.
  std::string server(const std::string& name, const std::string& ca) {
    std::string stem = path(name + "-" + ca);
    std::ofstream(stem + ".ext") << "subjectAltName=DNS:" << name
                                 << "\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n";
    run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=" + name +
        " -keyout " + stem + ".key -out " + stem + ".csr && openssl x509 -req -in " + stem +
        ".csr -CA " + path(ca) + ".pem -CAkey " + path(ca) +
        ".key -CAcreateserial -days 1 -extfile " + stem + ".ext -out " + stem + ".pem");
    return stem;
  }
  std::string ca_file() const { return path("ca") + ".pem"; }

 private:
  std::string path(const std::string& stem) const { return (dir_ / stem).string(); }
  void make_ca(const std::string& stem, const std::string& cn) {
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj '/CN=" +
        cn +
        "' -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign "
        "-keyout " +
        path(stem) + ".key -out " + path(stem) + ".pem");
  }
  static void run(const std::string& command) {
    if (std::system(("(" + command + ") >/dev/null 2>&1").c_str()) != 0)
      throw std::runtime_error("failed: " + command);
  }
  std::filesystem::path dir_;
};

// An HTTPS server on 127.0.0.1 with keep-alive: records every request head and body, and
// answers "hello over tls N" (never echoing a header).
class TlsServer {
 public:
  explicit TlsServer(const std::string& stem)
      : ctx_(SSL_CTX_new(TLS_server_method()), SSL_CTX_free) {
    if (SSL_CTX_use_certificate_chain_file(ctx_.get(), (stem + ".pem").c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx_.get(), (stem + ".key").c_str(), SSL_FILETYPE_PEM) != 1)
      throw std::runtime_error("server certificate " + stem);
  }
  std::uint16_t port() const { return server_.port(); }
  int connections() const { return server_.connections(); }
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void serve(int fd) {
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx_.get()), SSL_free);
    SSL_set_fd(ssl.get(), fd);
    if (SSL_accept(ssl.get()) != 1) return;
    for (int n = 1;; ++n) {
      std::string request = read_request(ssl.get());
      if (request.empty()) return;
      {
        std::lock_guard lock(mu_);
        requests_.push_back(request);
      }
      std::string body = "hello over tls " + std::to_string(n) + "\n";
      std::string answer =
          "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      if (SSL_write(ssl.get(), answer.data(), static_cast<int>(answer.size())) <= 0) return;
    }
  }
  // The head and, with a Content-Length, the body; "" unless both arrived whole.
  static std::string read_request(SSL* ssl) {
    std::string data;
    char c;
    while (data.find("\r\n\r\n") == std::string::npos && SSL_read(ssl, &c, 1) == 1) data += c;
    if (data.find("\r\n\r\n") == std::string::npos) return {};
    std::string lower = data;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (auto at = lower.find("\r\ncontent-length: "); at != std::string::npos) {
      std::size_t length = std::stoul(lower.substr(at + 18));
      std::string body(length, '\0');
      for (std::size_t got = 0; got < length;) {
        int n = SSL_read(ssl, body.data() + got, static_cast<int>(length - got));
        if (n <= 0) return {};  // incomplete: not a request
        got += static_cast<std::size_t>(n);
      }
      data += body;
    }
    return data;
  }

  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx_;
  std::mutex mu_;
  std::vector<std::string> requests_;
  LoopbackServer server_{[this](int fd) { serve(fd); }};
};

}  // namespace airlock::egress::fixtures
