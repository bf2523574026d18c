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
