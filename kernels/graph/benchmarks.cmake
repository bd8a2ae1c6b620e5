# Training-step benchmark: one step of mlp, cnn and gpt in every mode, as
# ratios to native, with rounding-log sizes.
vt_bench(kernels_step_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/step_bench.cpp
  DEPS vt::kernels vt::common)
