# Turns every .sql file given into one C++ source exposing them by file name, so explain, query
# and the tests share the same tested SQL text. Run as a script: cmake -DOUT=.. -DFILES=a;b -P
set(body "// Generated from sql/*.sql by cmake/EmbedSql.cmake. Do not edit.\n#include \"store/embedded_sql.hpp\"\nnamespace gpuwhy {\nstd::span<const EmbeddedSql> embedded_sql() {\n  static const EmbeddedSql k[] = {\n")
foreach(f ${FILES})
  get_filename_component(name ${f} NAME)
  file(READ ${f} text)
  string(APPEND body "    {\"${name}\", R\"gwsql(${text})gwsql\"},\n")
endforeach()
string(APPEND body "  };\n  return k;\n}\n}  // namespace gpuwhy\n")
file(WRITE ${OUT}.tmp "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
