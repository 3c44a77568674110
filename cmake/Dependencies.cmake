# Every dependency comes from Debian 12 packages (scripts/install-deps.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(yaml-cpp REQUIRED)
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
# Linked statically: one less shared object for every `airlock run` to load.
find_library(SECCOMP_STATIC_LIB NAMES libseccomp.a REQUIRED)
