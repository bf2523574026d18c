# Third-party libraries. The binary built here must run on a machine that has
# only cudart, cuBLAS, NCCL, libstdc++ and PCRE2, so header-only or static
# linking is used for everything else.
find_package(Threads REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3 CONFIG REQUIRED)

# fmt: header-only (Debian ships only a shared library).
add_library(cohort_fmt INTERFACE)
target_compile_definitions(cohort_fmt INTERFACE FMT_HEADER_ONLY=1)

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
