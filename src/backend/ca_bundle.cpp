#include "backend/ca_bundle.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/no_sigpipe.hpp"
#include "common/unique_fd.hpp"

namespace airlock::backend {
namespace {

Error failed(const std::string& what) {
  return Error::make("setup_error",
                     "the sandbox's CA bundle: " + what + ": " + std::strerror(errno));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

Result<RunCaBundle> RunCaBundle::write(const std::string& extra_pem,
                                       const std::string& system_bundle) {
  std::error_code ec;
  auto dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  std::string path = (dir / "airlock-ca-XXXXXX").string();
  UniqueFd fd(::mkstemp(path.data()));
  if (!fd) return failed("mkstemp in " + dir.string());
  RunCaBundle bundle(path);  // from here on the file goes when `bundle` does
  // Certificates only, readable by the sandbox's user whatever it maps to.
  if (::fchmod(fd.get(), 0644) != 0) return failed("fchmod");
  std::string system = read_file(system_bundle);
  if (!system.empty() && system.back() != '\n') system += '\n';
  if (!write_all(fd.get(), system + extra_pem)) return failed("write");
  if (::fsync(fd.get()) != 0) return failed("fsync");
  return bundle;
}

RunCaBundle::RunCaBundle(RunCaBundle&& other) noexcept : path_(std::move(other.path_)) {
  other.path_.clear();
}

RunCaBundle::~RunCaBundle() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

void RunCaBundle::trust_inside(sandbox::Spec& spec) const {
  spec.binds.push_back({path_, kCaBundleInside, false});
  for (const char* name :
       {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"})
    spec.env[name] = kCaBundleInside;
}

}  // namespace airlock::backend
