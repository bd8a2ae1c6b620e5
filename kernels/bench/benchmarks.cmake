# Benchmarks of the kernels core (included from kernels/CMakeLists.txt).
vt_bench(matmul_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/matmul_bench.cpp
  DEPS vt::kernels vt::common PkgConfig::OPENBLAS)
