# Every dependency comes from Debian 12 packages (scripts/install-deps.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(OpenSSL 3 REQUIRED)
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
# Linked statically: one less shared object for every `airlock run` to load.
find_library(SECCOMP_STATIC_LIB NAMES libseccomp.a REQUIRED)
find_package(Boost 1.81 REQUIRED)  # Asio and Beast (header-only): the egress proxy
pkg_check_modules(IDN2 REQUIRED IMPORTED_TARGET libidn2)
find_package(OpenSSL 3 REQUIRED)
# DLP: Vectorscan (the portable Hyperscan), RE2, yaml-cpp (policy files).
pkg_check_modules(HS REQUIRED IMPORTED_TARGET libhs)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
find_package(yaml-cpp REQUIRED)
