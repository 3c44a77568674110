# Every dependency comes from Debian 12 packages (scripts/install-deps.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(OpenSSL 3 REQUIRED)   # SHA-256, HMAC, Ed25519
find_package(SQLite3 REQUIRED)     # the audit log and the daemon's state
find_package(yaml-cpp REQUIRED)    # configuration and policy files

# Sandbox: libseccomp, linked statically (one less shared object for every `airlock run`).
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
find_library(SECCOMP_STATIC_LIB NAMES libseccomp.a REQUIRED)

# Egress and the daemon: Asio and Beast (header-only), libidn2 for IDNA host names.
find_package(Boost 1.81 REQUIRED)
pkg_check_modules(IDN2 REQUIRED IMPORTED_TARGET libidn2)

# DLP: Vectorscan (the portable Hyperscan) and RE2.
pkg_check_modules(HS REQUIRED IMPORTED_TARGET libhs)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
