# Referee benchmark: dispute size (moves, blocks, bytes) against N and k, and
# the arbitration precompile's cost against one training step. It plays whole
# disputes with the scenario harness of tests/referee, so it is built with the
# tests.
if(VERITRAIN_TESTS)
  vt_bench(referee_bench
    SOURCES
      ${CMAKE_CURRENT_LIST_DIR}/referee_bench.cpp
      ${VT_ROOT}/tests/referee/long_walks_table.cpp
      ${VT_ROOT}/tests/referee/descent_table.cpp
      ${VT_ROOT}/tests/referee/history.cpp
      ${VT_ROOT}/tests/referee/scenario.cpp
      ${VT_ROOT}/tests/referee/element_agent.cpp
      ${VT_ROOT}/tests/referee/arbitration_workload.cpp
    DEPS vt::node vt::referee vt::verify vt::worker vt::contract_vm vt::kernels vt::protocol vt::crypto vt::common GTest::gtest)
endif()
