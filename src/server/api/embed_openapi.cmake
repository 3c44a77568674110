# Generates a C++ source holding openapi.json, served at /openapi.json.
file(READ ${INPUT} content)
file(WRITE ${OUTPUT} "// Generated from openapi.json. Do not edit.\n"
  "namespace airlock::server {\n"
  "extern const char* const kOpenApiDocument;\n"
  "const char* const kOpenApiDocument = R\"airlock_openapi(${content})airlock_openapi\";\n"
  "}\n")
