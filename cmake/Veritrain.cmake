# Helpers that give every target of ours the same flags and registration.

set(VT_ROOT ${CMAKE_SOURCE_DIR})

# Warnings are errors for our own code only (not for third-party headers).
function(vt_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wcast-align -Wunused -Woverloaded-virtual -Wimplicit-fallthrough -Werror>)
endfunction()

# vt_library(<name> SOURCES ... [DEPS ...] [PUBLIC_DEPS ...])
# One static library per top-level folder; headers are included as
# "folder/header.h" from the repository root.
function(vt_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(vt_${name} STATIC ${ARG_SOURCES})
  add_library(vt::${name} ALIAS vt_${name})
  target_include_directories(vt_${name} PUBLIC ${VT_ROOT})
  target_link_libraries(vt_${name} PRIVATE ${ARG_DEPS} PUBLIC ${ARG_PUBLIC_DEPS})
  vt_warnings(vt_${name})
endfunction()

# vt_test(<name> SOURCES ... [DEPS ...] [LABELS ...] [ARGS ...])
# A GoogleTest binary registered with CTest under the given labels.
function(vt_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS;ARGS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_include_directories(${name} PRIVATE ${VT_ROOT})
  vt_warnings(${name})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  add_test(NAME ${name} COMMAND ${name} ${ARG_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()

# vt_bench(<name> SOURCES ... [DEPS ...])
# A Google Benchmark binary. It is also registered with CTest (label `bench`)
# in a quick mode so that it cannot rot; `./vt bench` runs it for real.
function(vt_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;ARGS" ${ARGN})
  if(NOT VERITRAIN_BENCH)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
  target_include_directories(${name} PRIVATE ${VT_ROOT})
  vt_warnings(${name})
  if(VERITRAIN_TESTS)
    add_test(NAME ${name} COMMAND ${name} --quick ${ARG_ARGS})
    set_tests_properties(${name} PROPERTIES LABELS bench TIMEOUT 900)
  endif()
endfunction()

# vt_fuzz(<name> SOURCES ... [DEPS ...] CORPUS <dir>)
# With VERITRAIN_FUZZ (clang) a libFuzzer binary; otherwise a plain driver
# that replays the checked-in corpus under CTest (label `fuzz`).
function(vt_fuzz name)
  cmake_parse_arguments(ARG "" "CORPUS" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  target_include_directories(${name} PRIVATE ${VT_ROOT})
  vt_warnings(${name})
  if(VERITRAIN_FUZZ)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  else()
    target_sources(${name} PRIVATE ${VT_ROOT}/tests/fuzz/replay_main.cpp)
  endif()
  if(VERITRAIN_TESTS)
    set(replay_args)
    if(VERITRAIN_FUZZ)
      set(replay_args -runs=0)  # libFuzzer: replay the corpus once; never fuzz into the checked-in dir
    endif()
    add_test(NAME ${name}_corpus COMMAND ${name} ${replay_args} ${ARG_CORPUS})
    set_tests_properties(${name}_corpus PROPERTIES LABELS fuzz TIMEOUT 300)
  endif()
endfunction()
