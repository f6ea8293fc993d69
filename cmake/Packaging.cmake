# Install rules and the Debian package (docs/install.md). `cmake --build build --target deb`
# (or scripts/package) writes build/gpuwhy_<version>_amd64.deb; `cmake --install build` installs
# the same files under CMAKE_INSTALL_PREFIX.
include(GNUInstallDirs)
# Installing (and cpack, which installs) does not build everything first, tests included: the
# deb target depends on exactly what is packaged. `cmake --install` expects a finished build.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

# ---- man page and completions, made by the built binary (cmake/GenerateDocs.cmake)
set(GW_GENERATED ${PROJECT_BINARY_DIR}/packaging)
set(GW_GENERATED_FILES ${GW_GENERATED}/gpuwhy.1 ${GW_GENERATED}/gpuwhy.1.gz
    ${GW_GENERATED}/gpuwhy.bash ${GW_GENERATED}/_gpuwhy)
add_custom_command(OUTPUT ${GW_GENERATED_FILES}
  COMMAND ${CMAKE_COMMAND} -DGPUWHY=$<TARGET_FILE:gpuwhy> -DOUT=${GW_GENERATED}
          -P ${PROJECT_SOURCE_DIR}/cmake/GenerateDocs.cmake
  DEPENDS gpuwhy ${PROJECT_SOURCE_DIR}/cmake/GenerateDocs.cmake
  COMMENT "Generating the gpuwhy man page and shell completions" VERBATIM)
add_custom_target(gpuwhy_generated_docs ALL DEPENDS ${GW_GENERATED_FILES})

# ---- what is installed
install(TARGETS gpuwhy RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${GW_GENERATED}/gpuwhy.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${GW_GENERATED}/gpuwhy.bash RENAME gpuwhy
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${GW_GENERATED}/_gpuwhy DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
# The unit names /usr/bin/gpuwhy and /usr/libexec/gpuwhy/prune-traces: the package's paths. With
# another prefix, override ExecStart/ExecStartPre in a drop-in (docs/install.md).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/gpuwhy.service DESTINATION lib/systemd/system)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/packaging/prune-traces
        DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/gpuwhy)
file(GLOB GW_DOCS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE-APACHE
        ${PROJECT_SOURCE_DIR}/LICENSE-GPL ${PROJECT_SOURCE_DIR}/packaging/copyright ${GW_DOCS}
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# ---- the Debian package
set(GPUWHY_PACKAGE_MAINTAINER "gpuwhy developers <dev@gpuwhy.local>"
    CACHE STRING "Maintainer field of the .deb")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpuwhy)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "gpuwhy developers")
set(CPACK_PACKAGE_CONTACT ${GPUWHY_PACKAGE_MAINTAINER})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "why is my GPU job slow? eBPF tracing of GPU API calls, with root causes")
# The extended description (cpack puts the summary above it on the Description line).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "gpuwhy records every CUDA runtime, CUDA driver, NCCL and HIP call of the processes using a GPU
runtime, and what the kernel did to the calling threads (preemption, wake-ups, syscalls, I/O, CPU
samples), with CO-RE eBPF into one SQLite file; 'gpuwhy explain' names the root causes offline.
.
One static binary: it runs on any x86-64 Linux with glibc 2.28 or newer and needs no other
package. Includes a man page, bash and zsh completions, and gpuwhy.service (not enabled).
.
License: Apache-2.0; the BPF programs GPL-2.0 (see /usr/share/doc/gpuwhy/copyright).")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${GPUWHY_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "sqlite3")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # gpuwhy_<version>_amd64.deb
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# A static gpuwhy needs no package; a dynamic one (-DGPUWHY_STATIC=OFF, sanitizer builds) gets
# its libc and libstdc++ versions from dpkg-shlibdeps.
if(GW_GPUWHY_IS_STATIC)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)

add_custom_target(deb
  COMMAND cpack -G DEB -C $<CONFIG> --config ${PROJECT_BINARY_DIR}/CPackConfig.cmake
  DEPENDS gpuwhy gpuwhy_generated_docs
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
  COMMENT "Building ${PROJECT_BINARY_DIR}/gpuwhy_${PROJECT_VERSION}_amd64.deb" VERBATIM)
