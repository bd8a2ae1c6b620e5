# Operator benchmark: every operator in every mode, as ratios to native.
vt_bench(kernels_ops_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ops_bench.cpp
  DEPS vt::kernels vt::common)
