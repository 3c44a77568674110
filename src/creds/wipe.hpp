// A secret out of memory once it is no longer needed: its bytes are overwritten (with
// OPENSSL_cleanse, which the compiler may not drop as a dead store) before it is emptied.
#pragma once

#include <map>
#include <string>

namespace airlock::creds {

void wipe_secret(std::string& value);

// Every value of an environment that holds credentials; the names stay.
void wipe_secrets(std::map<std::string, std::string>& env);

}  // namespace airlock::creds
