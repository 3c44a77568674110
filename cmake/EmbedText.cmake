# Generates a C++ source holding a text file as a string, so a binary carries it (the tool
# runner, the sessions' code interpreter): cmake -DINPUT=... -DOUTPUT=... -DNAMESPACE=...
# -DSYMBOL=... -P EmbedText.cmake. The file must not contain the delimiter `)embedded"`.
file(READ ${INPUT} content)
get_filename_component(name ${INPUT} NAME)
file(WRITE ${OUTPUT} "// Generated from ${name}. Do not edit.\n"
  "namespace ${NAMESPACE} {\n"
  "extern const char* const ${SYMBOL};\n"
  "const char* const ${SYMBOL} = R\"embedded(${content})embedded\";\n"
  "}\n")
