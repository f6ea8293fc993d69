# Script mode (cmake -P), run by the test suite (ctest: unity_sources): checks that each of the
# folders the demo compiles as one file (GPUWHY_UNITY, scripts/demo) still compiles that way.
# Two files' helpers of the same name in anonymous namespaces are fine one file at a time, as the
# test build compiles them, and break only the demo's build; this finds them (syntax only: a few
# seconds a folder). In: CXX (the compiler), SRC (source dir), BIN (build dir, for the BPF
# skeleton), MODULES (comma-separated folders of src/), OUT (a scratch directory).
string(REPLACE "," ";" modules "${MODULES}")
file(MAKE_DIRECTORY ${OUT})
foreach(m ${modules})
  file(GLOB srcs ${SRC}/src/${m}/*.cpp)
  list(SORT srcs)  # the order CMake's unity source includes them in
  set(body "")
  foreach(s ${srcs})
    string(APPEND body "#include \"${s}\"\n")
  endforeach()
  file(WRITE ${OUT}/${m}_unity.cpp "${body}")
endforeach()
# Two compilers at a time: execute_process runs its commands side by side (as a pipeline; these
# read no input and write no output).
set(failed)
set(pending ${modules})
while(pending)
  list(POP_FRONT pending a)
  set(pair ${a})
  if(pending)
    list(POP_FRONT pending b)
    list(APPEND pair ${b})
  endif()
  set(cmds)
  foreach(m ${pair})
    list(APPEND cmds COMMAND ${CXX} -std=gnu++20 -fsyntax-only -DSPDLOG_COMPILED_LIB
         -DGPUWHY_VERSION="0" -I${SRC}/src -I${SRC}/include -I${BIN}/bpf ${OUT}/${m}_unity.cpp)
  endforeach()
  execute_process(${cmds} RESULTS_VARIABLE rcs ERROR_VARIABLE err)
  foreach(m rc IN ZIP_LISTS pair rcs)
    if(NOT rc EQUAL 0)
      list(APPEND failed ${m})
    endif()
  endforeach()
  if(err)
    message("${err}")
  endif()
endwhile()
if(failed)
  message(FATAL_ERROR "src/{${failed}} no longer compile as one file each (the demo's unity "
                      "build): rename the clashing file-local names (docs/performance.md, "
                      "\"Build time\")")
endif()
message("src/{${MODULES}} each compile as one file")
