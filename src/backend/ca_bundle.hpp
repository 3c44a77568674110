// The sandbox's trust store for header injection: the system's CA bundle followed by the
// per-run CA (egress/tls_intercept.hpp), in a private file that lives as long as the run and
// is bound read-only inside.
#pragma once

#include <string>

#include "common/result.hpp"
#include "sandbox/spec.hpp"

namespace airlock::backend {

// Where the bundle is inside every sandbox that has one.
inline constexpr const char* kCaBundleInside = "/etc/airlock/ca-certificates.crt";
inline constexpr const char* kSystemCaBundle = "/etc/ssl/certs/ca-certificates.crt";

class RunCaBundle {
 public:
  // Writes `system_bundle` (when it exists) followed by `extra_pem` into a new file of the
  // temporary directory, created exclusively.
  static Result<RunCaBundle> write(const std::string& extra_pem,
                                   const std::string& system_bundle = kSystemCaBundle);
  RunCaBundle(RunCaBundle&& other) noexcept;
  RunCaBundle& operator=(RunCaBundle&&) = delete;
  RunCaBundle(const RunCaBundle&) = delete;
  ~RunCaBundle();  // removes the file

  const std::string& path() const { return path_; }

  // Binds the file read-only at kCaBundleInside and points SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
  // CURL_CA_BUNDLE and NODE_EXTRA_CA_CERTS at it.
  void trust_inside(sandbox::Spec& spec) const;

 private:
  explicit RunCaBundle(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace airlock::backend
