# Generates a C++ source holding the console's assets (index.html, console.css, console.js),
# served under /console/. -DASSETS_DIR, -DOUTPUT.
set(entries "")
set(bodies "")
set(i 0)
foreach(pair "index.html|text/html; charset=utf-8" "console.css|text/css; charset=utf-8"
             "console.js|text/javascript; charset=utf-8")
  string(REPLACE "|" ";" parts "${pair}")
  list(GET parts 0 name)
  list(GET parts 1 type)
  file(READ ${ASSETS_DIR}/${name} content)
  string(FIND "${content}" ")airlock_asset\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${name} contains the raw string's delimiter")
  endif()
  string(APPEND bodies "const char* const kAsset${i} = R\"airlock_asset(${content})airlock_asset\";\n")
  string(APPEND entries "    {\"${name}\", \"${type}\", kAsset${i}},\n")
  math(EXPR i "${i} + 1")
endforeach()
file(WRITE ${OUTPUT} "// Generated from src/server/console/assets. Do not edit.\n"
  "#include <string>\n#include \"server/console/console.hpp\"\n"
  "namespace airlock::server::console {\nnamespace {\n${bodies}"
  "const Asset kAssets[] = {\n${entries}};\n}  // namespace\n"
  "const Asset* find_asset(const std::string& name) {\n"
  "  for (const auto& a : kAssets)\n    if (name == a.path) return &a;\n  return nullptr;\n}\n"
  "}  // namespace airlock::server::console\n")
