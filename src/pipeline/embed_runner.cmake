# Generates a C++ source holding airlock_runner.py, so the daemon carries its runner.
file(READ ${INPUT} content)
file(WRITE ${OUTPUT} "// Generated from airlock_runner.py. Do not edit.\n"
  "namespace airlock::pipeline {\n"
  "extern const char* const kEmbeddedRunner;\n"
  "const char* const kEmbeddedRunner = R\"airlock_runner(${content})airlock_runner\";\n"
  "}\n")
