# Turns the documents given into one C++ source exposing them by file name (the MCP server serves
# docs/schema.md as a resource: the trace is read offline, where the repository is not).
# Run as a script: cmake -DOUT=.. -DFILES=a;b -P
set(body "// Generated from docs/*.md by cmake/EmbedDocs.cmake. Do not edit.\n#include \"mcp/embedded_docs.hpp\"\nnamespace gpuwhy::mcp {\nstd::span<const EmbeddedDoc> embedded_docs() {\n  static const EmbeddedDoc k[] = {\n")
foreach(f ${FILES})
  get_filename_component(name ${f} NAME)
  file(READ ${f} text)
  string(FIND "${text}" ")gwdoc\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${f} contains the raw-string delimiter )gwdoc\"")
  endif()
  string(APPEND body "    {\"${name}\", R\"gwdoc(${text})gwdoc\"},\n")
endforeach()
string(APPEND body "  };\n  return k;\n}\n}  // namespace gpuwhy::mcp\n")
file(WRITE ${OUT}.tmp "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
