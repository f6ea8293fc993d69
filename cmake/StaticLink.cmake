# The gpuwhy binary is linked fully statically (glibc, libstdc++ and libgcc included) so that one
# build runs on any x86-64 Linux host whatever its glibc (issue 19): a dynamic build made on
# Debian 12 needs glibc 2.34 and GCC 12's libstdc++, which e.g. RHEL 8 (glibc 2.28) lacks.
#
# Why fully static is sound here (docs/install.md, "Portability"): gpuwhy calls nothing of glibc
# that loads host modules at run time. It does not dlopen (it finds the host libc's dlopen by
# reading the ELF file, never by calling it), uses no iconv or locales, resolves no host names,
# and reads the sudo user's home directory from /etc/passwd itself rather than through NSS
# (src/discover/libraries.cpp). The link must stay free of glibc's "Using 'X' in statically
# linked applications requires at runtime the shared libraries..." warnings: each one names an
# NSS/dlopen call that would quietly depend on the host's glibc version again.
#
# static-pie keeps address-space randomisation (a tool that runs as root and parses other
# processes' memory should keep it); plain -static is the fallback for toolchains without it.
# Sanitizer and fuzz builds stay dynamic (ASan cannot be linked statically).
include(CheckCXXSourceCompiles)

option(GPUWHY_STATIC "Link the gpuwhy binary fully statically (static-pie)" ON)

function(gpuwhy_static_link target)
  set(GW_GPUWHY_IS_STATIC FALSE PARENT_SCOPE)  # read by cmake/Packaging.cmake
  if(NOT GPUWHY_STATIC OR GPUWHY_SANITIZE OR GPUWHY_FUZZ)
    return()
  endif()
  set(GW_GPUWHY_IS_STATIC TRUE PARENT_SCOPE)
  set(CMAKE_REQUIRED_LINK_OPTIONS -static-pie)
  check_cxx_source_compiles("#include <string>\nint main() { return std::string(\"x\").size() - 1; }"
                            GW_HAS_STATIC_PIE)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(GW_HAS_STATIC_PIE)
    target_link_options(${target} PRIVATE -static-pie)
  else()
    target_link_options(${target} PRIVATE -static)
  endif()
endfunction()
