# Warnings for our own targets; applied through airlock_target_defaults().
set(AIRLOCK_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
    -Wunused -Woverloaded-virtual -Wdouble-promotion -Wformat=2
    -Wimplicit-fallthrough -Wmisleading-indentation)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # GCC 12 at -O3 reports -Wrestrict on std::string concatenation (GCC bug 105329).
  list(APPEND AIRLOCK_WARNINGS -Wno-restrict)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # libseccomp's SCMP_A0() macros are C99 compound literals.
  list(APPEND AIRLOCK_WARNINGS -Wno-c99-extensions)
endif()
if(AIRLOCK_WERROR)
  list(APPEND AIRLOCK_WARNINGS -Werror)
endif()

if(AIRLOCK_FUZZ)
  # Coverage feedback from every library, not only the fuzz targets' own files.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
if(AIRLOCK_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC's -Wmaybe-uninitialized reports false positives under the sanitizers (in std::regex,
  # std::function). `make test` builds the sanitizer tree with Clang; this is for GCC users.
  list(APPEND AIRLOCK_WARNINGS -Wno-maybe-uninitialized)
endif()
if(AIRLOCK_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

function(airlock_target_defaults target)
  target_compile_options(${target} PRIVATE ${AIRLOCK_WARNINGS})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
endfunction()
