# xgrammar's C++ core (grammars and JSON schemas to token masks), built as a
# static library of ours from the source scripts/xgrammar.sh fetches and
# unpacks (COHORT_XGRAMMAR_DIR; by default where that script puts it).
#
# Not its own CMakeLists: that one forces the Python bindings on (its
# cmake/config.cmake shadows the option) and builds with -flto=auto -Werror,
# whose slim-LTO archive costs every binary linked against it ~36 s of link
# time. Here: its cpp/*.cc without the Python binding layer (cpp/tvm_ffi),
# our flags, none of our warnings, and its headers as SYSTEM.
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(_cohort_cache_dir "$ENV{XDG_CACHE_HOME}")
else()
  set(_cohort_cache_dir "$ENV{HOME}/.cache")
endif()
set(COHORT_XGRAMMAR_DIR "${_cohort_cache_dir}/cohort/xgrammar-0.2.9-p1" CACHE PATH
    "xgrammar 0.2.9 source (the unpacked PyPI sdist, patched; scripts/xgrammar.sh fetches it)")
if(NOT EXISTS "${COHORT_XGRAMMAR_DIR}/include/xgrammar/xgrammar.h")
  message(FATAL_ERROR "xgrammar source not found: COHORT_XGRAMMAR_DIR = '${COHORT_XGRAMMAR_DIR}' "
                      "has no include/xgrammar/xgrammar.h. Run scripts/setup.sh (or scripts/xgrammar.sh, "
                      "which prints the folder) and configure with -DCOHORT_XGRAMMAR_DIR=<that folder>.")
endif()

# COHORT_XGRAMMAR_LIBRARY: a libcohort_xgrammar.a built already from the
# same source (`scripts/xgrammar.sh --library` builds it once into the cache,
# through cmake/xgrammar/), linked instead of compiling it again. setup.sh's
# build and scripts/test.sh's sanitizer build do so; in the latter
# xgrammar's own code runs uninstrumented, as third-party code may (ASan and
# UBSan check the instrumented code, ours, calling it).
set(COHORT_XGRAMMAR_LIBRARY "" CACHE FILEPATH "A built libcohort_xgrammar.a to link instead of compiling xgrammar")
if(COHORT_XGRAMMAR_LIBRARY)
  add_library(cohort_xgrammar STATIC IMPORTED)
  set_target_properties(cohort_xgrammar PROPERTIES IMPORTED_LOCATION ${COHORT_XGRAMMAR_LIBRARY})
  target_include_directories(cohort_xgrammar SYSTEM INTERFACE ${COHORT_XGRAMMAR_DIR}/include
                             ${COHORT_XGRAMMAR_DIR}/3rdparty/dlpack/include)
  target_compile_definitions(cohort_xgrammar INTERFACE XGRAMMAR_ENABLE_CPPTRACE=0
                             XGRAMMAR_ENABLE_INTERNAL_CHECK=0)
  target_link_libraries(cohort_xgrammar INTERFACE Threads::Threads)
  return()
endif()

file(GLOB_RECURSE _xgrammar_sources CONFIGURE_DEPENDS ${COHORT_XGRAMMAR_DIR}/cpp/*.cc)
list(FILTER _xgrammar_sources EXCLUDE REGEX "/cpp/tvm_ffi/")
add_library(cohort_xgrammar STATIC ${_xgrammar_sources})
target_include_directories(cohort_xgrammar SYSTEM PUBLIC ${COHORT_XGRAMMAR_DIR}/include
                           ${COHORT_XGRAMMAR_DIR}/3rdparty/dlpack/include)  # DLTensor is in its API
# picojson: xgrammar's own modified copy (ordered objects, int64), private
# to it so that no other picojson meets it.
target_include_directories(cohort_xgrammar SYSTEM PRIVATE ${COHORT_XGRAMMAR_DIR}/cpp
                           ${COHORT_XGRAMMAR_DIR}/3rdparty/picojson)
target_compile_definitions(cohort_xgrammar PUBLIC XGRAMMAR_ENABLE_CPPTRACE=0
                           XGRAMMAR_ENABLE_INTERNAL_CHECK=0)
target_compile_options(cohort_xgrammar PRIVATE -w)
# Its files share names in anonymous namespaces: one translation unit each.
set_target_properties(cohort_xgrammar PROPERTIES UNITY_BUILD OFF POSITION_INDEPENDENT_CODE ON)
target_link_libraries(cohort_xgrammar PUBLIC Threads::Threads)
