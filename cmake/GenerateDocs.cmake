# Script mode (cmake -P): writes the man page and the shell completions by running the built
# gpuwhy's hidden `generate` command (src/cli/generate_cmd.cpp), so they match its parser.
# In: GPUWHY (the binary), OUT (directory).
file(MAKE_DIRECTORY ${OUT})
foreach(pair "man;gpuwhy.1" "bash-completion;gpuwhy.bash" "zsh-completion;_gpuwhy")
  list(GET pair 0 what)
  list(GET pair 1 name)
  # A sanitizer build's leak report at exit would fail the build for a one-shot generator.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
                          ${GPUWHY} generate ${what}
                  OUTPUT_FILE ${OUT}/${name}.tmp RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "'${GPUWHY} generate ${what}' failed: ${rc}")
  endif()
  file(RENAME ${OUT}/${name}.tmp ${OUT}/${name})
endforeach()
# Debian installs man pages gzip'd with no name or time stamp in them (-n: reproducible).
execute_process(COMMAND gzip -9n -c ${OUT}/gpuwhy.1 OUTPUT_FILE ${OUT}/gpuwhy.1.gz RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip of ${OUT}/gpuwhy.1 failed: ${rc}")
endif()
