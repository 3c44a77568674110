# Generates a C++ source holding the JSON Schema draft-07 meta-schema (Debian's
# python3-jsonschema ships it), against which tool schemas are checked at load.
file(READ ${INPUT} content)
file(WRITE ${OUTPUT} "// Generated from ${INPUT}. Do not edit.\n"
  "namespace airlock::policy {\n"
  "extern const char* const kDraft7MetaSchema;\n"
  "const char* const kDraft7MetaSchema = R\"airlock_meta(${content})airlock_meta\";\n"
  "}\n")
