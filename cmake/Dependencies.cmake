# Every dependency comes from Debian 12 packages (scripts/install-deps.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(OpenSSL 3 REQUIRED)   # SHA-256, HMAC, Ed25519; TLS for the daemon's API
find_package(SQLite3 REQUIRED)     # the audit log and the daemon's state
find_package(yaml-cpp REQUIRED)    # configuration and policy files
find_package(prometheus-cpp CONFIG REQUIRED)  # the daemon's /metrics (core only)

# Sandbox: libseccomp, linked statically (one less shared object for every `airlock run`).
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
find_library(SECCOMP_STATIC_LIB NAMES libseccomp.a REQUIRED)

# JSON Schema: valijson (header-only). Its errors throw instead of calling abort(); every
# target that includes it links this, so that no translation unit can forget the definition.
add_library(airlock_dep_valijson INTERFACE)
target_compile_definitions(airlock_dep_valijson INTERFACE VALIJSON_USE_EXCEPTIONS=1)

# Request bodies and tool output: RapidJSON's reader (header-only) parses them into nlohmann
# values, several times faster than nlohmann's own lexer (common/json_limits.cpp).
find_path(RAPIDJSON_INCLUDE_DIR rapidjson/reader.h REQUIRED)
add_library(airlock_dep_rapidjson INTERFACE)
target_include_directories(airlock_dep_rapidjson SYSTEM INTERFACE ${RAPIDJSON_INCLUDE_DIR})

# Egress and the daemon: Asio and Beast (header-only), libidn2 for IDNA host names.
find_package(Boost 1.81 REQUIRED)
# Boost.URL: the one URL parser (common/http_url.cpp). Its static archive, as for the other
# libraries every program loads (AIRLOCK_STATIC_DEPS): no new shared object at each start.
find_library(AIRLOCK_BOOST_URL_ARCHIVE NAMES libboost_url.a REQUIRED)
add_library(airlock_dep_boost_url INTERFACE)
target_link_libraries(airlock_dep_boost_url INTERFACE ${AIRLOCK_BOOST_URL_ARCHIVE} Boost::headers)
pkg_check_modules(IDN2 REQUIRED IMPORTED_TARGET libidn2)

# DLP: Vectorscan (the portable Hyperscan) and RE2.
pkg_check_modules(HS REQUIRED IMPORTED_TARGET libhs)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)

# Credentials: libpq for the postgres provider's roles (and the tests' throwaway clusters).
# Shared always: Debian's libpq.a needs libpgcommon, libpgport, GSSAPI and LDAP after it.
pkg_check_modules(PQ REQUIRED IMPORTED_TARGET libpq)
add_library(airlock_dep_pq INTERFACE)
target_link_libraries(airlock_dep_pq INTERFACE PkgConfig::PQ)

# The libraries above that every `airlock` process loads are linked from their static archives
# by default: loading six shared objects and resolving ~7,900 symbols cost ~1.5 ms of every
# `airlock run` (docs/performance.md). AIRLOCK_STATIC_DEPS=OFF links the shared ones.
option(AIRLOCK_STATIC_DEPS "Link Vectorscan, RE2, libidn2, yaml-cpp, OpenSSL and SQLite statically" ON)
function(airlock_dependency name shared_target)
  add_library(airlock_dep_${name} INTERFACE)
  if(AIRLOCK_STATIC_DEPS)
    set(archives)
    foreach(archive IN LISTS ARGN)
      find_library(AIRLOCK_STATIC_${archive} NAMES lib${archive}.a REQUIRED)
      list(APPEND archives ${AIRLOCK_STATIC_${archive}})
    endforeach()
    get_target_property(includes ${shared_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(includes)
      target_include_directories(airlock_dep_${name} SYSTEM INTERFACE ${includes})
    endif()
    target_link_libraries(airlock_dep_${name} INTERFACE ${archives} Threads::Threads ${CMAKE_DL_LIBS} m)
  else()
    target_link_libraries(airlock_dep_${name} INTERFACE ${shared_target})
  endif()
endfunction()
airlock_dependency(hs PkgConfig::HS hs)
airlock_dependency(re2 PkgConfig::RE2 re2)
airlock_dependency(idn2 PkgConfig::IDN2 idn2 unistring)
airlock_dependency(yaml yaml-cpp yaml-cpp)
airlock_dependency(ssl OpenSSL::SSL ssl crypto)  # TLS: the API server, the CLI client, JWKS URLs (libssl needs libcrypto after it)
airlock_dependency(crypto OpenSSL::Crypto crypto)
airlock_dependency(sqlite SQLite::SQLite3 sqlite3)
