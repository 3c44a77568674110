#include "creds/wipe.hpp"

#include <openssl/crypto.h>

namespace airlock::creds {

void wipe_secret(std::string& value) {
  if (!value.empty()) OPENSSL_cleanse(value.data(), value.size());
  value.clear();
}

void wipe_secrets(std::map<std::string, std::string>& env) {
  for (auto& [name, value] : env) wipe_secret(value);
}

}  // namespace airlock::creds
