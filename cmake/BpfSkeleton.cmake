# One function builds BPF: clang -target bpf per source -> bpftool gen object (link) ->
# bpftool gen skeleton -> an INTERFACE target exposing the generated header.
find_program(BPF_CLANG NAMES clang-14 clang REQUIRED)
find_program(BPFTOOL NAMES bpftool REQUIRED)

function(gpuwhy_bpf_skeleton target)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPENDS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/bpf)
  file(MAKE_DIRECTORY ${out_dir})
  set(objs)
  foreach(src ${ARG_SOURCES})
    get_filename_component(stem ${src} NAME_WE)
    set(obj ${out_dir}/${stem}.bpf.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86 -mcpu=v3
              -Wall -Wno-unused-function -Wno-compare-distinct-pointer-types
              -I${PROJECT_SOURCE_DIR}/bpf -I${PROJECT_SOURCE_DIR}/bpf/vmlinux/x86_64
              -I${PROJECT_SOURCE_DIR}/include
              -c ${src} -o ${obj}
      DEPENDS ${src} ${ARG_DEPENDS}
      COMMENT "BPF ${stem}"
      VERBATIM)
    list(APPEND objs ${obj})
  endforeach()
  set(linked ${out_dir}/${ARG_NAME}.bpf.o)
  set(skel ${out_dir}/${ARG_NAME}.skel.h)
  add_custom_command(
    OUTPUT ${linked} ${skel}
    COMMAND ${BPFTOOL} gen object ${linked} ${objs}
    COMMAND ${BPFTOOL} gen skeleton ${linked} name ${ARG_NAME} > ${skel}
    DEPENDS ${objs}
    COMMENT "BPF link + skeleton ${ARG_NAME}"
    VERBATIM)
  add_custom_target(${target}_gen DEPENDS ${skel})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_gen)
  target_include_directories(${target} INTERFACE ${out_dir})
endfunction()
