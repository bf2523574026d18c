# Third-party libraries. The binary built here must run on a machine that has
# only cudart, cuBLAS, NCCL, libstdc++ and PCRE2, so header-only or static
# linking is used for everything else.
find_package(Threads REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3 CONFIG REQUIRED)

# fmt: header-only in the release build, whose binary travels to machines that
# may lack Debian's libfmt. The sanitizer and fuzzer builds (COHORT_FMT_LIBRARY,
# on by default there) link Debian's shared libfmt instead: header-only, every
# file that formats compiles fmt's implementation again, which under
# ASan+UBSan was most of the sanitizer build's time.
if(COHORT_SANITIZE OR COHORT_FUZZ)
  set(_cohort_fmt_library_default ON)
else()
  set(_cohort_fmt_library_default OFF)
endif()
option(COHORT_FMT_LIBRARY "Link the system's compiled fmt instead of using it header-only"
       ${_cohort_fmt_library_default})
add_library(cohort_fmt INTERFACE)
if(COHORT_FMT_LIBRARY)
  find_package(fmt CONFIG REQUIRED)
  target_link_libraries(cohort_fmt INTERFACE fmt::fmt)
else()
  target_compile_definitions(cohort_fmt INTERFACE FMT_HEADER_ONLY=1)
endif()

if(COHORT_TESTS)
  find_package(GTest REQUIRED)
endif()

# PCRE2 (8-bit, JIT) for the tokenizer's pre-tokenizer regexes, linked
# statically so the binary does not depend on the library's soname.
find_path(PCRE2_INCLUDE_DIR pcre2.h REQUIRED)
find_library(PCRE2_8_STATIC_LIBRARY NAMES libpcre2-8.a pcre2-8 REQUIRED)
add_library(cohort_pcre2 INTERFACE)
target_include_directories(cohort_pcre2 SYSTEM INTERFACE ${PCRE2_INCLUDE_DIR})
target_compile_definitions(cohort_pcre2 INTERFACE PCRE2_STATIC)
target_link_libraries(cohort_pcre2 INTERFACE ${PCRE2_8_STATIC_LIBRARY})

# OpenSSL for the server's TLS (--ssl-cert-file), linked as a shared library:
# libssl3 is on the deployment machines (Debian's libssl-dev here).
find_package(OpenSSL REQUIRED)

# xgrammar (structured output), built from source: cmake/xgrammar.cmake.
include(${CMAKE_CURRENT_LIST_DIR}/xgrammar.cmake)
