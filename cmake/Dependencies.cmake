# Every dependency comes from Debian 12 packages (scripts/install-deps.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
# DLP: Vectorscan (the portable Hyperscan), RE2, OpenSSL (HMAC), yaml-cpp (policy files).
pkg_check_modules(HS REQUIRED IMPORTED_TARGET libhs)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
find_package(OpenSSL REQUIRED)
find_package(yaml-cpp REQUIRED)
